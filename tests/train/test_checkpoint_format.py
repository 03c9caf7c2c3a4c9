"""Damaged checkpoint files, one row per kind of damage: each raises DataLossError naming the
file (and the entry or field), and a failed restore leaves the session's variables as they
were. The table in staticgrad/train/checkpoint_format.py's docstring says what each one means."""

from __future__ import annotations

import io
import json
import os
import struct
import warnings
import zipfile

import numpy as np
import pytest

import staticgrad as sg

W = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
B = np.array([0.5, -0.5], dtype=np.float32)
FLAG = np.array([True, False])


@pytest.fixture
def ckpt(g, tmp_path):
    """One good checkpoint (model-1) of w, b and flag; the session then holds other values."""
    variables = {"w": sg.Variable(W, name="w"), "b": sg.Variable(B, name="b"),
                 "flag": sg.Variable(FLAG, name="flag")}
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    saver = sg.train.Saver()
    prefix = saver.save(sess, str(tmp_path / "model"), global_step=1)
    for value, v in zip((W, B, FLAG), variables.values()):
        v.load(np.zeros_like(value), sess)
    return {"sess": sess, "saver": saver, "prefix": prefix, "vars": variables, "dir": tmp_path,
            "npz": tmp_path / "model-1.npz", "index": tmp_path / "checkpoint.json"}


def assert_session_unchanged(ckpt):
    for name, v in ckpt["vars"].items():
        value = ckpt["sess"].run(v)
        np.testing.assert_array_equal(value, np.zeros_like(value), err_msg=name)


# -- building damaged archives --------------------------------------------------------------------
def npy_bytes(array) -> bytes:
    f = io.BytesIO()
    np.lib.format.write_array(f, np.asarray(array), allow_pickle=True)
    return f.getvalue()


def npy_with_header(header: str, data: bytes, version: bytes = b"\x01\x00") -> bytes:
    """A .npy entry with a hand-written header dict (padded as numpy pads it)."""
    text = header.encode("latin1")
    length = "<H" if version == b"\x01\x00" else "<I"
    prelude = 6 + 2 + struct.calcsize(length)
    text += b" " * (63 - (prelude + len(text)) % 64) + b"\n"
    return b"\x93NUMPY" + version + struct.pack(length, len(text)) + text + data


def write_zip(path, entries, compression=zipfile.ZIP_STORED) -> None:
    """A plain (not zip64) archive of {entry name: bytes}, like np.savez of small arrays."""
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, data in entries:
            zf.writestr(name, data)


def good_entries():
    return [("w.npy", npy_bytes(W)), ("b.npy", npy_bytes(B)), ("flag.npy", npy_bytes(FLAG))]


def replace_entry(entry: str, data: bytes):
    def damage(ckpt):
        write_zip(ckpt["npz"], [(n, data if n == entry else d) for n, d in good_entries()])
    return damage


def patch_central_directory(entry: str, offset: int, value: bytes):
    """Overwrite bytes of `entry`'s central-directory record (offsets from its signature)."""
    def damage(ckpt):
        write_zip(ckpt["npz"], good_entries())
        data = bytearray(ckpt["npz"].read_bytes())
        at = data.index(b"PK\x01\x02")
        while data[at + 46:at + 46 + len(entry)] != entry.encode():
            at = data.index(b"PK\x01\x02", at + 1)
        data[at + offset:at + offset + len(value)] = value
        ckpt["npz"].write_bytes(bytes(data))
    return damage


def patch_bytes(find: bytes, replace: bytes, after: bytes = b""):
    def damage(ckpt):
        data = ckpt["npz"].read_bytes()
        start = data.index(after) if after else 0
        at = data.index(find, start)
        ckpt["npz"].write_bytes(data[:at] + replace + data[at + len(find):])
    return damage


def truncate_to(fraction: float):
    def damage(ckpt):
        data = ckpt["npz"].read_bytes()
        ckpt["npz"].write_bytes(data[:int(len(data) * fraction)])
    return damage


