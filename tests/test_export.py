"""sg.export: each exported module is imported in a fresh interpreter that has only NumPy (no
staticgrad) and must give the same arrays as sess.run."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import staticgrad as sg

# Runs in `python -I -S` (no PYTHONPATH, no site packages, no .pth files): the path is the
# standard library, the export folder and NumPy's folder. Should staticgrad be installed in
# that same folder (a non-editable install), a finder hides it, so the module cannot use it.
RUNNER = r"""
import importlib, importlib.abc, sys
folder, numpy_parent, name, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path[:0] = [folder, numpy_parent]


class HideStaticgrad(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] == "staticgrad":
            raise ImportError("staticgrad is not available here")


sys.meta_path.insert(0, HideStaticgrad())
import numpy as np
try:
    import staticgrad
except ImportError:
    pass
else:
    raise SystemExit("staticgrad is importable in the export test's subprocess")
module = importlib.import_module(name)
with np.load(folder + "/feeds.npz", allow_pickle=False) as f:
    feeds = [f[f"f{i}"] for i in range(len(f.files))]
out = {}
for r in range(runs):
    for i, value in enumerate(module.run(*feeds)):
        if value is not None:  # (strings as fixed-width bytes: an .npz holds no objects)
            value = np.asarray(value)
            out[f"r{r}_{i}"] = value.astype(bytes) if value.dtype == object else value
    for j, key in enumerate(sorted(module.V)):
        value = np.array(module.V[key])  # a copy: the next run updates V's arrays
        out[f"r{r}_V{j}"] = value.astype(bytes) if value.dtype == object else value
