"""Reading and writing the files of a checkpoint directory: the `.npz` data files and the
`checkpoint.json` index. `saver.py` decides what to write and when; this module knows the bytes.

Everything read here is checked before it is trusted. A damaged, truncated or hostile file
raises `DataLossError` naming the file (and the entry or field at fault); nothing is allocated
beyond what the file really holds, and nothing is ever unpickled:

    damage                                         what happens
    -------------------------------------------    ------------------------------------------
    missing file                                   NotFoundError (also a ValueError, as TF1)
    empty, truncated, not a zip, wrong magic       DataLossError: not an .npz archive / corrupt
    zip directory damaged (offsets, versions)      DataLossError naming the file
    an entry that is encrypted, compressed with    DataLossError naming the entry (staticgrad
      a method other than stored/deflate, or not     writes stored .npy entries; np.savez and
      a .npy file; the same entry twice              np.savez_compressed files read too)
    an entry claiming more bytes than the file     DataLossError before any allocation
      has (or a deflate ratio beyond 1032:1)
    .npy magic, version or header damaged          DataLossError naming the entry
    header dtype object (pickle), structured,      DataLossError: checkpoints hold numbers;
      string or date                                 the entry's data is never read (a string
                                                     variable is two numeric entries: Archive)
    a string value's lengths and bytes disagree    DataLossError naming the value
    header shape * itemsize != the entry's size    DataLossError (checked before allocating:
      (a huge declared shape, a truncated entry)     no 3.6 TiB MemoryError)
    data bytes changed                             DataLossError: the zip CRC-32 disagrees
    a bool entry holding bytes other than 0 or 1   DataLossError
    index: not JSON, nested absurdly deep, not     DataLossError naming the index and field
      an object, wrong format/version, a field
      of the wrong JSON type (a null timestamp),
      timestamps not finite or not one per path
    index: a path that is not a plain file name    DataLossError: the index never leaves its
      ("../../etc/passwd", "/abs/path", "a/b")       directory, so a damaged or planted index
                                                     cannot make a save delete files elsewhere

A value whose shape or dtype differs from the variable it is restored into is not damage: the
saver raises InvalidArgumentError naming the variable, as TF1 does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import struct
import zipfile
import zlib

import numpy as np

from ..errors import DataLossError, NotFoundError, PermissionDeniedError
from ..runtime_strings import join_strings, split_strings

INDEX_FILENAME = "checkpoint.json"
DATA_SUFFIX = ".npz"
INDEX_FORMAT = "staticgrad-checkpoint-index"
INDEX_VERSION = 1

_ZIP_MAGIC = b"PK\x03\x04"
_NPY_SUFFIX = ".npy"
_LENGTHS, _BYTES = ":lengths", ":bytes"  # a string value's two entries (see Archive)
_NUMBER_KINDS = "biufc"         # bool, signed, unsigned, float, complex
_MAX_DEFLATE_RATIO = 1032       # deflate cannot expand more; a bigger claim is a lie
_UNSUPPORTED_ZIP_FLAGS = 0x61   # encrypted (bit 0), patched data (5), strong encryption (6)
_MAX_DIM = 1 << 62              # larger dimensions overflow NumPy's index type
# What a damaged archive raises from zipfile, zlib or numpy's header parser.
_READ_ERRORS = (OSError, EOFError, ValueError, OverflowError, zipfile.BadZipFile, zlib.error,
                struct.error, NotImplementedError)


class CheckpointNotFoundError(NotFoundError, ValueError):
    """No checkpoint file at the path: a NotFoundError, and the ValueError that TF1's
    `Saver.restore` raises (so `except ValueError` in a TF1 program still catches it)."""


# -- the data file: an .npz archive of .npy entries -----------------------------------------------
class Archive:
    """An open, checked `.npz` checkpoint. `names` lists its values (entry names without
    ".npy"); `shape(name)` reads one header, `read(name)` one value, each checked.

    A string value (an object array of bytes) is two numeric entries, `<name>:lengths` (int64,
    the value's shape: each string's length) and `<name>:bytes` (uint8: the strings one after
    another, in C order); a graph name never holds ":", so they meet no variable's name."""

    def __init__(self, path: str, zf: zipfile.ZipFile, entries: dict[str, zipfile.ZipInfo]):
        self.path = path
        self._zf = zf
        self._entries = entries

    @property
    def names(self) -> list[str]:
        return [n[:-len(_LENGTHS)] if n.endswith(_LENGTHS) else n for n in self._entries
                if not n.endswith(_BYTES)]

    def shape(self, name: str) -> tuple[int, ...]:
        """The shape that value `name` declares (its data is not read)."""
        if name + _LENGTHS in self._entries:
            name += _LENGTHS
        with self._member(name) as (member, where):
            return _read_header(member, self._entries[name], where)[0]

    def read(self, name: str) -> np.ndarray:
        """The value `name`: a writable, C-ordered array in native byte order (an object
        array of bytes for strings)."""
        if name + _LENGTHS in self._entries:
            return self._read_strings(name)
        with self._member(name) as (member, where):
            shape, fortran, dtype = _read_header(member, self._entries[name], where)
            nbytes = math.prod(shape) * dtype.itemsize
            raw = member.read(nbytes)
            if len(raw) != nbytes or member.read(1):  # the read to the end checks the CRC
                raise DataLossError(None, None, f"{where} is truncated: {len(raw)} of "
                                                f"{nbytes} bytes of data")
            if dtype.kind == "b" and nbytes and np.frombuffer(raw, np.uint8).max() > 1:
                raise DataLossError(None, None, f"{where} holds bools that are neither 0 nor 1")
            flat = np.frombuffer(raw, dtype=dtype)
            value = flat.reshape(shape[::-1]).T if fortran else flat.reshape(shape)
            return np.array(value, dtype=dtype.newbyteorder("="), order="C")

    def _read_strings(self, name: str) -> np.ndarray:
        where = f"the strings {name!r} of checkpoint file {self.path}"
        if name + _BYTES not in self._entries:
            raise DataLossError(None, None, f"{where} have lengths but no {_BYTES!r} entry")
        try:
            return join_strings(self.read(name + _LENGTHS), self.read(name + _BYTES))
        except ValueError as e:
            raise DataLossError(None, None, f"{where}: {e}") from None

    @contextlib.contextmanager
    def _member(self, name: str):
        info = self._entries[name]
        where = f"entry {info.filename!r} of checkpoint file {self.path}"
        try:
            with self._zf.open(info) as member:
                yield member, where
        except _READ_ERRORS as e:
            raise DataLossError(None, None, f"{where} is corrupt or truncated "
                                            f"({type(e).__name__}: {e})") from None


