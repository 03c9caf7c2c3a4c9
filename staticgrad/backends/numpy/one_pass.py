"""The one-pass kernels of float32 fused groups (one_pass_render.py writes them), compiled by
numba and cached on disk; `nb` in the generated module.

    @nb.kernel(fused, "array", "out")   # fused: the group's NumPy block kernel
    def fused_one_pass(lo, hi, x_1, out_y):
        ...                            # returns (ok, its part of each sum)

`kernel(fallback, *takes)` makes the function a `GroupKernel`: compiled once a process
(under a lock of its own, so concurrent first compiles compile once; a session compiles its
plans under its compile lock), and called by blocks.run_blocks like the NumPy kernel it
stands in for. A block is the numba kernel's only where NumPy would report nothing: under an
np.errstate that ignores underflow (which the kernel cannot see), and where the kernel says
so (`ok`: every result finite, every vector argument in runtime_fast's domain). Otherwise the
NumPy kernel computes the block again: it reads only the group's inputs, which the kernel
never writes, and writes every output of the block in full. An argument numba's signature
does not take (a strided or unaligned array) sends the block to NumPy too.

The cache: numba's `cache=True` needs the function in a file. The kernel's source, with two
import lines before it, is written (atomically) to `kernel_dir()`, named by its SHA-256, and
numba keeps its machine code beside it (__pycache__): a later process compiles nothing
(`report()` counts). What runs is always the text this process rendered: a file found there
is compared with it byte for byte, rewritten where it differs (corrupt, foreign, half
written), and the rendered text itself is what is compiled, under the file's name. numba's
files of a kernel that it cannot read (corrupt) are removed, and it is compiled and cached
again. Where no file can be written (or numba cannot cache there), the kernel is compiled
uncached, each process again, and `report()["uncached"]` says why.

The folder: $STATICGRAD_CACHE_DIR/one_pass, else $XDG_CACHE_HOME/staticgrad/one_pass, else
~/.cache/staticgrad/one_pass (made readable by its owner only). numba unpickles what it finds
in __pycache__ there, so a folder someone else could write into is not used (`_unsafe`: one
another user owns, or writable by group or others, or a symlink): the kernel is compiled
uncached, and `report()["uncached"]` says which folder and why; so is it where numba would
keep the cache anywhere else ($NUMBA_CACHE_DIR, or its own folder where __pycache__ is not
writable).
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import os
import stat
import sys
import tempfile
import threading
import types

import numpy as np

# the file a kernel's source is written into: these lines, then the kernel
HEADER = ("# A fused group's one-pass kernel, written by staticgrad (backends/numpy/one_pass.py)"
          "\nimport numpy as np\n\nfrom staticgrad.backends.numpy import _vector_kernels as vk"
          "\n\n\n")
_OPTIONS = dict(nogil=True, error_model="numpy", boundscheck=False)

_compiled: dict = {}        # (sha256, takes) -> numba's dispatcher
_compiling: dict = {}       # sha256 -> its lock
_guard = threading.Lock()   # over _compiling
_report = {"compiled": 0, "loaded": 0, "uncached": None, "numpy_blocks": 0, "failed": None}


def kernel(fallback, *takes):
    """The decorator of a one-pass kernel: `takes` says what each argument after lo and hi
    is ("array": a block's input, "number": one float32, "out": an output)."""
    def make(fn):
        return GroupKernel(fn, fallback, takes)
    return make


def report() -> dict:
    """This process's one-pass kernels: how many numba "compiled" and how many it "loaded"
    from its cache, why they are "uncached" (None while every one could be cached), how many
    blocks their NumPy kernels computed instead ("numpy_blocks"), and the last that "failed"
    to compile (its NumPy kernel computes every block; None while none did)."""
    return dict(_report)


def kernel_dir() -> str:
    """Where the kernels' files are written (see the module's docstring)."""
    base = os.environ.get("STATICGRAD_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "staticgrad")
    return os.path.join(base, "one_pass")


class GroupKernel:
    """A fused group's block kernel: the numba kernel where it may, else `fallback`."""

    def __init__(self, fn, fallback, takes: tuple):
        self.__name__ = fn.__name__
        self.fallback, self.size = fallback, len(takes)
        self.numbers = [i for i, kind in enumerate(takes) if kind == "number"]
        try:
            self.compiled = compiled(_source(fn), fn.__name__, takes)
        except Exception as e:  # noqa: BLE001 -- staticgrad's bug: the NumPy kernel still works
            self.compiled = None
            _report["failed"] = f"{fn.__name__}: {type(e).__name__}: {e}"
            logging.getLogger("staticgrad").warning(
                "staticgrad: a one-pass kernel failed to compile; its NumPy kernel runs "
                "instead (%s)", _report["failed"])

    def __call__(self, lo, hi, *args):
        if self.compiled is not None and np.geterr()["under"] == "ignore":
            # (the kernel cannot see an underflow)
            own = list(args[:self.size])
            for i in self.numbers:  # (a 0-d array or a NumPy scalar: one float32)
                own[i] = np.float32(own[i])
            try:
                ok, *sums = self.compiled(lo, hi, *own)
            except TypeError:  # an array its signature does not take: NumPy's
                pass
            else:
                if ok:
                    return tuple(sums)
        _report["numpy_blocks"] += 1
        return self.fallback(lo, hi, *args)


def _source(fn) -> str:
    """The kernel's text as the generated module has it (from linecache, where the backend
    put the module's source), without its decorator."""
    lines = inspect.getsource(fn).splitlines(keepends=True)
    while lines[0].startswith("@"):
        del lines[0]
    return "".join(lines)


def compiled(source: str, name: str, takes: tuple):
    """numba's dispatcher of the function `name` that `source` defines, for arguments of the
    kinds `takes`: compiled once a process, loaded from the disk cache where it is there."""
    text = HEADER + source
    digest = hashlib.sha256(text.encode()).hexdigest()
    with _guard:
        lock = _compiling.setdefault(digest, threading.Lock())
    with lock:
        if (digest, takes) not in _compiled:
            _compiled[digest, takes] = _compile(text, digest, name, takes)
    return _compiled[digest, takes]


def _compile(text: str, digest: str, name: str, takes: tuple):
    from numba import njit
    from numba.core import types as nt

    f32 = nt.float32
    array, out = nt.Array(f32, 1, "C", readonly=True), nt.Array(f32, 1, "C")
    signature = (nt.intp, nt.intp,
                 *({"array": array, "number": f32, "out": out}[kind] for kind in takes))
    path, why = _written(text, digest)
    for attempt in (1, 2) if path is not None else ():
        try:
            # (made without its signature, it compiles and loads nothing yet)
            dispatcher = njit(cache=True, **_OPTIONS)(_defined(text, path, digest, name))
            where = getattr(getattr(dispatcher, "_cache", None), "cache_path", None)
            if where != os.path.join(os.path.dirname(path), "__pycache__"):
                # ($NUMBA_CACHE_DIR, or numba's own folder where __pycache__ is not
                # writable: a folder _unsafe has not checked)
                why = f"numba would keep its cache in {where}, not beside {path}"
                break
            dispatcher.compile(signature)
            dispatcher.disable_compile()  # (as njit(signature) does: no other types)
        except (RuntimeError, OSError) as e:  # nowhere to keep its cache, or a full disk
            why = f"numba cannot cache there: {type(e).__name__}: {e}"
            break
        except Exception:
            if attempt == 2:
                raise  # not its cache's doing: the kernel does not compile
            _forget(path)  # a corrupt cache (numba unpickles it unchecked): made again
        else:
            hits = sum(dispatcher.stats.cache_hits.values())
            _report["loaded" if hits else "compiled"] += 1
            return dispatcher
    _report["uncached"] = why
    _report["compiled"] += 1
    return njit(signature, **_OPTIONS)(_defined(text, f"<one-pass kernel {digest}>", digest, name))


def _forget(path: str) -> None:
    """Remove numba's cache files of the kernel in `path` (its index and machine code)."""
    cache = os.path.join(os.path.dirname(path), "__pycache__")
    stem = os.path.basename(path)[:-len(".py")] + "."
    try:
        for name in os.listdir(cache):
            if name.startswith(stem):
                os.unlink(os.path.join(cache, name))
    except OSError:
        pass  # compiled again below all the same; numba rewrites what it can


def _defined(text: str, filename: str, digest: str, name: str):
    """The function `name` of `text`, compiled as Python under `filename` (the name numba's
    cache goes by): the text this process rendered, never a file's content. Its module is
    registered (sys.modules), as numba's cache imports it to load the kernel."""
    module = types.ModuleType(f"staticgrad._one_pass_kernels.k{digest}")
    module.__file__ = filename
    exec(compile(text, filename, "exec"), module.__dict__)  # noqa: S102
    sys.modules[module.__name__] = module
    return getattr(module, name)


def _written(text: str, digest: str) -> tuple[str | None, str | None]:
    """(the path of the file holding `text`, None), writing it unless it holds it already;
    (None, why) where it cannot be written, or where the folder is not safe to load numba's
    cache from (`_unsafe`)."""
    folder = kernel_dir()
    path = os.path.join(folder, f"k{digest}.py")
    data = text.encode()
    try:
        created_in = _made(folder)
    except OSError as e:
        return None, f"cannot write {path}: {e}"
    why = _unsafe(folder, created_in, digest)
    if why is not None:
        return None, why
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return path, None
    except OSError:
        pass  # not there yet (or not readable): written below
    try:
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".k", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as e:
        return None, f"cannot write {path}: {e}"
    return path, None


def _made(folder: str) -> str | None:
    """Make `folder` and its missing parents, each readable by its owner only (os.makedirs
    gives a parent the umask's mode); the folder the first of them was made in, or None
    where `folder` was there."""
    missing = []
    while not os.path.lexists(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for made in reversed(missing):
        try:
            os.mkdir(made, 0o700)
        except FileExistsError:
            pass  # made by another process meanwhile: checked as any existing folder is
    return os.path.dirname(missing[-1]) if missing else None


def _unsafe(folder: str, created_in: str | None, digest: str) -> str | None:
    """Why numba's cache must not be used in `folder`, or None. numba unpickles the index
    and data files of its __pycache__: whoever can write there, or replace a folder above
    it, can make this process run their code. So the folder, the one above it (staticgrad's,
    or $STATICGRAD_CACHE_DIR) and its __pycache__ must each be a folder (not a symlink)
    owned by this user and writable by no one else, with the kernel's files there this
    user's too; a folder the missing ones were made in, this user's or root's, and writable
    by others only where it is sticky (/tmp)."""
    if not hasattr(os, "geteuid"):  # (Windows: no POSIX owner and mode to check)
        return "the cache folder's owner cannot be checked on this platform: not used"
    me = os.geteuid()
    cache = os.path.join(folder, "__pycache__")
    for path in (os.path.dirname(folder), folder, cache):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            if path == cache:
                continue  # numba makes it, in a folder checked above
            return f"cannot check {path}: not there"
        except OSError as e:
            return f"cannot check {path}: {e}"
        if not stat.S_ISDIR(st.st_mode):
            return f"{path} is not a folder (a symlink or a file): not used"
        if st.st_uid != me:
            return f"{path} is owned by user {st.st_uid}, not this user ({me}): not used"
        if st.st_mode & 0o022:
            return f"{path} is writable by others (mode {st.st_mode & 0o777:o}): not used"
    try:
        planted = [os.path.join(cache, n) for n in os.listdir(cache)
                   if n.startswith(f"k{digest}")]  # (numba's: k<digest>.<function>-<line>...)
    except FileNotFoundError:
        planted = []
    except OSError as e:
        return f"cannot check {cache}: {e}"
    for path in planted:
        st = os.lstat(path)
        if st.st_uid != me or st.st_mode & 0o022 or not stat.S_ISREG(st.st_mode):
            return f"{path} is not a file of this user's alone: not used"
    if created_in is not None:
        try:
            st = os.stat(created_in)
        except OSError as e:
            return f"cannot check {created_in}: {e}"
        if st.st_uid not in (me, 0) or st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return (f"{created_in}, where the cache folder was made, is another user's or "
                    f"writable by others (mode {st.st_mode & 0o777:o}): not used")
    return None
