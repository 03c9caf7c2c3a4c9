"""Reproducers from an attacker's review of declared attribute types (issue 21).

Each test states the behaviour that should hold; it is marked xfail(strict=True) while the
bug stands, so fixing the bug makes the test pass and the mark must then be removed.
"""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.errors import DataLossError, InvalidArgumentError
from staticgrad.graph_io import GraphFormatError
from staticgrad.ops.creation import create_operation


def _doc(*extra_ops, shape=(2, 2)):
    g = sg.Graph()
    with g.as_default():
        sg.placeholder(sg.float32, list(shape), name="x")
        doc = sg.train.export_meta_graph()
    doc["ops"].extend(extra_ops)
    return doc


def _op(name, op_type, inputs, attrs, outputs=()):
    return {"name": name, "type": op_type, "inputs": list(inputs), "control_inputs": [],
            "attrs": attrs, "outputs": list(outputs), "location": ["m.py", 1]}


def _nested(depth):
    v = {"type": "int", "value": 1}
    for _ in range(depth):
        v = {"type": "tuple", "value": [v]}
    return v


# -- wrong crashes: exceptions other than the documented ones ----------------------------------
def test_a_float_attr_holding_a_huge_int_is_a_value_error():
    x = sg.placeholder(sg.float32, [2])
    with pytest.raises(ValueError, match="alpha"):
        create_operation(x.graph, "LeakyRelu", [x], {"alpha": 10 ** 400})


def test_a_graph_file_float_attr_holding_a_huge_int_is_a_graph_format_error():
    doc = _doc(_op("v", "LeakyRelu", ["x:0"], {"alpha": {"type": "int", "value": 10 ** 400}},
                   [{"dtype": "float32", "shape": [2, 2]}]))
    with sg.Graph().as_default(), pytest.raises(GraphFormatError, match="alpha"):
        sg.train.import_meta_graph(doc)


def test_a_float_tag_holding_a_huge_int_is_a_graph_format_error():
    doc = _doc(_op("v", "LeakyRelu", ["x:0"], {"alpha": {"type": "float", "value": 10 ** 400}},
                   [{"dtype": "float32", "shape": [2, 2]}]))
    with sg.Graph().as_default(), pytest.raises(GraphFormatError):
        sg.train.import_meta_graph(doc)


def test_shape_of_a_tensor_with_a_dim_above_int32_is_not_an_overflow_error():
    x = sg.placeholder(sg.float32, [2 ** 40])
    try:
        sg.shape(x)  # TF1: fine at build time (int32 overflow is a run-time error)
    except OverflowError as e:
        pytest.fail(f"OverflowError: {e}")
    except (ValueError, TypeError):
        pass


def test_size_of_a_tensor_above_int32_is_not_an_overflow_error():
    x = sg.placeholder(sg.float32, [2 ** 20, 2 ** 20])
    try:
        sg.size(x, out_type=sg.int32)
    except OverflowError as e:
        pytest.fail(f"OverflowError: {e}")
    except (ValueError, TypeError):
        pass


def test_a_deeply_nested_attr_value_is_a_graph_format_error():
    doc = _doc(_op("v", "Transpose", ["x:0"], {"perm": _nested(600)},
                   [{"dtype": "float32", "shape": [2, 2]}]))
    with sg.Graph().as_default(), pytest.raises(GraphFormatError):
        sg.train.import_meta_graph(doc)


def test_a_deeply_nested_collection_value_is_a_graph_format_error():
    doc = _doc()
    doc["collections"]["k"] = [{"value": _nested(600)}]
    with sg.Graph().as_default(), pytest.raises(GraphFormatError):
        sg.train.import_meta_graph(doc)


def test_a_file_nested_200000_levels_deep_is_a_graph_format_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"format": "staticgrad-graph", "version": 1, "ops": [], "variables": [], '
                    '"collections": {"k": [{"value": ' + "[" * 200_000 + "]" * 200_000 + "}]}}")
    with sg.Graph().as_default(), pytest.raises(GraphFormatError):
        sg.train.import_meta_graph(str(path))