@contextlib.contextmanager
def open_archive(path: str):
    """The checked `.npz` archive at `path`, or NotFoundError / DataLossError naming it.

    >>> with open_archive("ckpt/model-3.npz") as archive:   # doctest: +SKIP
    ...     archive.read("w")
    """
    try:
        f = open(path, "rb")  # noqa: SIM115 (closed below, after the archive)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise CheckpointNotFoundError(
            None, None, f"The passed save_path is not a valid checkpoint: checkpoint file "
                        f"{path} not found") from None
    except PermissionError as e:
        raise PermissionDeniedError(None, None, f"cannot read checkpoint file {path}: "
                                                f"{e}") from None
    with f:
        try:
            magic = f.read(len(_ZIP_MAGIC))
            if magic != _ZIP_MAGIC:
                what = "is empty" if not magic else "does not start with a zip header"
                raise DataLossError(None, None, f"checkpoint file {path} is not an .npz "
                                                f"archive: it {what} (corrupt, truncated or "
                                                "another kind of file)")
            file_size = os.fstat(f.fileno()).st_size
            f.seek(0)
            zf = zipfile.ZipFile(f)
        except _READ_ERRORS as e:
            raise DataLossError(None, None, f"checkpoint file {path} is corrupt or truncated: "
                                            f"{type(e).__name__}: {e}") from None
        with zf:
            yield Archive(path, zf, _checked_entries(zf, path, file_size))


