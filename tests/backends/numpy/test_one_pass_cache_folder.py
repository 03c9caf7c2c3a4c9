"""one_pass.py's cache folder: numba unpickles the index and data files of the __pycache__
beside a kernel's file, so a folder that another user could write into (theirs, writable
by group or others, a symlink, or made in such a folder) is never used: the kernel is
compiled uncached, and report() says why. Skipped where runtime_fast is not working."""

import os
import pickle

import numpy as np
import pytest

from staticgrad.backends.numpy import fast as runtime_fast
from staticgrad.backends.numpy import one_pass

pytestmark = pytest.mark.skipif(not runtime_fast.available(),
                                reason=f"runtime_fast unavailable: {runtime_fast.why_not()}")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a folder away")
NOBODY = 65534


def _source(tag: str) -> str:
    return (f"def k(lo, hi, x, out):\n"
            f"    # {tag}\n"
            f"    ok = True\n"
            f"    for j in range(lo, hi):\n"
            f"        out[j] = x[j] * np.float32(3.0)\n"
            f"    return (ok, )\n")


class _Planted:
    """What an attacker's pickle does when it is loaded: leave a marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def _compile(source, monkeypatch):
    monkeypatch.setitem(one_pass._report, "uncached", None)
    kernel = one_pass.compiled(source, "k", ("array", "out"))
    x = np.arange(10, dtype=np.float32)
    out = np.empty_like(x)
    assert kernel(0, 10, x, out) == (True,)
    np.testing.assert_array_equal(out, x * 3)
    return one_pass.report()["uncached"]


def test_a_planted_numba_index_in_a_folder_others_can_write_is_never_loaded(tmp_path,
                                                                         monkeypatch):
    monkeypatch.setenv("STATICGRAD_CACHE_DIR", str(tmp_path))
    source = _source(f"planted {tmp_path}")
    assert _compile(source, monkeypatch) is None
    folder = tmp_path / "one_pass"
    indexes = list((folder / "__pycache__").glob("*.nbi"))
    assert indexes
    folder.chmod(0o777)  # (say, made so by someone, or by a umask of 0)
    marker = tmp_path / "ran"
    for index in indexes:
        index.write_bytes(pickle.dumps(_Planted(marker)))
    one_pass._compiled.clear()  # as a new process would find it
    why = _compile(source, monkeypatch)
    assert not marker.exists()
    assert "writable by others" in why and str(folder) in why


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o722], ids=oct)
def test_a_cache_folder_writable_by_group_or_others_is_not_used(tmp_path, monkeypatch, mode):
    folder = tmp_path / "one_pass"
    folder.mkdir()
    folder.chmod(mode)
    monkeypatch.setenv("STATICGRAD_CACHE_DIR", str(tmp_path))
    why = _compile(_source(f"mode {mode} {tmp_path}"), monkeypatch)
    assert "writable by others" in why
    assert not list(folder.glob("k*.py"))


def test_a_cache_dir_writable_by_others_is_not_used(tmp_path, monkeypatch):
    base = tmp_path / "cache"
    base.mkdir()
    base.chmod(0o777)  # anyone could rename one_pass away and put their own in its place
    monkeypatch.setenv("STATICGRAD_CACHE_DIR", str(base))
    why = _compile(_source(f"base {tmp_path}"), monkeypatch)
    assert "writable by others" in why and str(base) in why


def test_a_symlinked_cache_folder_is_not_used(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "cache").mkdir(mode=0o700)
    (tmp_path / "cache" / "one_pass").symlink_to(elsewhere)
    monkeypatch.setenv("STATICGRAD_CACHE_DIR", str(tmp_path / "cache"))
    why = _compile(_source(f"symlink {tmp_path}"), monkeypatch)
    assert "symlink" in why
    assert not list(elsewhere.iterdir())


def test_a_symlinked_cache_dir_is_not_used(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(elsewhere)
    monkeypatch.setenv("STATICGRAD_CACHE_DIR", str(tmp_path / "link"))
    why = _compile(_source(f"symlinked base {tmp_path}"), monkeypatch)
    assert "symlink" in why


@needs_root
@pytest.mark.parametrize("owned, base, mode", [
    ("one_pass", ".", 0o700),   # the kernels' folder in STATICGRAD_CACHE_DIR
    ("cache", "cache", 0o755),  # STATICGRAD_CACHE_DIR itself
], ids=["the kernels' folder", "the cache dir"])
def test_a_cache_folder_of_another_user_is_not_used(tmp_path, monkeypatch, owned, base, mode):
    folder = tmp_path / owned
    folder.mkdir(mode=mode)
    os.chown(folder, NOBODY, NOBODY)
    monkeypatch.setenv("STATICGRAD_CACHE_DIR", str(tmp_path / base))
    why = _compile(_source(f"owner {owned} {tmp_path}"), monkeypatch)
    assert "owned by user" in why and str(folder) in why


@needs_root
def test_a_numba_file_of_another_user_in_the_cache_is_not_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("STATICGRAD_CACHE_DIR", str(tmp_path))
    source = _source(f"foreign index {tmp_path}")
    assert _compile(source, monkeypatch) is None
    for f in (tmp_path / "one_pass" / "__pycache__").iterdir():
        os.chown(f, NOBODY, NOBODY)
    one_pass._compiled.clear()
    assert "not a file of this user's alone" in _compile(source, monkeypatch)


def test_folders_made_for_the_cache_are_the_owners_alone_whatever_the_umask(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv("STATICGRAD_CACHE_DIR", str(tmp_path / "a" / "b"))
    old = os.umask(0)
    try:
        assert _compile(_source(f"umask {tmp_path}"), monkeypatch) is None
    finally:
        os.umask(old)
    for folder in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "one_pass"):
        assert folder.stat().st_mode & 0o777 == 0o700, folder


def test_folders_made_in_a_folder_others_can_write_are_not_used(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # not sticky: anyone could replace what is made here
    monkeypatch.setenv("STATICGRAD_CACHE_DIR", str(shared / "mine"))
    why = _compile(_source(f"made in {tmp_path}"), monkeypatch)
    assert "where the cache folder was made" in why


def test_folders_made_in_a_sticky_folder_like_tmp_are_used(tmp_path, monkeypatch):
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setenv("STATICGRAD_CACHE_DIR", str(shared / "mine"))
    assert _compile(_source(f"sticky {tmp_path}"), monkeypatch) is None


def test_a_numba_cache_kept_elsewhere_is_not_used(tmp_path, monkeypatch):
    """$NUMBA_CACHE_DIR (numba.config.CACHE_DIR) would have numba keep and load the cache
    in a folder no one checked: the kernel is compiled uncached."""
    from numba.core import config

    elsewhere = tmp_path / "numba_cache"
    monkeypatch.setattr(config, "CACHE_DIR", str(elsewhere))
    monkeypatch.setenv("STATICGRAD_CACHE_DIR", str(tmp_path / "cache"))
    why = _compile(_source(f"numba cache dir {tmp_path}"), monkeypatch)
    assert "numba would keep its cache in" in why and str(elsewhere) in why
    assert not list(elsewhere.rglob("*.nb*"))  # (numba makes the folder when it picks it)


def test_a_kernel_takes_only_its_signature_cached_or_not(tmp_path, monkeypatch):
    monkeypatch.setenv("STATICGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setitem(one_pass._report, "uncached", None)
    kernel = one_pass.compiled(_source(f"signature {tmp_path}"), "k", ("array", "out"))
    assert one_pass.report()["uncached"] is None
    x = np.arange(20, dtype=np.float32)
    with pytest.raises(TypeError):  # a strided array: GroupKernel hands the block to NumPy
        kernel(0, 10, x[::2], np.empty(10, np.float32))


def test_where_owners_cannot_be_checked_the_kernel_is_compiled_uncached(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "geteuid")
    monkeypatch.setenv("STATICGRAD_CACHE_DIR", str(tmp_path))
    assert "cannot be checked" in _compile(_source(f"no geteuid {tmp_path}"), monkeypatch)
