"""Checkpoints: `Saver` writes variable values to disk and reads them back (TF1's `tf.train`).

    saver = sg.train.Saver(max_to_keep=3)            # all global variables, slots included
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        ...
        saver.save(sess, "ckpt/model", global_step=step)          # -> "ckpt/model-100"
    with sg.Session() as sess:
        saver.restore(sess, sg.train.latest_checkpoint("ckpt"))

On disk (one directory; the paths a user passes around are *prefixes* such as "ckpt/model-100"):

    model-100.npz     one per checkpoint: a NumPy .npz archive (an uncompressed zip of .npy
                      files) with one entry per variable, keyed by its checkpoint name: the
                      variable's op name ("dense/kernel") or the key given in a `var_list` dict.
                      Each .npy header records the array's shape and dtype, so the archive is
                      its own metadata; `np.load("model-100.npz", allow_pickle=False)` reads it.
    checkpoint.json   the directory's index (TF1 keeps a text file named "checkpoint"):
                        {"format": "staticgrad-checkpoint-index", "version": 1,
                         "model_checkpoint_path": "model-300",
                         "all_model_checkpoint_paths": ["model-200", "model-300"],
                         "all_model_checkpoint_timestamps": [1700000000.5, 1700000060.1]}
                      Paths are relative to the directory, so a moved directory still works.

Every file is written whole or not at all (`atomic_files.py`): to a hidden temporary file in
its own directory, flushed and fsync'ed, then renamed into place. A save is a short journal in
the index, so that a process killed at any moment leaves a directory the next save can finish:

    1. remove the temporary files that killed saves left (never one a live save is writing)
    2. index += {"adding_checkpoint_paths": ["model-300"]}      (skipped when re-saving a prefix)
    3. model-300.npz written and renamed into place
    4. index = {latest "model-300", the kept list, "deleting_checkpoint_paths": [dropped ones]}
    5. the dropped data files deleted

`latest_checkpoint` names a complete checkpoint after a kill at any step: the index moves to a
new checkpoint only once its file is in place, and the latest is never deleted. A save that
fails (a full disk) removes its temporary file and leaves the previous checkpoint and an index
pointing at it. Restoring reads and checks every value before it sets any, so a failed restore
leaves the session as it was; a damaged file raises DataLossError naming the file and the entry
(`checkpoint_format.py` lists every kind of damage and what it raises). Saving into a directory
that does not exist raises ValueError naming it, as TF1 does: create it first.

What a Saver counts for `max_to_keep`: the checkpoints it wrote, and, from its first save into a
directory's index on, the checkpoints of the same series (same directory and index file, same
base name: "model" and "model-<step>") that the index lists, or that its journal says were being
added. So a restarted training process, killed or not, keeps honouring `max_to_keep` for what
the previous run left, and finishes the deletions a kill interrupted. It writes the index with
its own list, as TF1 does (checkpoints of other series drop out of the index, not off the disk).

Departures from TF1:
- TF1's Saver counts only the checkpoints it wrote; a previous run's stay on disk forever unless
  the program calls `recover_last_checkpoints` (which works here too). Here a Saver adopts its
  series from the index on its first save, as above (TF2's CheckpointManager does the same).
- A checkpoint given to `recover_last_checkpoints` or `set_last_checkpoints_with_time` must lie
  in the directory of the next save (TF1 would delete it wherever it is): that save raises
  ValueError naming it, before writing anything. So max_to_keep deletes only what the saver
  wrote and what it adopted from the directory it saves into.
- No `.meta` file: `write_meta_graph` and `meta_graph_suffix` are accepted and ignored;
  rebuild the graph in code (with the same names) and restore into it.
- One `.npz` file per checkpoint and a JSON index named "checkpoint.json", in place of TF1's
  `.index`/`.data-*` files and its text-protobuf "checkpoint" file. The index holds only file
  names in its own directory: never absolute paths, never "..".
- With `max_to_keep=None` or 0 nothing is deleted and the index lists every checkpoint this
  saver wrote (TF1 lists only the latest).
- An unreadable index raises DataLossError (TF1 logs a warning and returns None); a save over
  one warns and writes a new index.
- `sharded`, `name`, `restore_sequentially`, `filename` and `save_relative_paths` are accepted
  and ignored: a checkpoint is always one file and the index always holds relative paths.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import threading
import time
import warnings

import numpy as np

from ..errors import DataLossError, FailedPreconditionError, InvalidArgumentError, NotFoundError
from ..graph import GraphKeys, get_default_graph
from ..session import Session
from ..variables import Variable
from .atomic_files import atomic_write, remove_orphaned_temp_files
from .checkpoint_format import (
    DATA_SUFFIX,
    INDEX_FILENAME,
    CheckpointNotFoundError,  # noqa: F401 (part of this module's interface)
    Index,
    index_text,
    open_archive,
    read_index,
    write_npz,
)


@dataclasses.dataclass
class CheckpointState:
    """A directory's index: the latest checkpoint prefix and every prefix kept (oldest first),
    joined to the directory they were read from."""

    model_checkpoint_path: str
    all_model_checkpoint_paths: list[str]
    all_model_checkpoint_timestamps: list[float] = dataclasses.field(default_factory=list)


class Saver:
    """Saves and restores variables (by default every global variable, which includes the
    optimizers' slots and the global step).

    >>> saver = sg.train.Saver({"weights": w}, max_to_keep=2)    # doctest: +SKIP
    >>> saver.save(sess, "/tmp/run/model", global_step=7)         # doctest: +SKIP
    '/tmp/run/model-7'
    >>> saver.restore(sess, "/tmp/run/model-7")                   # doctest: +SKIP

    `var_list`: None (the global variables that exist now), a list of Variables (saved under
    their op names), or a dict {checkpoint name: Variable}. `max_to_keep`: how many of the
    newest checkpoints to keep; older ones are deleted (None or 0 keeps all), except that one
    every `keep_checkpoint_every_n_hours` is left on disk, as in TF1. `reshape=True` lets a
    restore fill a variable from a value of another shape with as many elements.
    """

    def __init__(self, var_list=None, reshape: bool = False, sharded: bool = False,
                 max_to_keep: int | None = 5, keep_checkpoint_every_n_hours: float = 10000.0,
                 name: str | None = None, restore_sequentially: bool = False,
                 allow_empty: bool = False, pad_step_number: bool = False,
                 save_relative_paths: bool = True, filename: str | None = None):
        self._vars = _checkpoint_names(var_list)
        if not self._vars and not allow_empty:
            raise ValueError("No variables to save")
        self._graph = next(iter(self._vars.values())).graph if self._vars else None
        self._reshape = bool(reshape)
        self._max_to_keep = max_to_keep
        self._keep_every_s = keep_checkpoint_every_n_hours * 3600.0
        self._next_preserved_time = time.time() + self._keep_every_s
        self._pad_step_number = pad_step_number
        self._last_checkpoints: list[tuple[str, float]] = []  # (prefix, time), oldest first
        # prefixes the caller gave (recover_last_checkpoints, set_last_checkpoints_with_time),
        # not yet checked to lie in the directory of a save
        self._unchecked: set[str] = set()
        self._adopted: set[str] = set()  # the index files whose series this saver has adopted
        self._lock = threading.Lock()

    # -- the checkpoints this saver keeps -------------------------------------------------------
    @property
    def last_checkpoints(self) -> list[str]:
        """The prefixes this saver keeps (wrote, or adopted) and has not deleted, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time) -> None:
        """Replace the list of kept checkpoints with [(prefix, timestamp)], oldest first.

        The next save refuses (ValueError, before it writes anything) a prefix that does not
        lie in the directory it saves into: it would delete it once max_to_keep drops it."""
        self._last_checkpoints = [(str(p), float(t)) for p, t in last_checkpoints_with_time]
        self._unchecked = {p for p, _ in self._last_checkpoints}

    def recover_last_checkpoints(self, checkpoint_paths) -> None:
        """Adopt the existing checkpoints among `checkpoint_paths` (e.g. a previous run's
        `get_checkpoint_state(d).all_model_checkpoint_paths`), so `max_to_keep` counts them.

        They must lie in one directory (ValueError naming a path that does not), and the next
        save must be into that directory: it refuses, before writing anything, to count a
        checkpoint elsewhere (`../`, a symlinked directory), which it would later delete."""
        paths = [os.fspath(p) for p in checkpoint_paths]
        for path in paths[1:]:
            if not _in_directory(path, os.path.dirname(paths[0]) or os.curdir):
                raise ValueError(f"recover_last_checkpoints was given checkpoints in different "
                                 f"directories: {path!r} is not in the directory of "
                                 f"{paths[0]!r}; a Saver counts one directory's checkpoints")
        found = [(p, os.path.getmtime(p + DATA_SUFFIX)) for p in paths if checkpoint_exists(p)]
        self.set_last_checkpoints_with_time(sorted(found, key=lambda pt: pt[1]))

    # -- saving ---------------------------------------------------------------------------------
    def save(self, sess: Session, save_path: str, global_step=None,
             latest_filename: str | None = None, meta_graph_suffix: str = "meta",
             write_meta_graph: bool = True, write_state: bool = True) -> str | None:
        """Write the variables' values in `sess` to `<save_path>.npz` (or
        `<save_path>-<step>.npz`) and record it in the directory's index; return the prefix.

        `global_step` may be an int, or a Variable or tensor evaluated in `sess`.
        `latest_filename` names the index file (default "checkpoint.json"); with
        `write_state=False` the index is left alone and nothing is deleted. Every save first
        removes the temporary files that killed saves left in the directory.
        """
        self._check_session(sess, "save")
        if not self._vars:
            return None
        prefix = os.fspath(save_path)
        if global_step is not None:
            prefix = f"{prefix}-{self._step_suffix(sess, global_step)}"
        save_dir = os.path.dirname(prefix) or os.curdir
        if not os.path.isdir(save_dir):
            raise ValueError(f"parent directory {save_dir!r} of save_path {save_path!r} does "
                             "not exist; create it before saving")
        index_path = _index_path(save_dir, latest_filename)
        if os.path.abspath(index_path) == os.path.abspath(prefix + DATA_SUFFIX):
            raise ValueError(f"latest_filename {latest_filename!r} collides with the data file "
                             f"of save_path {prefix!r}")
        arrays = self._values(sess)
        with self._lock:
            if write_state:
                self._check_given_checkpoints(save_dir)
            remove_orphaned_temp_files(save_dir)
            if write_state:
                self._save_recorded(prefix, index_path, os.path.basename(save_path), arrays)
            else:
                atomic_write(prefix + DATA_SUFFIX, lambda f: write_npz(f, arrays))
        return prefix

    def _save_recorded(self, prefix: str, index_path: str, base: str, arrays) -> None:
        """Save and record `prefix` in the index, then delete what max_to_keep drops: the
        journal of the module docstring, steps 2 to 5."""
        save_dir = os.path.dirname(index_path)
        on_disk = _index_for_saving(index_path)
        self._adopt(on_disk, index_path, prefix, base)
        if prefix in self.last_checkpoints:  # replaced whole by its rename: no journal
            atomic_write(prefix + DATA_SUFFIX, lambda f: write_npz(f, arrays))
        else:
            _write_journaled(index_path, on_disk, prefix, arrays)
        kept, dropped = self._kept_after(prefix, time.time())
        doomed, next_preserved = self._split_dropped(dropped)
        here = [(p, t) for p, t in kept if _in_directory(p, save_dir)]
        _write_index(index_path, Index(
            latest=os.path.basename(prefix),
            paths=[os.path.basename(p) for p, _ in here],
            timestamps=[t for _, t in here],
            deleting=[os.path.basename(p) for p in doomed if _in_directory(p, save_dir)]))
        self._last_checkpoints = kept
        self._next_preserved_time = next_preserved
        for old_prefix in doomed:
            with contextlib.suppress(FileNotFoundError):
                os.remove(old_prefix + DATA_SUFFIX)

    def _check_given_checkpoints(self, save_dir: str) -> None:
        """Refuse, before anything is written, a checkpoint that the caller gave this saver to
        count and that lies outside `save_dir`: max_to_keep would delete it there. Once a save
        has checked them, they count as this saver's own."""
        for prefix in self.last_checkpoints:
            if prefix in self._unchecked and not _in_directory(prefix, save_dir):
                raise ValueError(
                    f"checkpoint {prefix!r} (given to recover_last_checkpoints or "
                    f"set_last_checkpoints_with_time) is not in {save_dir!r}, the directory "
                    f"this save writes into: it is at {os.path.realpath(prefix)!r}. A Saver "
                    "deletes old checkpoints only in the directory it saves into; nothing was "
                    "written")
        self._unchecked.clear()

    def _adopt(self, index: Index | None, index_path: str, prefix: str, base: str) -> None:
        """On this saver's first save into `index_path`: count (for max_to_keep) the existing
        checkpoints of this save's series that the index lists or was adding, and finish the
        deletions that a killed save left undone."""
        key = os.path.abspath(index_path)
        if key in self._adopted:
            return
        self._adopted.add(key)
        if index is None:
            return
        in_series = re.compile(re.escape(base) + r"(--?[0-9]+)?").fullmatch
        directory = os.path.dirname(prefix)
        listed = set(index.paths) | {index.latest}
        for name in index.deleting:
            if in_series(name) and name not in listed:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(directory, name) + DATA_SUFFIX)
        known = set(self.last_checkpoints)
        candidates = list(zip(index.paths, index.timestamps or [None] * len(index.paths)))
        candidates += [(name, None) for name in index.adding if name not in listed]
        adopted = []
        for name, saved_at in candidates:
            path = os.path.join(directory, name)
            if not in_series(name) or path in known:
                continue
            try:
                mtime = os.path.getmtime(path + DATA_SUFFIX)
            except OSError:
                continue  # listed, but gone (deleted by hand, or never put in place)
            adopted.append((path, mtime if saved_at is None else saved_at))
        self._last_checkpoints = adopted + self._last_checkpoints

    def _step_suffix(self, sess: Session, global_step) -> str:
        if isinstance(global_step, int | np.integer) and not isinstance(global_step, bool):
            step = int(global_step)
        else:
            value = np.asarray(sess.run(global_step))
            if value.shape != () or value.dtype.kind not in "iuf":
                raise ValueError(f"global_step must be a number, got {value!r} from "
                                 f"{getattr(global_step, 'name', global_step)}")
            step = int(value)
        return f"{step:08d}" if self._pad_step_number else str(step)

    def _values(self, sess: Session) -> dict[str, np.ndarray]:
        """{checkpoint name: value} of every variable, or FailedPreconditionError naming the
        uninitialized ones (checked before anything is written)."""
        initialized = set(sess.variable_names())
        missing = [(name, var) for name, var in self._vars.items()
                   if var._var_name not in initialized]
        if missing:
            name, var = missing[0]
            also = (f" (also uninitialized: {', '.join(v.op.name for _, v in missing[1:])})"
                    if len(missing) > 1 else "")
            raise FailedPreconditionError(
                None, var.op, f"cannot save uninitialized variable {var.op.name} "
                              f"({var.op.where()}); run its initializer or "
                              f"sg.global_variables_initializer() first{also}")
        return {name: np.asarray(sess.read_variable(var), dtype=var.dtype.np)
                for name, var in self._vars.items()}

    def _kept_after(self, prefix: str, now: float):
        """(checkpoints kept once `prefix` is recorded, checkpoints to drop), both oldest first;
        saving to a prefix again moves it to the end."""
        kept = [(p, t) for p, t in self._last_checkpoints if p != prefix] + [(prefix, now)]
        if not self._max_to_keep or len(kept) <= self._max_to_keep:
            return kept, []
        cut = len(kept) - self._max_to_keep
        return kept[cut:], kept[:cut]

    def _split_dropped(self, dropped) -> tuple[list[str], float]:
        """(prefixes to delete, the next preservation time): of the dropped checkpoints, one
        every keep_checkpoint_every_n_hours stays on disk, as in TF1."""
        next_time, doomed = self._next_preserved_time, []
        for prefix, saved_at in dropped:
            if saved_at > next_time:
                next_time += self._keep_every_s
            else:
                doomed.append(prefix)
        return doomed, next_time

    # -- restoring ------------------------------------------------------------------------------
    def restore(self, sess: Session, save_path: str) -> None:
        """Set the variables in `sess` to the values saved at prefix `save_path`.

        All or nothing: every value is read and checked (present, same dtype, compatible
        shape) before any is set. Raises NotFoundError for a missing file or variable,
        InvalidArgumentError for a shape or dtype mismatch, DataLossError for a damaged file.
        """
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        self._check_session(sess, "restore")
        if not self._vars:
            return
        path = _data_path(os.fspath(save_path))
        with open_archive(path) as archive:
            stored = set(archive.names)
            missing = [(name, var) for name, var in self._vars.items() if name not in stored]
            if missing:
                raise _missing_error(missing, path, stored)
            new_values = [(var, self._checked(name, var, archive.read(name), path))
                          for name, var in self._vars.items()]
        for var, value in new_values:  # (every value checked already: none fails here)
            sess.write_variable(var, value)

    def _checked(self, name: str, var: Variable, value: np.ndarray, path: str) -> np.ndarray:
        label = var.op.name if name == var.op.name else f"{var.op.name} (saved as {name!r})"
        if value.dtype != var.dtype.np:
            raise InvalidArgumentError(
                None, var.op, f"variable {label} ({var.op.where()}) has dtype {var.dtype.name}, "
                              f"but checkpoint {path} holds it as {value.dtype}")
        if not var.shape.is_compatible_with(value.shape):
            if self._reshape and var.shape.is_fully_defined() and \
                    value.size == var.shape.num_elements():
                return value.reshape(var.shape.as_list())
            raise InvalidArgumentError(
                None, var.op, f"variable {label} ({var.op.where()}) has shape {var.shape}, "
                              f"but checkpoint {path} holds shape {tuple(value.shape)}")
        return value

    def _check_session(self, sess, what: str) -> None:
        if not isinstance(sess, Session):
            raise TypeError(f"'sess' must be a Session, got {sess!r}")
        sess._check_open(f"Saver.{what}")
        if self._graph is not None and sess.graph is not self._graph:
            raise ValueError("the session's graph is not the graph of the Saver's variables")


