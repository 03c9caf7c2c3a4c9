"""`sg.logging`: TF1's `tf.logging` (set_verbosity, info, warning...), over Python's logging,
in a logger of its own ("staticgrad.logging", apart from the package's loggers, which the
program's logging configuration governs), which writes to stderr; at WARN by default, as
TF1's."""

from __future__ import annotations

import logging as _logging
import sys

from .._namespace import missing_name, public_dir

DEBUG, INFO, WARN, ERROR, FATAL = (_logging.DEBUG, _logging.INFO, _logging.WARN,
                                   _logging.ERROR, _logging.FATAL)
WARNING = WARN

__all__ = ["DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL", "set_verbosity",
           "get_verbosity", "debug", "info", "warn", "warning", "error", "fatal", "log",
           "log_every_n", "log_first_n", "vlog"]

_logger = _logging.getLogger("staticgrad.logging")
if not _logger.handlers:
    _handler = _logging.StreamHandler(sys.stderr)
    _handler.setFormatter(_logging.Formatter("%(levelname)s:tensorflow:%(message)s"))
    _logger.addHandler(_handler)
    _logger.setLevel(WARN)
    _logger.propagate = False
_counts: dict = {}


def set_verbosity(level) -> None:
    """Log from `level` up (DEBUG, INFO, WARN, ERROR, FATAL)."""
    _logger.setLevel(level)


def get_verbosity() -> int:
    """The level logged from."""
    return _logger.getEffectiveLevel()


def log(level, msg, *args, **kwargs) -> None:
    """Log `msg % args` at `level`."""
    _logger.log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs) -> None:
    """Log `msg % args` at DEBUG."""
    _logger.debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs) -> None:
    """Log `msg % args` at INFO."""
    _logger.info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs) -> None:
    """Log `msg % args` at WARN."""
    _logger.warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs) -> None:
    """Log `msg % args` at ERROR."""
    _logger.error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs) -> None:
    """Log `msg % args` at FATAL (it does not exit, as TF1's does not)."""
    _logger.critical(msg, *args, **kwargs)


def vlog(level, msg, *args, **kwargs) -> None:
    """Log `msg % args` at `level` (TF1's verbose log)."""
    _logger.log(level, msg, *args, **kwargs)


def _caller() -> tuple:
    frame = sys._getframe(2)
    return frame.f_code.co_filename, frame.f_lineno


def log_every_n(level, msg, n, *args) -> None:
    """Log the 1st, (n+1)th, (2n+1)th... time this line runs."""
    key = _caller()
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count % max(int(n), 1) == 0:
        _logger.log(level, msg, *args)


def log_first_n(level, msg, n, *args) -> None:
    """Log the first n times this line runs."""
    key = _caller()
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count < n:
        _logger.log(level, msg, *args)

__dir__ = public_dir(globals())
__getattr__ = missing_name("staticgrad.logging", "tf.logging", globals())