np.savez(folder + "/out.npz", **out)
"""


def run_exported(folder, name, feeds, runs=1):
    """{key: array} from running module `name` of `folder` `runs` times in a subprocess."""
    np.savez(os.path.join(folder, "feeds.npz"), **{f"f{i}": v for i, v in enumerate(feeds)})
    numpy_parent = os.path.dirname(os.path.dirname(np.__file__))
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", RUNNER, str(folder), numpy_parent,
                           name, str(runs)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    with np.load(os.path.join(folder, "out.npz"), allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def assert_same(got, want):
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)


def test_forward_graph(tmp_path):
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [None, 3], name="x")
        w = sg.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 7, name="dense/w")
        b = sg.Variable(np.array([0.5, -1.0], np.float32), name="dense/b")
        y = sg.nn.softmax(sg.nn.relu(sg.matmul(x, w) + b))
        total = sg.reduce_sum(y * 3.0)
        feed = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            path = sg.export({"y": y, "total": total}, [x], tmp_path / "forward.py",
                             feed_shapes=[(4, 3)])
            want = sess.run({"y": y, "total": total}, {x: feed})
    assert path == str(tmp_path / "forward.py")
    umask = os.umask(0)
    os.umask(umask)
    for name in ("forward.py", "forward.npz"):  # as open() makes files, not private 0600
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o666 & ~umask
    source = (tmp_path / "forward.py").read_text()
    assert not re.search(r"^\s*(import|from) staticgrad", source, flags=re.M)
    assert "def run(x)" in source
    got = run_exported(tmp_path, "forward", [feed])
    assert_same(got["r0_0"], want["y"])
    assert_same(got["r0_1"], want["total"])


def test_gradient_graph(tmp_path):
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float64, [5, 2], name="x")
        labels = sg.placeholder(sg.float64, [5, 3], name="labels")
        w = sg.Variable(np.linspace(-1, 1, 6).reshape(2, 3), name="w")
        logits = sg.matmul(x, w)
        loss = sg.reduce_mean(sg.nn.softmax_cross_entropy_with_logits(labels=labels,
                                                                      logits=logits))
        grads = sg.gradients(loss, [w, x])
        feeds = [np.random.default_rng(0).normal(size=(5, 2)), np.eye(5, 3)]
        with sg.Session() as sess:
            sess.run(w.initializer)
            sg.export([loss, grads], [x, labels], str(tmp_path / "grad.py"))
            want = sess.run([loss, grads], dict(zip([x, labels], feeds)))
    got = run_exported(tmp_path, "grad", feeds)
    assert_same(got["r0_0"], want[0])
    assert_same(got["r0_1"], want[1][0])
    assert_same(got["r0_2"], want[1][1])


def test_fused_large_elementwise_graph(tmp_path):
    with sg.Graph().as_default():
        a = sg.placeholder(sg.float32, [300, 500], name="a")
        b = sg.placeholder(sg.float32, [300, 500], name="b")
        y = sg.sin(a) * sg.exp(-b * b) + sg.tanh(a - b) / 2.0 + sg.log1p(a * b) \
            + sg.nn.relu6(a * 8.0) + sg.where(a > b, a, b * 0.5) + sg.nn.softplus(a - 2 * b)
        s = sg.reduce_sum(y)
        rng = np.random.default_rng(1)
        feeds = [rng.random((300, 500), dtype=np.float32), rng.random((300, 500), np.float32)]
        # bit for bit: the module computes with NumPy's ufuncs, not runtime_fast's kernels
        with sg.Session(options=sg.CompileOptions(vector_math=False)) as sess:
            sg.export([y, s], [a, b], tmp_path / "fused.py")
            want = sess.run([y, s], {a: feeds[0], b: feeds[1]})
    source = (tmp_path / "fused.py").read_text()
    # the kernel's numbers are 0-d constants (f32_2_0); rt.clip is bound to NumPy's ufunc
    assert "rt.run_blocks(" in source and "f32_2_0" in source and "rt.clip(" in source
    assert "rt.select(" in source and "SELECT_MIN_SIZE = " in source  # with what it reads
    assert "rt.softplus(" in source and "\ndef log1p(" in source  # and what softplus calls
    got = run_exported(tmp_path, "fused", feeds)
    assert_same(got["r0_0"], want[0])
    assert_same(got["r0_1"], want[1])


def test_conv2d_graph(tmp_path):
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [2, 8, 8, 3], name="images")
        k = sg.Variable(np.random.default_rng(2).normal(size=(3, 3, 3, 4)).astype(np.float32),
                        name="conv/kernel")
        y = sg.nn.max_pool(sg.nn.relu(sg.nn.conv2d(x, k, [1, 1, 1, 1], "SAME")),
                           [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        loss = sg.reduce_sum(y * y)
        (dk,) = sg.gradients(loss, [k])
        feed = np.random.default_rng(3).normal(size=(2, 8, 8, 3)).astype(np.float32)
        with sg.Session() as sess:
            sess.run(k.initializer)
            sg.export([y, dk], [x], tmp_path / "conv.py")
            want = sess.run([y, dk], {x: feed})
    source = (tmp_path / "conv.py").read_text()
    assert "def conv2d(" in source
    assert not re.search(r"^\s*(import|from) staticgrad", source, flags=re.M)
    got = run_exported(tmp_path, "conv", [feed])
    assert_same(got["r0_0"], want[0])
    assert_same(got["r0_1"], want[1])


@pytest.mark.parametrize("width", [1, 4096])  # 4096: updates written into the variables
def test_sgd_training_step_updates_state(tmp_path, width):
    with sg.Graph().as_default():
        sg.set_random_seed(5)
        x = sg.placeholder(sg.float32, [None, 2], name="x")
        y = sg.placeholder(sg.float32, [None, 1], name="y")
        w = sg.Variable(np.zeros((2, width), np.float32), name="w")
        b = sg.Variable(np.zeros((width,), np.float32), name="b")
        noise = sg.random_normal([6, width], stddev=0.01, seed=1)
        loss = sg.reduce_mean(sg.square(sg.matmul(x, w) + b + noise - y))
        step = sg.train.GradientDescentOptimizer(0.1).minimize(loss)
        feeds = [np.arange(12, dtype=np.float32).reshape(6, 2) / 10,
                 np.arange(6, dtype=np.float32).reshape(6, 1)]
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            sg.export([loss, step], [x, y], tmp_path / "train_step.py",
                      feed_shapes={"x:0": (6, 2), y: (6, 1)})
            want = []
            for _ in range(3):
                lv, _ = sess.run([loss, step], {x: feeds[0], y: feeds[1]})
                want.append((lv, sess.run(b), sess.run(w)))  # V sorted by name: b, w
    source = (tmp_path / "train_step.py").read_text()
    assert ("def update_in_place(" in source) == (width > 1)
    got = run_exported(tmp_path, "train_step", feeds, runs=3)
    for r, (lv, bv, wv) in enumerate(want):
        assert_same(got[f"r{r}_0"], lv)
        assert_same(got[f"r{r}_V0"], bv)
        assert_same(got[f"r{r}_V1"], wv)
    assert f"r{0}_1" not in got  # the training op fetches as None
    assert want[0][0] != want[2][0]  # the state really moved


def test_string_graph_with_a_string_variable(tmp_path):
    x = sg.placeholder(sg.string, [None], name="x")
    v = sg.Variable(["é", ""], name="v")
    joined = sg.regex_replace(sg.string_join([sg.constant("<\x00"), x, v], " "), "a+", "A")
    step = sg.assign(v, sg.string_join([v, sg.as_string(sg.strings.length(x))], "/"))
    feeds = [np.array(["banana", "kiwi"])]
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        sg.export([joined, step], [x], str(tmp_path / "strings.py"), session=sess)
        want = [sess.run([joined, step], {x: feeds[0]}) for _ in range(2)]
    with np.load(tmp_path / "strings.npz", allow_pickle=False) as data:
        assert any(k.startswith("c_") and k.endswith(":bytes") for k in data.files)  # (numbers
        #                                                  only: no pickle in the data file)
    got = run_exported(tmp_path, "strings", feeds, runs=2)
    for r in range(2):
        for i in range(2):
            assert got[f"r{r}_{i}"].tolist() == want[r][i].tolist()
    assert want[1][1].tolist() == ["é/6/6".encode(), b"/4/4"]


@pytest.mark.parametrize("graph_seed, op_seed", [(-5, -3), (None, -1), (-(2**63), 2**64 - 1)])
def test_negative_seeds_draw_what_the_session_draws(tmp_path, graph_seed, op_seed):
    with sg.Graph().as_default():
        if graph_seed is not None:
            sg.set_random_seed(graph_seed)
        r = sg.random_normal([5], seed=op_seed)
        with sg.Session() as sess:
            sg.export(r, [], tmp_path / "draws.py")
            want = [sess.run(r) for _ in range(2)]
    got = run_exported(tmp_path, "draws", [], runs=2)
    assert_same(got["r0_0"], want[0])
    assert_same(got["r1_0"], want[1])


def test_unknown_rank_or_a_wrong_feed_shape_names_the_placeholder(tmp_path):
    # (unknown sizes are free: tests/test_export_free_dims.py)
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, None, name="inputs")
        with sg.Session(), pytest.raises(ValueError, match="inputs:0 of unknown rank.*feed_shapes"):
            sg.export(x * 2.0, [x], tmp_path / "m.py")
        z = sg.placeholder(sg.float32, [None, 3], name="z")
        with sg.Session(), pytest.raises(ValueError, match="z:0"):
            sg.export(z * 2.0, [z], tmp_path / "m.py", feed_shapes=[(2, 4)])
    assert not list(tmp_path.iterdir())


def test_bad_paths(tmp_path):
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [3], name="x")
        with sg.Session():
            with pytest.raises(FileNotFoundError, match="does not exist"):
                sg.export(x + 1.0, [x], tmp_path / "missing" / "m.py")
            with pytest.raises(ValueError, match=r"\.py"):
                sg.export(x + 1.0, [x], tmp_path / "m.txt")
            with pytest.raises(ValueError, match="identifier"):
                sg.export(x + 1.0, [x], tmp_path / "my-model.py")
            with pytest.raises(ValueError, match="backend"):
                sg.export(x + 1.0, [x], tmp_path / "m.py", backend="tpu")
    assert not list(tmp_path.iterdir())


def test_fetch_that_the_feeds_cannot_compute(tmp_path):
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [2], name="x")
        z = sg.placeholder(sg.float32, [2], name="z")
        with sg.Session(), pytest.raises(sg.errors.InvalidArgumentError, match="'z'"):
            sg.export(x + z, [x], tmp_path / "m.py")
        v = sg.Variable(np.ones(2, np.float32), name="v")
        with sg.Session(), pytest.raises(ValueError, match="no value"):
            sg.export(x * v, [x], tmp_path / "m.py")
    assert not list(tmp_path.iterdir())


# -- the .py and .npz are a pair -----------------------------------------------------------------
def _import_exported(path):
    """The exported module at `path`, imported in this process (it needs only NumPy)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _scaled_export(tmp_path, sess, w, y, x, value):
    sess.run(w.assign(np.full(3, value, np.float32)))
    return sg.export(y, [x], str(tmp_path / "m.py"), session=sess)