# -- finding checkpoints ------------------------------------------------------------------------
def get_checkpoint_state(checkpoint_dir: str,
                         latest_filename: str | None = None) -> CheckpointState | None:
    """The index of `checkpoint_dir` (prefixes joined to it), or None if it has none.

    >>> sg.train.get_checkpoint_state("ckpt").all_model_checkpoint_paths  # doctest: +SKIP
    ['ckpt/model-200', 'ckpt/model-300']

    Raises DataLossError naming the index and the field when the index is damaged.
    """
    checkpoint_dir = os.fspath(checkpoint_dir)
    index = read_index(_index_path(checkpoint_dir, latest_filename))
    if index is None or index.latest is None:  # none, or only a first save's journal
        return None
    return CheckpointState(os.path.join(checkpoint_dir, index.latest),
                           [os.path.join(checkpoint_dir, p) for p in index.paths],
                           index.timestamps)


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The prefix of the newest checkpoint in `checkpoint_dir`, or None if there is none.

    >>> saver.restore(sess, sg.train.latest_checkpoint("ckpt"))  # doctest: +SKIP
    """
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not checkpoint_exists(state.model_checkpoint_path):
        return None
    return state.model_checkpoint_path


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether a checkpoint with this prefix is on disk."""
    return os.path.isfile(os.fspath(checkpoint_prefix) + DATA_SUFFIX)


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """[(name, shape)] of the values in a checkpoint (a prefix, or a directory: its latest).
    Only the headers are read.

    >>> sg.train.list_variables("ckpt")  # doctest: +SKIP
    [('global_step', []), ('w', [3, 1])]
    """
    path = _data_path(_prefix_of(ckpt_dir_or_file))
    with open_archive(path) as archive:
        return [(name, list(archive.shape(name))) for name in sorted(archive.names)]


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """The value saved under `name` in a checkpoint (a prefix, or a directory: its latest)."""
    path = _data_path(_prefix_of(ckpt_dir_or_file))
    with open_archive(path) as archive:
        if name not in archive.names:
            raise NotFoundError(None, None, f"{name!r} is not in checkpoint {path}; it holds "
                                            f"{_some(archive.names)}")
        return archive.read(name)


