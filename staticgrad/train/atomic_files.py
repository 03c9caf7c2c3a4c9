"""Files written whole or not at all, and the temporary files that a killed writer leaves.

`atomic_write(path, write)` writes through a hidden temporary sibling,
`.<name>.staticgrad-<pid>-<random>.tmp`, flushed and fsync'ed, renamed over `path` with
`os.replace`, then fsyncs the directory. A write that fails removes its temporary file; a
process that is killed cannot, so `remove_orphaned_temp_files(directory)` (run by every save)
removes the ones that crashed writers left.

Telling an orphan from a file that is being written right now, by another thread or process:
the writer holds an exclusive `flock` on its temporary file from its creation until it is
renamed into place, and the kernel drops that lock when the writer dies, however it dies. The
cleaner removes only temporary files that it can lock itself. Creating a file and locking it
are two steps, so the writer takes both under a brief `flock` on the directory itself, which
the cleaner holds while it looks: it never sees a file created but not yet locked. A pid in the
name could not decide this (pids are reused, and differ across pid namespaces and machines),
nor could an age (a huge checkpoint on a slow disk takes long). Where locks are unavailable
(no `fcntl`, as on Windows, or a file system without `flock`), nothing is removed: a leftover
costs disk space, a wrong removal would cost a checkpoint. The pid in the name only tells a
person which process left the file.

`atomic_write_all` writes several files so: none is renamed into place until all are written.

>>> atomic_write("ckpt/notes.txt", lambda f: f.write(b"hello"))   # doctest: +SKIP
>>> remove_orphaned_temp_files("ckpt")                              # doctest: +SKIP
[]
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat

try:
    import fcntl
except ImportError:  # Windows: no flock, so orphans are left alone
    fcntl = None

_TEMP_NAME = re.compile(r"\..+\.staticgrad-[0-9]+-[0-9a-f]{12}\.tmp")


def temp_name(path: str) -> str:
    """The name of a fresh temporary sibling of `path` (unique: 48 random bits)."""
    return f".{os.path.basename(path)}.staticgrad-{os.getpid()}-{secrets.token_hex(6)}.tmp"


def is_temp_name(name: str) -> bool:
    """Whether a file name is one of staticgrad's temporary files."""
    return _TEMP_NAME.fullmatch(name) is not None


def atomic_write(path: str, write) -> None:
    """Call `write(f)` on a binary file that replaces `path` once complete and on disk. A
    failure leaves whatever was at `path` untouched and removes the temporary file."""
    atomic_write_all([(path, write)])


def atomic_write_all(files) -> None:
    """Write several files, each as `atomic_write` does, renaming none into place until every
    one is complete and on disk: `files` is a list of (path, write). A failure while writing
    leaves every path untouched and removes every temporary file.

    The renames follow the order of `files`, one at a time (no file system renames two files
    as one step): a rename that fails, or a crash between two renames, leaves the files before
    it new and the rest old. List first the file whose new version is safest beside the
    others' old versions; `export` writes its module first (then a CUDA export's `.cu`, then
    the data file), and the module checks that the others are the ones written with it.

    >>> atomic_write_all([("m.py", write_code), ("m.npz", write_data)])  # doctest: +SKIP
    """
    files = list(files)
    staged = []  # (open, locked file, its temporary path, the path it replaces): not renamed
    try:
        for path, write in files:
            directory = os.path.dirname(path) or os.curdir
            tmp = os.path.join(directory, temp_name(path))
            with _directory_lock(directory):
                f = open(tmp, "xb")  # noqa: SIM115 (closed below, after the rename)
                _lock(f.fileno(), blocking=True)
            staged.append((f, tmp, path))
            write(f)
            f.flush()
            os.fsync(f.fileno())
        while staged:  # every file is complete: rename them, in order
            f, tmp, path = staged[0]
            os.replace(tmp, path)
            staged.pop(0)
            f.close()  # the lock is held until the file is in place
    finally:
        for f, tmp, _ in staged:
            f.close()
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
    for directory in dict.fromkeys(os.path.dirname(path) or os.curdir for path, _ in files):
        _fsync_directory(directory)  # make the renames themselves durable


def remove_orphaned_temp_files(directory: str) -> list[str]:
    """Remove the temporary files in `directory` that no live writer holds (what killed
    writers left); return their paths. Other files, and files being written, are left."""
    removed: list[str] = []
    with _directory_lock(directory) as held:
        if not held:
            return removed
        try:
            names = os.listdir(directory)
        except OSError:
            return removed
        for name in names:
            if not is_temp_name(name):
                continue
            path = os.path.join(directory, name)
            try:  # no symlinks followed, no blocking on a FIFO planted under such a name
                fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue  # gone meanwhile, or not ours to touch
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode) and _lock(fd, blocking=False):
                    os.unlink(path)
                    removed.append(path)
            except FileNotFoundError:
                pass
            finally:
                os.close(fd)
    return removed


def _lock(fd: int, blocking: bool) -> bool:
    """Take an exclusive flock on `fd`; False if it is held elsewhere or locks are unavailable."""
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except OSError:
        return False
    return True


@contextlib.contextmanager
def _directory_lock(directory: str):
    """Hold an exclusive flock on the directory itself; yields whether it is held."""
    if fcntl is None:
        yield False
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        yield False
        return
    try:
        yield _lock(fd, blocking=True)
    finally:
        os.close(fd)  # drops the lock


def _fsync_directory(directory: str) -> None:
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):  # some file systems refuse to fsync a directory
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
