"""sg.py_func and sg.numpy_function (ops/py_func_ops.py): a Python function run as an op, its
outputs checked against Tout, refused by graph files and exports, run at once dynamically."""

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy


def test_a_function_of_numpy_values_runs_each_time_it_is_needed(g):
    calls = []

    def stats(a):
        calls.append(len(a))
        return a.sum(), np.int64(a.size)

    x = sg.placeholder(sg.float32, [None], name="x")
    doubled = sg.py_func(lambda a: a * 2, [x], sg.float32)
    total, count = sg.numpy_function(stats, [x], [sg.float32, sg.int64])
    assert doubled.shape.dims is None and total.dtype is sg.float32
    sess = sg.Session()
    for n in (2, 3):
        got = sess.run([doubled, total, count], {x: np.arange(n, dtype=np.float32)})
        np.testing.assert_array_equal(got[0], 2 * np.arange(n))
        assert got[1] == np.arange(n).sum() and got[2] == n
    assert calls == [2, 3]
    assert "rt.call_py_func(" in sess.source(doubled, {x: [1.0]}) and "lambda" not in \
        sess.source(doubled, {x: [1.0]})


def test_wrong_outputs_are_errors_naming_the_op(g):
    x = sg.placeholder(sg.float32, [2], name="x")
    wrong_dtype = sg.py_func(lambda a: a.astype(np.float64), [x], sg.float32)
    wrong_count = sg.py_func(lambda a: (a, a), [x], [sg.float32])
    raises = sg.py_func(lambda a: 1 / 0, [x], sg.float32)
    sess = sg.Session()
    for t, why in [(wrong_dtype, "gave output 0 of dtype float64, where Tout says float32"),
                   (wrong_count, "gave 2 values for 1 dtypes"),
                   (raises, "ZeroDivisionError")]:
        with pytest.raises(sg.errors.InvalidArgumentError,
                           match=rf"PyFunc op .* created at \S*test_py_func_ops.py:\d+ .*{why}"):
            sess.run(t, {x: [1.0, 2.0]})


def test_graph_files_and_exports_refuse_it(g, tmp_path):
    x = sg.placeholder(sg.float32, [2], name="x")
    y = sg.py_func(np.square, [x], sg.float32)
    with pytest.raises(ValueError, match=r"cannot save PyFunc op .*: its attr 'func'"):
        sg.train.export_meta_graph(str(tmp_path / "g.json"))
    with sg.Session() as sess, pytest.raises(ValueError, match=r"cannot export: the graph "
                                                               r"calls a Python function"):
        sg.export(y, [x], str(tmp_path / "m.py"), session=sess)


def test_the_dynamic_mode_calls_it_at_once():
    with dy.eager_mode():
        y = sg.py_func(lambda a: a + 1, [dy.tensor([1.0, 2.0])], sg.float32)
    np.testing.assert_array_equal(y.numpy(), [2.0, 3.0])