def test_a_file_with_a_5000_digit_int_is_a_graph_format_error(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(_doc()).replace('"seed": null', '"seed": ' + "1" * 5000))
    with sg.Graph().as_default(), pytest.raises(GraphFormatError):
        sg.train.import_meta_graph(str(path))


def test_drawing_a_deeply_scoped_name_does_not_recurse():
    g = sg.Graph()
    with g.as_default():
        sg.placeholder(sg.float32, [2], name="/".join(["a"] * 1200))
    from staticgrad import viz
    assert "digraph" in viz.to_dot(g)


def _graph_file_and_old_dot(tmp_path):
    """g.json (a one-placeholder graph) and old.dot, an earlier drawing to keep intact."""
    with sg.Graph().as_default():
        sg.placeholder(sg.float32, [2], name="x")
        sg.train.export_meta_graph(str(tmp_path / "g.json"))
    out = tmp_path / "old.dot"
    out.write_text("digraph old {}\n")
    return out


def test_a_failed_draw_leaves_the_existing_dot_file_alone(tmp_path, monkeypatch):
    """cli.cmd_draw opened (truncated) the .dot output before to_dot ran. The attacker's
    to_dot failure was a 1200-level scope (a RecursionError, fixed since): any failure will do."""
    from staticgrad import viz
    from staticgrad.cli import main
    out = _graph_file_and_old_dot(tmp_path)

    def failing_to_dot(*args, **kwargs):
        raise RuntimeError("to_dot failed")
    monkeypatch.setattr(viz, "to_dot", failing_to_dot)
    with pytest.raises(SystemExit):
        main(["draw", str(tmp_path / "g.json"), "-o", str(out)])
    assert out.read_text() == "digraph old {}\n"


def test_a_failed_dot_write_leaves_the_existing_dot_file_alone(tmp_path, monkeypatch):
    import os

    from staticgrad.cli import main
    out = _graph_file_and_old_dot(tmp_path)

    def failing_fsync(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(SystemExit):
        main(["draw", str(tmp_path / "g.json"), "-o", str(out)])
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json", "old.dot"]  # no temp file
    assert out.read_text() == "digraph old {}\n"
    main(["draw", str(tmp_path / "g.json"), "-o", str(out)])
    assert '"x"' in out.read_text()


def test_a_file_putting_a_tensor_in_the_variables_collection_is_refused():
    doc = _doc()
    doc["collections"]["variables"] = [{"tensor": "x:0"}]
    with sg.Graph().as_default():
        try:
            sg.train.import_meta_graph(doc)
        except GraphFormatError:
            return
        sg.global_variables_initializer()


def test_a_missing_attr_under_gradient_override_map_is_a_type_error():
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [2])
        with g.gradient_override_map({"Softmax": "Identity"}), \
                pytest.raises(TypeError, match="needs attribute 'axis'"):
            g.create_op("Softmax", [x], {})


def test_a_defaulted_attr_under_gradient_override_map_gets_its_default():
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [2])
        with g.gradient_override_map({"ZerosLike": "Identity"}):
            assert g.create_op("ZerosLike", [x], {}).outputs[0].dtype is sg.float32


def test_unpack_with_num_zero_is_refused_at_build_time():
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [2, 3])
        try:
            op = create_operation(g, "Unpack", [x], {"num": 0, "axis": 1})
        except ValueError:
            return
        with sg.Session() as s:
            s.run(op, {x: np.zeros((2, 3), np.float32)})  # SyntaxError today


def test_unpack_num_must_match_the_axis_size():
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [2, 3])
        with pytest.raises(ValueError):
            create_operation(g, "Unpack", [x], {"num": 5, "axis": 1})


def test_a_long_variable_name_that_is_a_valid_op_name_works():
    with sg.Graph().as_default():
        sg.Variable(np.zeros(2, np.float32), name="a" * 5000)


def test_a_name_with_a_trailing_newline_is_refused():
    with sg.Graph().as_default(), pytest.raises(ValueError):
        sg.random_uniform([2], name="r\n")