# -- helpers --------------------------------------------------------------------------------------
def _checkpoint_names(var_list) -> dict[str, Variable]:
    """{checkpoint name: Variable} from var_list (None, a list of Variables, or a dict)."""
    if var_list is None:
        var_list = get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES)
    if isinstance(var_list, dict):
        items = list(var_list.items())
    elif isinstance(var_list, list | tuple | set | frozenset):
        items = [(v.op.name if isinstance(v, Variable) else repr(v), v) for v in var_list]
    else:
        raise TypeError(f"var_list must be None, a list of Variables or a dict of them, "
                        f"got {type(var_list).__name__}")
    names: dict[str, Variable] = {}
    for name, var in items:
        if not isinstance(var, Variable):
            raise TypeError(f"var_list entry {name!r} is {var!r}, not a Variable")
        if not isinstance(name, str) or not name or "\0" in name:
            raise ValueError(f"checkpoint names must be non-empty strings, got {name!r} for "
                             f"{var.op.name}")
        if any(var is other for other in names.values()):
            raise ValueError(f"variable {var.op.name} appears twice in var_list")
        if name in names:
            raise ValueError(f"at least two variables have the same checkpoint name: {name}")
        if names and var.graph is not next(iter(names.values())).graph:
            raise ValueError(f"variable {var.op.name} is from another graph than the other "
                             "variables in var_list")
        names[name] = var
    return names