def _checked_entries(zf: zipfile.ZipFile, path: str,
                     file_size: int) -> dict[str, zipfile.ZipInfo]:
    """{value name: entry} once every entry's zip record is plausible for a file this size."""
    entries: dict[str, zipfile.ZipInfo] = {}
    for info in zf.infolist():
        where = f"entry {info.filename!r} of checkpoint file {path}"

        def damaged(what: str, where=where):
            return DataLossError(None, None, f"{where} {what}")
        if not info.filename.endswith(_NPY_SUFFIX):
            raise damaged("is not a .npy array (a checkpoint holds only .npy entries)")
        name = info.filename[:-len(_NPY_SUFFIX)]
        if name in entries:
            raise damaged("appears twice in the archive")
        if info.flag_bits & _UNSUPPORTED_ZIP_FLAGS:
            raise damaged(f"uses zip features a checkpoint never uses (flags "
                          f"{info.flag_bits:#06x}: encryption or patched data)")
        if info.compress_type == zipfile.ZIP_STORED:
            if info.compress_size != info.file_size:
                raise damaged(f"is stored uncompressed, yet records {info.compress_size} "
                              f"stored and {info.file_size} actual bytes")
        elif info.compress_type == zipfile.ZIP_DEFLATED:
            if info.file_size > info.compress_size * _MAX_DEFLATE_RATIO + 1024:
                raise damaged(f"claims {info.file_size} bytes from {info.compress_size} "
                              "deflated ones, more than deflate can expand")
        else:
            raise damaged(f"uses zip compression method {info.compress_type}; a checkpoint "
                          "is stored (0) or deflated (8)")
        if info.header_offset + info.compress_size > file_size:
            raise damaged(f"claims {info.compress_size} bytes at offset {info.header_offset}, "
                          f"beyond the end of the {file_size}-byte file (truncated?)")
        entries[name] = info
    return entries


def _read_header(member, info: zipfile.ZipInfo, where: str):
    """(shape, fortran_order, dtype) of a .npy entry, checked against the entry's size."""
    major, minor = np.lib.format.read_magic(member)
    if (major, minor) == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
    elif (major, minor) == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
    else:
        raise DataLossError(None, None, f"{where} is .npy format version {major}.{minor}; a "
                                        "checkpoint holds versions 1.0 and 2.0")
    if dtype.hasobject:
        raise DataLossError(None, None, f"{where} holds Python objects (dtype {dtype}), which "
                                        "would need unpickling; checkpoints hold numbers, and "
                                        "staticgrad never unpickles")
    if dtype.kind not in _NUMBER_KINDS or dtype.names is not None or dtype.subdtype is not None:
        raise DataLossError(None, None, f"{where} has dtype {dtype}; checkpoints hold numbers "
                                        "and bools")
    if not all(0 <= d < _MAX_DIM for d in shape):
        raise DataLossError(None, None, f"{where} declares the impossible shape {shape}")
    nbytes = math.prod(shape) * dtype.itemsize
    data_bytes = info.file_size - member.tell()
    if nbytes != data_bytes:
        raise DataLossError(None, None, f"{where} declares shape {shape} of {dtype} "
                                        f"({nbytes} bytes), but holds {data_bytes} bytes of data")
    return shape, fortran, dtype