def test_a_node_named_fast_does_not_shadow_runtime_fast(monkeypatch):
    from staticgrad.backends.numpy import fast as runtime_fast
    monkeypatch.setattr(runtime_fast, "available", lambda: True)  # as where numba works
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [300, 300], name="x")
        c = sg.constant(np.full((300, 300), 2, np.float32), name="fast")
        y = sg.exp(x * c) + 1.0
        with sg.Session() as s:
            out = s.run(y, {x: np.zeros((300, 300), np.float32)})
    assert np.all(out == 2.0)


def test_sum_to_a_higher_rank_is_refused_with_a_documented_error():
    from staticgrad.ops.array_ops import sum_to
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [3])
        try:
            y = sum_to(x, [1, 2, 3])
        except ValueError:
            return
        with sg.Session() as s, pytest.raises(InvalidArgumentError):
            s.run(y, {x: np.ones(3, np.float32)})


def test_unstack_too_many_from_a_constant_is_not_an_assertion_error():
    with sg.Graph().as_default():
        m = sg.constant(np.ones((2, 3), np.float32))
        try:
            outs = sg.unstack(m, num=4, axis=1)
        except ValueError:
            return
        with sg.Session() as s, pytest.raises(InvalidArgumentError):
            s.run(outs[3])


def test_a_negative_seed_either_is_refused_at_build_or_runs():
    with sg.Graph().as_default():
        try:
            r = sg.random_uniform([2], seed=-3)
        except (ValueError, TypeError):
            return
        with sg.Session() as s:
            assert s.run(r).shape == (2,)


# -- wrong results --------------------------------------------------------------------------------
def test_sum_to_never_reshapes_silently():
    from staticgrad.ops.array_ops import sum_to
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [4])
        try:
            y = sum_to(x, [2, 2])
        except ValueError:
            return
        with sg.Session() as s, pytest.raises(InvalidArgumentError):
            s.run(y, {x: np.arange(4, dtype=np.float32)})


def test_unstack_with_the_wrong_num_is_refused_not_silently_sliced():
    with sg.Graph().as_default():
        x = sg.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
        with pytest.raises(ValueError):
            sg.unstack(x, num=1, axis=1)


def test_a_constant_cannot_change_after_it_is_made():
    g = sg.Graph()
    with g.as_default():
        base = np.ones(3, np.float32)
        view = base[:]
        view.setflags(write=False)
        c = g.create_op("Const", [], {"value": view, "dtype": sg.float32}).outputs[0]
        y = c * 2.0
        base[:] = 7
        with sg.Session() as s:
            cv, yv = s.run([c, y])
    assert np.array_equal(yv, cv * 2.0)


# -- checkpoints (issue 21 items still open) ------------------------------------------------------
def _saved(tmp_path):
    g = sg.Graph()
    with g.as_default():
        sg.Variable(np.zeros(3, np.float32), name="w")
        saver = sg.train.Saver()
        sess = sg.Session(graph=g)
        sess.run(sg.global_variables_initializer())
        prefix = saver.save(sess, str(tmp_path / "model"), global_step=1)
    return g, saver, sess, prefix


@pytest.mark.parametrize("stamp", [None, "x", [1]])
def test_a_bad_timestamp_in_the_index_is_data_loss(tmp_path, stamp):
    _saved(tmp_path)
    index = tmp_path / "checkpoint.json"
    doc = json.loads(index.read_text())
    doc["all_model_checkpoint_timestamps"] = [stamp]
    index.write_text(json.dumps(doc))
    with pytest.raises(DataLossError):
        sg.train.latest_checkpoint(str(tmp_path))


def test_a_checkpoint_header_declaring_a_huge_shape_is_data_loss(tmp_path):
    g, saver, sess, _ = _saved(tmp_path)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "<f4", "fortran_order": False, "shape": (2 ** 40,)})
    buf.write(b"\0" * 12)
    with zipfile.ZipFile(tmp_path / "bad.npz", "w") as z:
        z.writestr("w.npy", buf.getvalue())
    with g.as_default(), pytest.raises(DataLossError):
        saver.restore(sess, str(tmp_path / "bad"))


