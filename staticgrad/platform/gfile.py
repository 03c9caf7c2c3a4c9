"""`sg.gfile`: TF1's `tf.gfile`, the file functions TF1 programs use for their log and data
folders, over the local file system (TF1's also reach GCS and HDFS; these take local paths):

    if sg.gfile.Exists(log_dir):
        sg.gfile.DeleteRecursively(log_dir)
    sg.gfile.MakeDirs(log_dir)
    with sg.gfile.GFile(path, "w") as f:
        f.write("text")

As TF1's, what finds nothing raises `sg.errors.NotFoundError` naming the path.
"""

from __future__ import annotations

import glob as _glob
import os
import shutil

from .._namespace import missing_name, public_dir
from ..errors import AlreadyExistsError, NotFoundError

__all__ = ["Copy", "DeleteRecursively", "Exists", "FastGFile", "GFile", "Glob", "IsDirectory",
           "ListDirectory", "MakeDirs", "MkDir", "Open", "Remove", "Rename", "Stat", "Walk"]


def _not_found(path, what: str = "file or folder") -> NotFoundError:
    return NotFoundError(None, None, f"{path}; No such {what}")


class GFile:
    """A file, opened as Python's `open` would (`mode` "r", "w", "a", with "b" for bytes);
    also `size()` and TF1's `read(n=-1)`. A missing file to read raises NotFoundError."""

    def __init__(self, name, mode: str = "r"):
        try:
            self._file = open(name, mode)
        except FileNotFoundError:
            raise _not_found(name) from None
        self.name, self.mode = name, mode

    def __getattr__(self, attr):
        return getattr(self._file, attr)

    def __iter__(self):
        return iter(self._file)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._file.close()

    def size(self) -> int:
        """The file's length in bytes."""
        return os.path.getsize(self.name)


Open = FastGFile = GFile


def Exists(filename) -> bool:
    """Whether a file or folder is there. `sg.gfile.Exists("/tmp")` -> True"""
    return os.path.exists(filename)


def IsDirectory(dirname) -> bool:
    """Whether `dirname` is a folder."""
    return os.path.isdir(dirname)


def MakeDirs(dirname) -> None:
    """Make a folder and those above it that are missing; one already there is fine."""
    os.makedirs(dirname, exist_ok=True)


def MkDir(dirname) -> None:
    """Make one folder (its parent must exist); AlreadyExistsError if it is there."""
    try:
        os.mkdir(dirname)
    except FileExistsError:
        raise AlreadyExistsError(None, None, f"{dirname}; File exists") from None
    except FileNotFoundError:
        raise _not_found(os.path.dirname(dirname) or dirname, "folder") from None


def DeleteRecursively(dirname) -> None:
    """Delete a folder and all it holds (or a file); NotFoundError if nothing is there."""
    if os.path.isdir(dirname) and not os.path.islink(dirname):
        shutil.rmtree(dirname)
    elif os.path.lexists(dirname):
        os.remove(dirname)
    else:
        raise _not_found(dirname)


def Remove(filename) -> None:
    """Delete one file; NotFoundError if it is not there."""
    try:
        os.remove(filename)
    except FileNotFoundError:
        raise _not_found(filename, "file") from None


def Rename(oldname, newname, overwrite: bool = False) -> None:
    """Rename a file; AlreadyExistsError if `newname` exists, unless `overwrite`."""
    if not os.path.lexists(oldname):
        raise _not_found(oldname)
    if not overwrite and os.path.lexists(newname):
        raise AlreadyExistsError(None, None, f"{newname}; File exists")
    os.replace(oldname, newname)


def Copy(oldpath, newpath, overwrite: bool = False) -> None:
    """Copy a file; AlreadyExistsError if `newpath` exists, unless `overwrite`."""
    if not os.path.isfile(oldpath):
        raise _not_found(oldpath, "file")
    if not overwrite and os.path.lexists(newpath):
        raise AlreadyExistsError(None, None, f"{newpath}; File exists")
    shutil.copyfile(oldpath, newpath)


def Glob(filename) -> list[str]:
    """The paths that match a pattern (`*`, `?`, `[...]`), sorted."""
    return sorted(_glob.glob(filename))


def ListDirectory(dirname) -> list[str]:
    """The names in a folder (not paths), sorted; NotFoundError if it is not a folder."""
    if not os.path.isdir(dirname):
        raise _not_found(dirname, "folder")
    return sorted(os.listdir(dirname))


def Walk(top, in_order: bool = True):
    """(folder, subfolder names, file names) for `top` and each folder below it, top first
    when `in_order` (else bottom first), as `os.walk`; nothing for a missing `top`."""
    for folder, subfolders, files in os.walk(top, topdown=in_order):
        yield folder, sorted(subfolders), sorted(files)


class _FileStatistics:
    """What `Stat` gives: `length` (bytes), `mtime_nsec`, `is_directory`."""

    def __init__(self, length: int, mtime_nsec: int, is_directory: bool):
        self.length, self.mtime_nsec, self.is_directory = length, mtime_nsec, is_directory


def Stat(filename) -> _FileStatistics:
    """A file's length, modification time and whether it is a folder."""
    try:
        st = os.stat(filename)
    except FileNotFoundError:
        raise _not_found(filename) from None
    return _FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(filename))


__dir__ = public_dir(globals())
__getattr__ = missing_name("staticgrad.gfile", "tf.gfile", globals())