@pytest.fixture
def scaling_model():
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [3], name="x")
        w = sg.Variable(np.ones(3, np.float32), name="w")
        y = x * w
        sess = sg.Session(graph=g)
        sess.run(sg.global_variables_initializer())
        yield sess, w, y, x


def test_a_failed_data_write_leaves_the_previous_pair_and_no_temp_file(tmp_path, monkeypatch,
                                                                      scaling_model):
    _scaled_export(tmp_path, *scaling_model, 2.0)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(np, "savez", full_disk)
    with pytest.raises(OSError, match="No space"):
        _scaled_export(tmp_path, *scaling_model, 5.0)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    np.testing.assert_array_equal(_import_exported(str(tmp_path / "m.py")).run(np.ones(3))[0],
                                  [2.0, 2.0, 2.0])


def test_an_export_stopped_between_its_renames_leaves_a_module_that_refuses_the_old_data(
        tmp_path, monkeypatch, scaling_model):
    """The module is renamed into place first; should the data file's rename then fail (or
    the process die), the new module finds the old data file and says so, by name."""
    _scaled_export(tmp_path, *scaling_model, 2.0)
    old = _import_exported(str(tmp_path / "m.py"))
    real_replace = os.replace
    renamed = []

    def replace(src, dst):
        renamed.append(os.path.basename(dst))
        if dst.endswith(".npz"):
            raise OSError(5, "Input/output error")
        return real_replace(src, dst)
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match="Input/output"):
        _scaled_export(tmp_path, *scaling_model, 5.0)
    monkeypatch.undo()
    assert renamed == ["m.py", "m.npz"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["m.npz", "m.py"]
    with pytest.raises(RuntimeError, match=r"m\.npz is not the data file exported with this "
                                           r"module \(m\.py\).*export again"):
        _import_exported(str(tmp_path / "m.py"))
    old.reset()  # a process running the old module keeps its own data
    np.testing.assert_array_equal(old.run(np.ones(3))[0], [2.0, 2.0, 2.0])


def test_the_export_id_depends_on_the_contents_only(tmp_path, scaling_model):
    first = _import_exported(_scaled_export(tmp_path, *scaling_model, 2.0))
    again = _import_exported(_scaled_export(tmp_path, *scaling_model, 2.0))
    changed = _import_exported(_scaled_export(tmp_path, *scaling_model, 3.0))
    assert first._EXPORT_ID == again._EXPORT_ID != changed._EXPORT_ID
    with pytest.raises(RuntimeError, match="export again"):
        first.reset()  # the data file now belongs to another export


def test_a_string_feed_keeps_trailing_nuls_and_names_the_feed_when_not_strings(tmp_path):
    # run() once made the feed a NumPy array first: fixed-width text, which drops a trailing
    # NUL ("a\0" fed as "a") where a session keeps it, and a ragged list was NumPy's own error.
    with sg.Graph().as_default():
        x = sg.placeholder(sg.string, [None], name="words")
        y = sg.string_join([x, sg.constant("!")])
        with sg.Session() as sess:
            sg.export(y, [x], tmp_path / "nuls.py")
            module = _import_exported(str(tmp_path / "nuls.py"))
            for feed in (["a\x00", "b"], [b"a\x00", b"b"]):
                assert module.run(feed)[0].tolist() == sess.run(y, {x: feed}).tolist() == \
                    [b"a\x00!", b"b!"]
            with pytest.raises(TypeError, match=r"words:0: list \['a'\] at index \[0\] is not"):
                module.run([["a"], "b"])


def test_an_integer_feed_out_of_the_placeholders_range_is_refused_as_a_session_refuses(
        tmp_path):
    # run() once cast int64 to int32 whenever NumPy calls it the same kind, wrapping 2**40
    # around to 0 where a session refuses the feed.
    with sg.Graph().as_default():
        i = sg.placeholder(sg.int32, [None], name="ids")
        with sg.Session() as sess:
            sg.export(i * 2, [i], tmp_path / "ints.py")
            module = _import_exported(str(tmp_path / "ints.py"))
            ok = np.array([2**30 - 1, -(2**30)])
            assert module.run(ok)[0].tolist() == sess.run(i * 2, {i: ok}).tolist()
            for ids in ([2**40, 1], [-(2**31) - 1]):
                with pytest.raises(TypeError, match="ids:0 of dtype int32 without losing"):
                    module.run(np.array(ids, np.int64))
