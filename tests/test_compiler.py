"""The compiler's options and its pipeline, one visible list of named passes; the whole
corpus of test graphs compiled with each pass switched off (results must not change)."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from staticgrad import compiler
from tests.conftest import dense_gradients
from tests.ops.test_gradients import CASES, _build, _case_id
from tests.passes.helpers import X, _on_and_off

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


def test_options_name_real_passes_and_switch_them_off():
    with pytest.raises(ValueError, match="unknown compiler passes"):
        sg.CompileOptions(disable={"fusion-magic"})
    x = sg.placeholder(sg.float32, [2, 3], name="x")
    y = sg.exp(x) + sg.exp(x)
    with sg.Session(options=sg.CompileOptions(disable={"cse"})) as sess:
        assert sess.source(y, {x: X}).count("np.exp(") == 2
    with sg.Session() as sess:
        assert sess.source(y, {x: X}).count("np.exp(") == 1


def test_pipeline_is_one_visible_list():
    assert compiler.PASS_NAMES == ("fold", "simplify", "expand", "merge_scans", "cse",
                                   "negations", "transpose_matmul", "dce", "epilogues", "fuse",
                                   "scalars", "memory", "partition")  # (CUDA's partition)


# -- the corpus, with each pass switched off -----------------------------------------------------
@pytest.fixture
def fuse_small_arrays(monkeypatch):
    """Fusion for any size, in blocks of 4 elements on 2 threads: the corpus's small graphs
    then go through fused groups and several blocks."""
    from staticgrad.backends.numpy import blocks as runtime_blocks
    from staticgrad.backends.numpy.policy import FUSE
    monkeypatch.setattr(FUSE, "min_elements", 1)
    monkeypatch.setattr(runtime_blocks, "BLOCK", 4)
    monkeypatch.setattr(runtime_blocks, "THREADS", 2)


@pytest.mark.parametrize("disabled", [None, *compiler.PASS_NAMES, "all", "fuse-small"])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_corpus_gives_the_same_results_with_each_pass_off(case, disabled, request):
    if disabled == "fuse-small":
        request.getfixturevalue("fuse_small_arrays")
        disabled = None
    g, xs, values, loss, _ = _build(case)
    with g.as_default():
        grads = [t for t in dense_gradients(loss, xs) if t is not None]
        off = set(compiler.PASS_NAMES) if disabled == "all" else ({disabled} if disabled else ())
        ref_sess = sg.Session(graph=g, options=sg.CompileOptions(
            disable=set(compiler.PASS_NAMES), verify=True))
        sess = sg.Session(graph=g, options=sg.CompileOptions(disable=off, verify=True))
        feed = dict(zip(xs, values))
        want = ref_sess.run([loss, grads], feed)
        got = sess.run([loss, grads], feed)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)  # fused sums add in blocks
    for a, b in zip(got[1], want[1]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_a_training_step_is_the_same_with_every_pass_off():
    rng = np.random.default_rng(0)
    xv = rng.normal(size=(8, 4)).astype(np.float32)
    yv = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)]
    results = []
    for disabled in (set(), set(compiler.PASS_NAMES)):
        with sg.Graph().as_default():
            sg.set_random_seed(1)
            x = sg.placeholder(sg.float32, [None, 4])
            y = sg.placeholder(sg.float32, [None, 3])
            h = sg.layers.dense(x, 5, activation=sg.nn.relu)
            loss = sg.losses.softmax_cross_entropy(y, sg.layers.dense(h, 3))
            train = sg.train.AdamOptimizer(0.01).minimize(loss)
            with sg.Session(options=sg.CompileOptions(disable=disabled, verify=True)) as sess:
                sess.run(sg.global_variables_initializer())
                losses = [sess.run([loss, train], {x: xv, y: yv})[0] for _ in range(5)]
                results.append((losses, sess.run(sg.trainable_variables())))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_array_equal(a, b)


# -- found by review -----------------------------------------------------------------------------
def test_passes_never_move_a_variable_read_past_an_assignment():
    w = sg.Variable(1.0)
    old = sg.identity(w)
    with sg.control_dependencies([old]):
        upd = sg.assign_add(w, 1.0)
    with sg.control_dependencies([upd]):
        delta = sg.identity(w) * 1.0 - old
    m = sg.Variable(np.eye(2, dtype=np.float32))
    t = sg.transpose(m)
    with sg.control_dependencies([t]):
        up2 = sg.assign(m, m * 10.0)
    with sg.control_dependencies([up2]):
        y = sg.matmul(t, sg.constant(np.eye(2, dtype=np.float32)))
    on, off = _on_and_off([delta, y], init=[w.initializer, m.initializer])
    assert on[0] == off[0] == 1.0
    np.testing.assert_array_equal(on[1], off[1])
    np.testing.assert_array_equal(on[1], np.eye(2))
