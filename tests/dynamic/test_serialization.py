"""dy.save / dy.load: round trips of tensors and state dicts, atomic writes, and a clear
DataLossError (naming the file and entry) for each kind of damaged or hostile file."""

from __future__ import annotations

import json
import math
import os
import zipfile

import numpy as np
import pytest

import staticgrad.dynamic as dy
from staticgrad.dynamic.serialization import FORMAT, MAX_DEPTH, STRUCTURE
from staticgrad.errors import DataLossError
from staticgrad.train.checkpoint_format import write_npz


def _structure(value) -> dict:
    return {"format": FORMAT, "version": 1, "value": value}


def _write_raw(path, structure, arrays=None) -> str:
    """A file as dy.save lays it out, with any structure (a JSON-able object or raw text)."""
    text = structure if isinstance(structure, str) else json.dumps(structure)
    entries = dict(arrays or {})
    entries[STRUCTURE] = np.frombuffer(text.encode(), np.uint8)
    with open(path, "wb") as f:
        write_npz(f, entries)
    return str(path)


def test_tensors_of_each_dtype_and_shape_round_trip(tmp_path):
    values = {"f32": dy.tensor([[1.5, -2.0]]), "f64": dy.tensor(np.arange(6.0).reshape(2, 3)),
              "i64": dy.arange(4), "bool": dy.tensor([True, False]), "u8": dy.tensor(
                  np.array([0, 255], np.uint8)), "scalar": dy.tensor(3.25),
              "empty": dy.zeros(0, 3), "w": dy.tensor([1.0, 2.0], requires_grad=True)}
    path = tmp_path / "t.npz"
    dy.save(values, path)
    back = dy.load(path)
    assert list(back) == list(values)
    for key, want in values.items():
        got = back[key]
        assert got.dtype == want.dtype and got.shape == want.shape, key
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        assert got.requires_grad == want.requires_grad and got.is_leaf
    one = tmp_path / "one.npz"
    dy.save(dy.tensor([7.0]), one)
    assert dy.load(one).tolist() == [7.0]


def test_nested_state_dicts_keep_their_types_and_shared_tensors(tmp_path):
    w = dy.tensor([1.0, 2.0])
    obj = {"state": {0: {"step": dy.tensor(3.0), "buf": w}, 1: {"buf": w}},
           "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "nesterov": False,
                             "name": "dense", "extra": None, "params": [0, 1]}],
           "floats": [math.inf, -math.inf, math.nan, -0.0, 1e-300], 2.5: "a float key",
           None: "a None key", True: "a bool key", "unicode": "été ✓"}
    path = tmp_path / "nested.npz"
    dy.save(obj, str(path))
    back = dy.load(str(path))
    assert back["state"][0]["buf"] is back["state"][1]["buf"]  # one tensor, saved once
    assert back["param_groups"] == obj["param_groups"]
    assert isinstance(back["param_groups"][0]["betas"], tuple)
    assert back[2.5] == "a float key" and back[None] == "a None key" and back[True]
    assert back["unicode"] == "été ✓"
    floats = back["floats"]
    assert floats[:2] == [math.inf, -math.inf] and math.isnan(floats[2])
    assert math.copysign(1, floats[3]) == -1 and floats[4] == 1e-300
    assert sorted(back["state"]) == [0, 1]
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == [STRUCTURE + ".npy", "t0.npy", "t1.npy"]


def test_an_optimizer_continues_identically_from_a_saved_state_dict(tmp_path):
    w = dy.tensor([1.0, -2.0, 0.5], requires_grad=True)
    opt = dy.optim.Adam([w], lr=0.1, amsgrad=True)

    def train(opt, w, steps):
        for _ in range(steps):
            opt.zero_grad()
            ((w * w * w).sum() + (w * 2).sum()).backward()
            opt.step()
    train(opt, w, 3)
    dy.save({"w": w, "optim": opt.state_dict()}, tmp_path / "ckpt.npz")
    saved = dy.load(tmp_path / "ckpt.npz")
    w2 = saved["w"]
    opt2 = dy.optim.Adam([w2], lr=0.5)
    opt2.load_state_dict(saved["optim"])
    train(opt, w, 3)
    train(opt2, w2, 3)
    assert w2.tolist() == w.tolist()


def test_save_refuses_objects_and_says_to_save_a_state_dict(tmp_path):
    class Module:
        def state_dict(self):
            return {}
    path = tmp_path / "m.npz"
    with pytest.raises(TypeError, match=r"cannot save a Module.*Save its state_dict\(\) "
                                        r"instead: dy.save\(model.state_dict\(\), path\)"):
        dy.save(Module(), path)
    with pytest.raises(TypeError, match="cannot save a set"):
        dy.save({"a": {1, 2}}, path)
    with pytest.raises(TypeError, match="dict key must be"):
        dy.save({(1, 2): 3}, path)
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_DEPTH}"):
        deep = []
        for _ in range(MAX_DEPTH + 5):
            deep = [deep]
        dy.save(deep, path)
    with pytest.raises(TypeError, match="takes a file path"):
        dy.save({}, object())
    assert not os.listdir(tmp_path)  # nothing written, no temporary file left


