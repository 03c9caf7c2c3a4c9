"""TF1-named run-time errors, and where in the user's program a node was created.

Graph-construction mistakes raise `ValueError`/`TypeError` at once; mistakes that show only
when a session runs (a missing feed, an uninitialized variable) raise an `OpError` subclass.
Every message names the node at fault and the file and line that created it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

from . import _namespace

# TF1's tf.errors; the location helpers below (user_location, format_location...) are the
# package's own, not part of sg.errors
__all__ = [
    "AbortedError", "AlreadyExistsError", "CancelledError", "DataLossError",
    "DeadlineExceededError", "FailedPreconditionError", "InternalError", "InvalidArgumentError",
    "NotFoundError", "OpError", "OutOfRangeError", "PermissionDeniedError",
    "ResourceExhaustedError", "UnauthenticatedError", "UnavailableError", "UnimplementedError",
    "UnknownError",
]
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.errors", "tf.errors", globals())

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# The package's modules that are programs of a user's kind: the ops they create belong to
# their own lines (`staticgrad demo` shows generated code naming the demo's lines)
_USER_FILES = frozenset([_PACKAGE_DIR + "demo.py"])


class _Pinned(threading.local):
    location = None  # what user_location() answers, while pinned (a class default: reading
    #                  a threading.local's missing attribute raises inside getattr, 1 us)


_pinned = _Pinned()
_LOCATIONS: dict = {}  # (filename, lineno) -> the one tuple for it: the ops of a line share it
LOCATIONS_KEPT = 1 << 16


class OpError(Exception):
    """Base of run-time errors; `.op` is the operation at fault (may be None)."""

    error_code = 2

    def __init__(self, node_def, op, message: str, *args):
        super().__init__(message)
        self.node_def = node_def
        self.op = op
        self.message = message


def _make(name: str, code: int, doc: str) -> type[OpError]:
    return type(name, (OpError,), {"error_code": code, "__doc__": doc})


CancelledError = _make("CancelledError", 1, "The operation was cancelled.")
UnknownError = _make("UnknownError", 2, "An error of unknown cause.")
InvalidArgumentError = _make("InvalidArgumentError", 3,
                             "A bad argument: a feed of the wrong shape or dtype, a missing feed.")
DeadlineExceededError = _make("DeadlineExceededError", 4, "A deadline passed.")
NotFoundError = _make("NotFoundError", 5, "A named thing (file, tensor, checkpoint) is missing.")
AlreadyExistsError = _make("AlreadyExistsError", 6, "The thing to create already exists.")
PermissionDeniedError = _make("PermissionDeniedError", 7, "Not permitted.")
ResourceExhaustedError = _make("ResourceExhaustedError", 8, "Out of memory or disk.")
FailedPreconditionError = _make("FailedPreconditionError", 9,
                                "The system is not in a state to run: an uninitialized variable.")
AbortedError = _make("AbortedError", 10, "The operation was aborted.")
OutOfRangeError = _make("OutOfRangeError", 11, "Iterated past a valid range.")
UnimplementedError = _make("UnimplementedError", 12, "Not implemented.")
InternalError = _make("InternalError", 13, "An invariant of staticgrad was broken.")
UnavailableError = _make("UnavailableError", 14, "Temporarily unavailable.")
DataLossError = _make("DataLossError", 15, "Unrecoverable data loss or corruption.")
UnauthenticatedError = _make("UnauthenticatedError", 16, "Not authenticated.")


def user_location(skip_package: str = _PACKAGE_DIR, skip_frames: int = 0):
    """(filename, lineno) of the innermost frame outside staticgrad (but for its demo,
    `_USER_FILES`): the line the user wrote. Python's own start-up frames (runpy's and the
    import system's, `<frozen ...>`) are never it. One tuple for each line (a loop's ops
    share theirs), and a walk over the frames, never a recursion: any depth of calls is
    fine. `skip_frames`: how many callers above the caller are known to be staticgrad's (each
    frame the walk steps through costs about 0.15 us)."""
    pinned = _pinned.location
    if pinned is not None and skip_package is _PACKAGE_DIR:
        return pinned
    frame = sys._getframe(1 + skip_frames)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(skip_package):
            if not filename.startswith("<frozen "):
                break
        elif filename in _USER_FILES:
            break
        frame = frame.f_back
    if frame is None:
        return ("<unknown>", 0)
    location = (frame.f_code.co_filename, frame.f_lineno)
    if len(_LOCATIONS) > LOCATIONS_KEPT:
        _LOCATIONS.clear()
    return _LOCATIONS.setdefault(location, location)


@contextlib.contextmanager
def pinned_location(location):
    """Within: user_location() answers `location` (None: it looks again) on this thread.
    `sg.gradients` pins the user's line once for the thousands of nodes its built-in rules
    make, all of which would find that same line."""
    before = _pinned.location
    _pinned.location = location
    try:
        yield
    finally:
        _pinned.location = before


def is_package_code(function) -> bool:
    """Is `function` staticgrad's own (so the nodes it makes belong to its caller's line)?"""
    code = getattr(function, "__code__", None)
    return code is not None and code.co_filename.startswith(_PACKAGE_DIR)


def format_location(loc) -> str:
    r"""`file:line` for a message. A location can come from a graph file, so a character that
    is not printable (a newline, a terminal escape, a bidirectional override) is shown as its
    escape, as repr() writes it: no location can end a message's line or forge another one.
    Ordinary paths, non-ASCII letters included, read unchanged.

    >>> format_location(("train.py", 12))
    'train.py:12'
    >>> print(format_location(("m.py\n\x1b[2J", 1)))
    m.py\n\x1b[2J:1
    """
    filename, lineno = loc
    return f"{_printable(filename)}:{_printable(lineno)}"


def _printable(value) -> str:
    text = str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def here() -> str:
    """'at file:line': where the user's program is now (for errors raised before an op
    exists, which cannot name one)."""
    return f"at {format_location(user_location())}"