def write_raw(data: bytes):
    def damage(ckpt):
        ckpt["npz"].write_bytes(data)
    return damage


def pickled_objects(ckpt):
    np.savez(ckpt["npz"], w=np.array([{"a": 1}, None], dtype=object), b=B, flag=FLAG)


def single_npy(ckpt):
    ckpt["npz"].write_bytes(npy_bytes(W))


def duplicate_entry(ckpt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile: "Duplicate name"
        write_zip(ckpt["npz"], good_entries() + [("w.npy", npy_bytes(W * 2))])


def extra_entry(ckpt):
    write_zip(ckpt["npz"], good_entries() + [("README.txt", b"hello")])


def deflate_bomb_claim(ckpt):
    """A deflated entry whose directory claims far more bytes than deflate can produce."""
    write_zip(ckpt["npz"], good_entries(), compression=zipfile.ZIP_DEFLATED)
    data = bytearray(ckpt["npz"].read_bytes())
    at = data.index(b"PK\x01\x02")
    data[at + 24:at + 28] = struct.pack("<I", 0xFFFFFFF0)  # uncompressed size of w.npy
    ckpt["npz"].write_bytes(bytes(data))


HUGE = 10 ** 12  # 4 TB of float32: the 3.6 TiB MemoryError of issue 21

# (id, damage, the entry the message must name, or None when the file as a whole is damaged)
NPZ_DAMAGE = [
    ("empty", write_raw(b""), None),
    ("garbage", write_raw(b"this is not a checkpoint at all" * 10), None),
    ("wrong-zip-magic", patch_bytes(b"PK\x03\x04", b"PK\x07\x08"), None),
    ("single-npy-not-npz", single_npy, None),
    ("truncated-half", truncate_to(0.5), None),
    ("truncated-central-directory", truncate_to(0.95), None),
    ("truncated-to-first-header", truncate_to(0.05), None),
    ("zip-version-byte", patch_central_directory("w.npy", 6, b"\x63"), None),
    ("zip-compression-method", patch_central_directory("b.npy", 10, b"\x63\x00"), "b.npy"),
    ("zip-encrypted-flag", patch_central_directory("b.npy", 8, b"\x01\x00"), "b.npy"),
    ("zip-sizes-beyond-file", patch_central_directory("w.npy", 20, b"\xf0\xff\xff\x7f" * 2),
     "w.npy"),
    ("zip-stored-sizes-differ", patch_central_directory("b.npy", 24, b"\x01\x00\x00\x00"),
     "b.npy"),
    ("zip-crc-field", patch_central_directory("b.npy", 16, b"\x00\x00\x00\x00"), "b.npy"),
    ("data-byte-flipped-bad-crc", patch_bytes(b"\x00\x00\x00?", b"\x00\x00\x00\xc0", b"b.npy"),
     "b.npy"),
    ("deflate-ratio-impossible", deflate_bomb_claim, "w.npy"),
    ("duplicate-entry", duplicate_entry, "w.npy"),
    ("entry-not-npy", extra_entry, "README.txt"),
    ("npy-magic", replace_entry("b.npy", b"\x93NUMPX" + npy_bytes(B)[6:]), "b.npy"),
    ("npy-version", replace_entry("b.npy", npy_with_header(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", B.tobytes(),
        version=b"\x09\x09")), "b.npy"),
    ("npy-header-not-a-dict", replace_entry("b.npy", npy_with_header(
        "__import__('os').system('echo pwned')", B.tobytes())), "b.npy"),
    ("npy-header-wrong-keys", replace_entry("b.npy", npy_with_header(
        "{'descr': '<f4', 'fortran': False, 'shape': (2,), }", B.tobytes())), "b.npy"),
    ("npy-header-bad-descr", replace_entry("b.npy", npy_with_header(
        "{'descr': 'no such dtype', 'fortran_order': False, 'shape': (2,), }", B.tobytes())),
     "b.npy"),
    ("npy-header-too-long", replace_entry("b.npy", npy_with_header(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }" + " " * 20000,
        B.tobytes(), version=b"\x02\x00")), "b.npy"),
    ("dtype-object-pickle", pickled_objects, "w.npy"),
    ("dtype-string", replace_entry("b.npy", npy_bytes(np.array(["ab", "cd"]))), "b.npy"),
    ("dtype-structured", replace_entry("b.npy", npy_bytes(
        np.zeros(2, dtype=[("x", "<f4")]))), "b.npy"),
    ("dtype-datetime", replace_entry("b.npy", npy_bytes(
        np.array(["2020-01-01"], dtype="datetime64[D]"))), "b.npy"),
    ("huge-declared-shape", replace_entry("w.npy", npy_with_header(
        f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({HUGE},), }}", W.tobytes())),
     "w.npy"),
    ("shape-disagrees-with-data", replace_entry("w.npy", npy_with_header(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 3), }", W.tobytes())), "w.npy"),
    ("negative-dimension", replace_entry("w.npy", npy_with_header(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }", W.tobytes())),
     "w.npy"),
    ("data-truncated-in-entry", replace_entry("w.npy", npy_bytes(W)[:-4]), "w.npy"),
    ("bool-byte-not-0-or-1", replace_entry("flag.npy", npy_bytes(FLAG)[:-2] + b"\x02\x00"),
     "flag.npy"),
]


@pytest.mark.parametrize("damage, entry", [row[1:] for row in NPZ_DAMAGE],
                         ids=[row[0] for row in NPZ_DAMAGE])
def test_a_damaged_data_file_is_data_loss_and_restores_nothing(ckpt, damage, entry):
    damage(ckpt)
    with pytest.raises(sg.errors.DataLossError) as info:
        ckpt["saver"].restore(ckpt["sess"], ckpt["prefix"])
    message = str(info.value)
    assert str(ckpt["npz"]) in message
    if entry is not None:
        assert repr(entry) in message
    assert_session_unchanged(ckpt)


@pytest.mark.parametrize("damage, entry", [row[1:] for row in NPZ_DAMAGE],
                         ids=[row[0] for row in NPZ_DAMAGE])
def test_load_variable_of_a_damaged_file_is_data_loss(ckpt, damage, entry):
    damage(ckpt)
    with pytest.raises(sg.errors.DataLossError, match=str(ckpt["npz"])):
        for name in ("w", "b", "flag"):
            sg.train.load_variable(ckpt["prefix"], name)


def test_a_huge_declared_shape_is_refused_before_allocating(ckpt):
    """The archive is a few hundred bytes; its header claims 4 TB. No MemoryError: the size is
    checked against the entry before anything is allocated, and list_variables reads only
    headers, so it reports the damage too."""
    replace_entry("w.npy", npy_with_header(
        f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({HUGE},), }}", W.tobytes()))(ckpt)
    with pytest.raises(sg.errors.DataLossError, match=r"declares shape \(1000000000000,\)"):
        sg.train.list_variables(ckpt["prefix"])


def test_an_object_array_is_never_unpickled(ckpt, monkeypatch):
    import pickle
    pickled_objects(ckpt)

    def refuse(*args, **kwargs):
        raise AssertionError("a checkpoint was unpickled")
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    with pytest.raises(sg.errors.DataLossError, match="never unpickles"):
        ckpt["saver"].restore(ckpt["sess"], ckpt["prefix"])


def test_files_numpy_writes_are_read(ckpt):
    """np.savez, np.savez_compressed, big-endian and Fortran-ordered entries all restore."""
    for writer in (np.savez, np.savez_compressed):
        writer(ckpt["npz"], w=np.asfortranarray(W), b=B.astype(">f4"), flag=FLAG)
        ckpt["saver"].restore(ckpt["sess"], ckpt["prefix"])
        np.testing.assert_array_equal(ckpt["sess"].run(ckpt["vars"]["w"]), W)
        b = ckpt["sess"].run(ckpt["vars"]["b"])
        assert b.dtype == np.float32 and b.dtype.isnative
        np.testing.assert_array_equal(b, B)
    assert sg.train.list_variables(ckpt["prefix"]) == [("b", [2]), ("flag", [2]), ("w", [2, 2])]


# -- damaged indexes ------------------------------------------------------------------------------
def index_doc(**changes):
    doc = {"format": "staticgrad-checkpoint-index", "version": 1,
           "model_checkpoint_path": "model-1", "all_model_checkpoint_paths": ["model-1"],
           "all_model_checkpoint_timestamps": [1700000000.5]}
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not DROP}


DROP = object()
DEEP = 100_000

# (id, index file bytes, a piece of the message besides the index's path)
INDEX_DAMAGE = [
    ("not-json", b"not json", "not valid JSON"),
    ("invalid-utf8", b'{"format": "\xff\xfe"}', "not valid JSON"),
    ("nested-deep", b"[" * DEEP + b"]" * DEEP, "not valid JSON"),
    ("huge-int-literal", json.dumps(index_doc()).replace("1700000000.5", "1" * 5000).encode(),
     "not valid JSON"),
    ("array", b"[1, 2]", "not a staticgrad checkpoint index"),
    ("other-format", json.dumps(index_doc(format="other")).encode(), "not a staticgrad"),
    ("version-2", json.dumps(index_doc(version=2)).encode(), '"version" is 2'),
    ("version-string", json.dumps(index_doc(version="1")).encode(), '"version" is "1"'),
    ("version-bool", json.dumps(index_doc(version=True)).encode(), '"version" is true'),
    ("latest-missing", json.dumps(index_doc(model_checkpoint_path=DROP)).encode(),
     "model_checkpoint_path"),
    ("latest-number", json.dumps(index_doc(model_checkpoint_path=3)).encode(),
     "model_checkpoint_path"),
    ("latest-null-with-paths", json.dumps(index_doc(model_checkpoint_path=None)).encode(),
     "is null"),
    ("paths-missing", json.dumps(index_doc(all_model_checkpoint_paths=DROP)).encode(),
     "all_model_checkpoint_paths"),
    ("paths-not-a-list", json.dumps(index_doc(all_model_checkpoint_paths="model-1")).encode(),
     "all_model_checkpoint_paths"),
    ("path-null", json.dumps(index_doc(all_model_checkpoint_paths=[None])).encode(),
     "all_model_checkpoint_paths[0]"),
    ("path-twice", json.dumps(index_doc(all_model_checkpoint_paths=["model-1", "model-1"],
                                        all_model_checkpoint_timestamps=[1, 2])).encode(),
     "twice"),
    ("timestamp-null", json.dumps(index_doc(all_model_checkpoint_timestamps=[None])).encode(),
     "all_model_checkpoint_timestamps"),
    ("timestamp-string", json.dumps(index_doc(all_model_checkpoint_timestamps=["noon"])).encode(),
     "all_model_checkpoint_timestamps"),
    ("timestamp-nan", json.dumps(index_doc(all_model_checkpoint_timestamps=[float("nan")])
                                 ).encode(), "finite"),
    ("timestamps-not-a-list", json.dumps(index_doc(all_model_checkpoint_timestamps=5)).encode(),
     "all_model_checkpoint_timestamps"),
    ("timestamps-count", json.dumps(index_doc(all_model_checkpoint_timestamps=[1, 2])).encode(),
     "2 timestamps for 1 checkpoints"),
    ("latest-escapes", json.dumps(index_doc(model_checkpoint_path="../../etc/passwd")).encode(),
     "never points outside"),
    ("latest-absolute", json.dumps(index_doc(model_checkpoint_path="/etc/passwd")).encode(),
     "never points outside"),
    ("path-escapes", json.dumps(index_doc(all_model_checkpoint_paths=["../victim"])).encode(),
     "all_model_checkpoint_paths[0]"),
    ("path-in-subdirectory", json.dumps(index_doc(all_model_checkpoint_paths=["a/b"])).encode(),
     "never points outside"),
    ("path-dot-dot", json.dumps(index_doc(all_model_checkpoint_paths=[".."])).encode(),
     "never points outside"),
    ("journal-escapes", json.dumps(index_doc(deleting_checkpoint_paths=["../victim"])).encode(),
     "deleting_checkpoint_paths[0]"),
    ("journal-not-a-list", json.dumps(index_doc(adding_checkpoint_paths="model-2")).encode(),
     "adding_checkpoint_paths"),
]


@pytest.mark.parametrize("content, message", [row[1:] for row in INDEX_DAMAGE],
                         ids=[row[0] for row in INDEX_DAMAGE])
def test_a_damaged_index_is_data_loss_naming_it_and_the_field(ckpt, content, message):
    ckpt["index"].write_bytes(content)
    for call in (sg.train.latest_checkpoint, sg.train.get_checkpoint_state):
        with pytest.raises(sg.errors.DataLossError) as info:
            call(str(ckpt["dir"]))
        assert str(ckpt["index"]) in str(info.value)
        assert message in str(info.value)


def test_a_null_timestamp_in_the_index_is_data_loss(ckpt):
    """Issue 21: it was a TypeError from float(None)."""
    ckpt["index"].write_text(json.dumps(index_doc(all_model_checkpoint_timestamps=[None])))
    with pytest.raises(sg.errors.DataLossError, match="all_model_checkpoint_timestamps"):
        sg.train.latest_checkpoint(str(ckpt["dir"]))


def test_a_zip_version_byte_is_data_loss(ckpt):
    """Issue 21: it was a NotImplementedError from zipfile."""
    patch_central_directory("w.npy", 6, b"\x63")(ckpt)
    with pytest.raises(sg.errors.DataLossError, match="corrupt"):
        ckpt["saver"].restore(ckpt["sess"], ckpt["prefix"])
    assert_session_unchanged(ckpt)


def test_a_planted_index_cannot_make_a_save_delete_files_elsewhere(g, tmp_path):
    """An index naming files outside its directory is refused (with a warning) by a save,
    which writes a fresh index; max_to_keep deletes only what this directory's index names."""
    victim = tmp_path / "victim.npz"
    victim.write_bytes(b"precious")
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.json").write_text(json.dumps(index_doc(
        model_checkpoint_path="../victim", all_model_checkpoint_paths=["../victim"],
        deleting_checkpoint_paths=["../victim"])))
    w = sg.Variable(1.0, name="w")
    sess = sg.Session()
    sess.run(w.initializer)
    saver = sg.train.Saver(max_to_keep=1)
    with pytest.warns(UserWarning, match="never points outside.*writes a new index"):
        saver.save(sess, str(run / "model"), global_step=1)
    for step in (2, 3):
        saver.save(sess, str(run / "model"), global_step=step)
    assert victim.read_bytes() == b"precious"
    assert sorted(os.listdir(run)) == ["checkpoint.json", "model-3.npz"]


def test_string_lengths_whose_sum_wraps_around_are_data_loss(g, tmp_path):
    # Four lengths of about 2**62 add up, in int64, to the 3 bytes the file holds; they were
    # read as strings cut from the wrong places instead of as damage.
    sg.Variable(["ab", "c", "d", "e"], name="words")
    saver = sg.train.Saver()
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    path = saver.save(sess, str(tmp_path / "m"))
    lengths = np.array([2**62, 2**62, 2**62, 2**62 + 3], np.int64)
    with zipfile.ZipFile(path + ".npz", "w") as zf:
        for name, value in (("words:lengths", lengths),
                            ("words:bytes", np.frombuffer(b"abc", np.uint8))):
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, value)
            zf.writestr(name + ".npy", buffer.getvalue())
    with pytest.raises(sg.errors.DataLossError, match="'words'.*do not add up"):
        saver.restore(sg.Session(), path)