def write_npz(f, arrays: dict[str, np.ndarray]) -> None:
    """Write {name: array} to the binary file `f` as an uncompressed .npz archive."""
    # What np.savez does, without its keyword arguments: a variable may be named "file".
    with zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, value in arrays.items():
            if value.dtype.kind == "O":  # strings: two numeric entries (see Archive)
                parts = dict(zip((_LENGTHS, _BYTES), split_strings(value)))
            else:
                parts = {"": value}
            for suffix, part in parts.items():
                with zf.open(name + suffix + _NPY_SUFFIX, "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, part, allow_pickle=False)


# -- the index: checkpoint.json -------------------------------------------------------------------
@dataclasses.dataclass
class Index:
    """A directory's index, as stored: plain file names (prefixes) relative to its directory.

    `latest` is None only in an index written before a directory's first checkpoint was in
    place. `adding` and `deleting` are the saver's journal (see saver.py): checkpoints whose
    data file a save was about to put in place, and dropped ones it was about to delete.
    """

    latest: str | None
    paths: list[str]
    timestamps: list[float]
    adding: list[str] = dataclasses.field(default_factory=list)
    deleting: list[str] = dataclasses.field(default_factory=list)


def read_index(path: str) -> Index | None:
    """The index at `path`, None if there is none, or DataLossError naming what is wrong."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except PermissionError as e:
        raise PermissionDeniedError(None, None, f"cannot read checkpoint index {path}: "
                                                f"{e}") from None
    except OSError as e:  # a directory in its place, an I/O error
        raise DataLossError(None, None, f"cannot read checkpoint index {path}: "
                                        f"{type(e).__name__}: {e}") from None
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise DataLossError(None, None, f"checkpoint index {path} is not valid JSON "
                                        f"({type(e).__name__}: {e})") from None

    def damaged(what: str):
        return DataLossError(None, None, f"checkpoint index {path}: {what}")
    if not isinstance(doc, dict) or doc.get("format") != INDEX_FORMAT:
        raise damaged(f"not a staticgrad checkpoint index (no \"format\": {INDEX_FORMAT!r})")
    if doc.get("version") != INDEX_VERSION or isinstance(doc.get("version"), bool):
        raise damaged(f"\"version\" is {_brief(doc.get('version'))}; this staticgrad reads "
                      f"version {INDEX_VERSION}")
    paths = _names(doc, "all_model_checkpoint_paths", damaged, required=True)
    if "model_checkpoint_path" not in doc:
        raise damaged("\"model_checkpoint_path\" is missing")
    latest = doc["model_checkpoint_path"]
    if latest is None:
        if paths:
            raise damaged("\"model_checkpoint_path\" is null, yet checkpoints are listed")
    else:
        latest = _plain_name(latest, "model_checkpoint_path", damaged)
    timestamps = doc.get("all_model_checkpoint_timestamps", [])
    if not isinstance(timestamps, list) or not all(
            isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t)
            for t in timestamps):
        raise damaged(f"\"all_model_checkpoint_timestamps\" must be a list of finite numbers, "
                      f"got {_brief(timestamps)}")
    if timestamps and len(timestamps) != len(paths):
        raise damaged(f"{len(timestamps)} timestamps for {len(paths)} checkpoints")
    return Index(latest, paths, [float(t) for t in timestamps],
                 _names(doc, "adding_checkpoint_paths", damaged),
                 _names(doc, "deleting_checkpoint_paths", damaged))


def _names(doc: dict, field: str, damaged, required: bool = False) -> list[str]:
    if field not in doc and not required:
        return []
    names = doc.get(field)
    if not isinstance(names, list):
        raise damaged(f"\"{field}\" must be a list of file names, got {_brief(names)}")
    names = [_plain_name(n, f"{field}[{i}]", damaged) for i, n in enumerate(names)]
    if len(set(names)) != len(names):
        raise damaged(f"\"{field}\" lists a checkpoint twice")
    return names


def _plain_name(name, field: str, damaged) -> str:
    """A checkpoint prefix that names a file in the index's own directory, and nothing else."""
    if not isinstance(name, str) or not name:
        raise damaged(f"{field} must be a non-empty string, got {_brief(name)}")
    seps = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    if any(s in name for s in seps) or name in (".", "..") or "\0" in name:
        raise damaged(f"{field} is {_brief(name)}, which is not a file name in the index's "
                      "directory (an index never points outside its directory)")
    return name


def _brief(value, limit: int = 60) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def index_text(index: Index) -> str:
    """The JSON text of an index; the journal fields appear only when not empty."""
    doc = {"format": INDEX_FORMAT, "version": INDEX_VERSION,
           "model_checkpoint_path": index.latest,
           "all_model_checkpoint_paths": index.paths,
           "all_model_checkpoint_timestamps": index.timestamps}
    if index.adding:
        doc["adding_checkpoint_paths"] = index.adding
    if index.deleting:
        doc["deleting_checkpoint_paths"] = index.deleting
    return json.dumps(doc, indent=2) + "\n"