def _index_path(directory: str, latest_filename: str | None) -> str:
    filename = latest_filename or INDEX_FILENAME
    if os.path.basename(filename) != filename:
        raise ValueError(f"latest_filename must be a file name, not a path: {filename!r}")
    return os.path.join(directory, filename)


def _data_path(prefix: str) -> str:
    """The data file of a prefix; a path already ending in .npz is taken as it is."""
    if prefix.endswith(DATA_SUFFIX) and not os.path.exists(prefix + DATA_SUFFIX):
        return prefix
    return prefix + DATA_SUFFIX


def _prefix_of(ckpt_dir_or_file: str) -> str:
    ckpt_dir_or_file = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(ckpt_dir_or_file):
        prefix = latest_checkpoint(ckpt_dir_or_file)
        if prefix is None:
            raise NotFoundError(None, None, f"no checkpoint found in {ckpt_dir_or_file}")
        return prefix
    return ckpt_dir_or_file


def _in_directory(prefix: str, directory: str) -> bool:
    """Whether `prefix` names a file in `directory`, once `..` and symlinks are resolved."""
    return os.path.realpath(os.path.dirname(prefix) or os.curdir) == os.path.realpath(directory)


def _index_for_saving(index_path: str) -> Index | None:
    """The index a save starts from; a damaged one is reported and replaced, not fatal (a
    training run that cannot save loses more than a lost index costs)."""
    try:
        return read_index(index_path)
    except DataLossError as e:
        warnings.warn(f"{e}; saving writes a new index (checkpoints it listed are no longer "
                      "counted for max_to_keep)", stacklevel=3)
        return None