@pytest.mark.parametrize("damage", ["method", "version", "encrypted"])
def test_a_damaged_zip_entry_is_data_loss(tmp_path, damage):
    g, saver, sess, prefix = _saved(tmp_path)
    raw = bytearray((tmp_path / "model-1.npz").read_bytes())
    central = raw.find(b"PK\x01\x02")
    if damage == "method":
        raw[8], raw[central + 10] = 99, 99
    elif damage == "version":
        raw[4], raw[central + 6] = 99, 99
    else:
        raw[6] |= 1
        raw[central + 8] |= 1
    (tmp_path / "bad.npz").write_bytes(bytes(raw))
    with g.as_default(), pytest.raises(DataLossError):
        saver.restore(sess, str(tmp_path / "bad"))


# -- file safety ----------------------------------------------------------------------------------
def test_a_failed_export_leaves_the_previous_pair_intact(tmp_path):
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [3], name="x")
        w = sg.Variable(np.ones(3, np.float32), name="w")
        y = x * w
        sess = sg.Session(graph=g)
        sess.run(sg.global_variables_initializer())
        sg.export(y, [x], str(tmp_path / "m.py"), session=sess)
        before = (tmp_path / "m.npz").read_bytes()
        sess.run(w.assign([5.0, 5.0, 5.0]))
        (tmp_path / "m.py").rename(tmp_path / "kept.py")
        (tmp_path / "m.py").mkdir()  # the .py cannot be replaced
        with pytest.raises(OSError):
            sg.export(y, [x], str(tmp_path / "m.py"), session=sess)
    assert (tmp_path / "m.npz").read_bytes() == before


def test_max_to_keep_never_deletes_outside_the_checkpoint_directory(tmp_path):
    """The attacker's index naming "../precious" is refused as damaged by read_index (an index
    holds plain file names); the same path given to recover_last_checkpoints directly is
    refused by the next save, before it writes or deletes anything."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    victim = tmp_path / "precious.npz"
    g = sg.Graph()
    with g.as_default():
        sg.Variable(np.zeros(3, np.float32), name="w")
        saver = sg.train.Saver(max_to_keep=1)
        sess = sg.Session(graph=g)
        sess.run(sg.global_variables_initializer())
        saver.save(sess, str(victim)[:-4])  # any .npz the index may name
        index = {"format": "staticgrad-checkpoint-index", "version": 1,
                 "model_checkpoint_path": "../precious",
                 "all_model_checkpoint_paths": ["../precious"],
                 "all_model_checkpoint_timestamps": [1.0]}
        (ckpt / "checkpoint.json").write_text(json.dumps(index))
        with pytest.raises(DataLossError, match="never points outside its directory"):
            sg.train.get_checkpoint_state(str(ckpt))
        (ckpt / "checkpoint.json").unlink()
        saver.recover_last_checkpoints([str(ckpt / ".." / "precious")])
        with pytest.raises(ValueError, match="precious"):
            saver.save(sess, str(ckpt / "model"), global_step=2)
    assert victim.exists()
    assert not list(ckpt.iterdir())


# -- hardening ------------------------------------------------------------------------------------
def test_the_dynamic_random_kernel_cache_is_bounded():
    from staticgrad import dynamic as dy
    from staticgrad.dynamic import dispatch
    from staticgrad.ops.kernels import KERNEL_CACHE_SIZE
    with dy.eager_mode():
        for n in range(KERNEL_CACHE_SIZE + 50):
            sg.random_uniform([n + 1])
    assert len(dispatch._RANDOM_KERNELS) <= KERNEL_CACHE_SIZE


def test_a_file_location_cannot_forge_error_messages():
    evil = "m.py\n\x1b[2Jstaticgrad: all checks passed"
    doc = _doc(_op("v", "Softmax", ["x:0"], {"axis": {"type": "int", "value": -1}},
                   [{"dtype": "float32", "shape": [2, 2]}]))
    doc["ops"][-1]["location"] = [evil, 1]
    with sg.Graph().as_default() as g:
        sg.train.import_meta_graph(doc)
        where = g.get_operation_by_name("v").where()
    assert "\n" not in where and "\x1b" not in where