def test_a_failed_save_leaves_the_old_file(tmp_path):
    path = tmp_path / "keep.npz"
    dy.save({"v": dy.tensor([1.0])}, path)
    with pytest.raises(TypeError):
        dy.save({"v": dy.tensor([2.0]), "bad": object()}, path)
    assert dy.load(path)["v"].tolist() == [1.0]
    assert os.listdir(tmp_path) == ["keep.npz"]


def test_load_missing_file_and_map_location(tmp_path):
    with pytest.raises(FileNotFoundError):
        dy.load(tmp_path / "nope.npz")
    dy.save(1, tmp_path / "x.npz")
    assert dy.load(tmp_path / "x.npz", map_location="cpu", weights_only=True) == 1
    with pytest.raises(ValueError, match="map_location"):
        dy.load(tmp_path / "x.npz", map_location="cuda:0")


# -- damaged and hostile files ---------------------------------------------------------------------
def _damage_truncated(path):
    dy.save({"w": dy.ones(100)}, path)
    data = open(path, "rb").read()
    open(path, "wb").write(data[:len(data) // 2])
    return "corrupt or truncated"


def _damage_not_a_zip(path):
    open(path, "wb").write(b"\x80\x04\x95 a pickle, say")
    return "not an .npz archive"


def _damage_empty(path):
    open(path, "wb").close()
    return "it is empty"


def _damage_bad_json(path):
    _write_raw(path, '{"format": "staticgrad-dynamic-save", "value": [1, 2')
    return f"entry '{STRUCTURE}' is not valid JSON"


def _damage_not_utf8(path):
    with open(path, "wb") as f:
        write_npz(f, {STRUCTURE: np.array([0xff, 0xfe, 0x00], np.uint8)})
    return "is not valid JSON"


def _damage_json_too_deep_for_the_parser(path):
    _write_raw(path, "[" * 200_000 + "]" * 200_000)
    return "is not valid JSON"


def _damage_structure_too_deep(path):
    value = 1
    for _ in range(MAX_DEPTH + 1):
        value = {"list": [value]}
    _write_raw(path, _structure(value))
    return f"nested deeper than {MAX_DEPTH} levels"


def _damage_missing_array(path):
    _write_raw(path, _structure({"dict": [["w", {"tensor": "t5", "requires_grad": False}]]}))
    return "value\\['w'\\] refers to entry 't5', which the file lacks"


def _damage_structure_names_itself(path):
    _write_raw(path, _structure({"tensor": STRUCTURE, "requires_grad": False}))
    return "value is not a tensor reference"


def _damage_pickle_array(path):
    with open(path, "wb") as f, zipfile.ZipFile(f, "w") as zf:
        with zf.open("t0.npy", "w") as member:
            np.lib.format.write_array(member, np.array([{"os": "system"}], dtype=object),
                                      allow_pickle=True)
        text = json.dumps(_structure({"tensor": "t0", "requires_grad": False})).encode()
        with zf.open(STRUCTURE + ".npy", "w") as member:
            np.lib.format.write_array(member, np.frombuffer(text, np.uint8))
    return "entry 't0.npy' .*holds Python objects.*never unpickles"


def _damage_structure_of_strings(path):
    with open(path, "wb") as f:
        write_npz(f, {STRUCTURE: np.array([b"{}"], dtype=object)})
    return f"entry '{STRUCTURE}' is object"


def _damage_not_our_format(path):
    _write_raw(path, {"format": "something-else", "value": 1})
    return "not a dy.save structure"


def _damage_future_version(path):
    _write_raw(path, {"format": FORMAT, "version": 2, "value": 1})
    return "is version 2; this staticgrad reads version 1"


def _damage_unknown_node(path):
    _write_raw(path, _structure({"list": [1, {"set": [1, 2]}]}))
    return "value\\[1\\] is not a saved value \\(\\{\"set\": \\[1, 2\\]\\}\\)"


def _damage_bad_pair(path):
    _write_raw(path, _structure({"dict": [["a", 1, 2]]}))
    return "value item 0 is not a \\[key, value\\] pair"


def _damage_int_tensor_requiring_grad(path):
    _write_raw(path, _structure({"tensor": "t0", "requires_grad": True}),
               {"t0": np.arange(3)})
    return "entry 't0' requires grad but holds int64"


def _damage_complex_array(path):
    _write_raw(path, _structure({"tensor": "t0", "requires_grad": False}),
               {"t0": np.ones(2, np.complex64)})
    return "entry 't0' holds complex64 values"


def _damage_no_structure(path):
    with open(path, "wb") as f:
        write_npz(f, {"t0": np.ones(2)})
    return f"no '{STRUCTURE}' entry"


DAMAGE = [f for name, f in sorted(globals().items()) if name.startswith("_damage_")]


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__.removeprefix("_damage_"))
def test_a_damaged_file_raises_data_loss_naming_the_file_and_what(tmp_path, damage):
    path = str(tmp_path / "damaged.npz")
    what = damage(path)
    with pytest.raises(DataLossError, match=what) as info:
        dy.load(path)
    assert path in str(info.value)