def _write_journaled(index_path: str, on_disk: Index | None, prefix: str, arrays) -> None:
    """Write a new checkpoint's data file, recorded first in the index's journal (so a kill
    after its rename leaves it counted); a failed write takes the journal entry back."""
    journal = dataclasses.replace(on_disk or Index(None, [], []))
    name = os.path.basename(prefix)
    journal.adding = [n for n in journal.adding if n != name] + [name]
    _write_index(index_path, journal)
    try:
        atomic_write(prefix + DATA_SUFFIX, lambda f: write_npz(f, arrays))
    except Exception:  # raised before the rename (not an interrupt): the file is not in place
        with contextlib.suppress(OSError):  # best effort: the entry is harmless if it stays
            if on_disk is None:
                os.remove(index_path)
            else:
                _write_index(index_path, on_disk)
        raise


def _write_index(index_path: str, index: Index) -> None:
    text = index_text(index)
    atomic_write(index_path, lambda f: f.write(text.encode("utf-8")))


def _missing_error(missing, path: str, stored) -> NotFoundError:
    name, var = missing[0]
    label = var.op.name if name == var.op.name else f"{var.op.name} (saved as {name!r})"
    also = (f"; also missing: {', '.join(n for n, _ in missing[1:])}"
            if len(missing) > 1 else "")
    return NotFoundError(None, var.op, f"variable {label} ({var.op.where()}) is not in "
                                       f"checkpoint {path}, which holds "
                                       f"{_some(stored)}{also}")


def _some(names, limit: int = 10) -> str:
    names = sorted(names)
    shown = ", ".join(names[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}] ({len(names)} values)"
