"""The rewriting passes, each alone on small programs, and the whole corpus of test graphs
compiled with each pass switched off (results must not change)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import staticgrad as sg
from staticgrad import compiler
from staticgrad.ir import Program, VerificationError, lower, make_node, verify
from staticgrad.ops.registry import get_opdef
from staticgrad.passes.cse import cse
from staticgrad.passes.dce import eliminate_dead_code
from staticgrad.passes.fold import fold_constants
from staticgrad.passes.matmul import fold_transposes_into_matmul
from staticgrad.passes.prune import prune
from staticgrad.passes.simplify import simplify
from staticgrad.passes.specialize import specialize
from tests.ops.test_gradients import CASES, _build, _case_id


def program_for(fetches, feeds):
    """The lowered (not yet rewritten) Program of a session run with these feeds."""
    ops = prune(fetches, set(feeds))
    spec = specialize(ops, {t: (tuple(v.shape), t.dtype) for t, v in feeds.items()})
    return lower(ops, fetches, list(feeds), spec)


def types(program):
    return [n.type for n in program.nodes]


@pytest.fixture(autouse=True)
def fresh_graph():
    with sg.Graph().as_default() as g:
        yield g


X = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_fold_computes_known_nodes_with_the_ops_kernels():
    c = sg.constant(np.arange(4096, dtype=np.float32) / 4096)  # too big to fold when built
    y = sg.exp(c) * 2.0
    p = program_for([y], {})
    assert types(p) == ["Exp", "Mul"]
    folded = fold_constants(p)
    verify(folded)
    assert folded.nodes == [] and folded.fetches[0].const is not None
    want = np.exp(np.arange(4096, dtype=np.float32) / 4096) * 2
    np.testing.assert_array_equal(folded.fetches[0].const, want)
    assert types(p) == ["Exp", "Mul"]  # the input program is unchanged


def test_fold_leaves_state_random_and_control_dependencies_alone():
    v = sg.Variable(1.0)
    r = sg.random_uniform([3])
    with sg.control_dependencies([r]):
        k = sg.identity(sg.constant(np.ones(2000, np.float32)))
    p = fold_constants(program_for([v * 2.0, r, k], {}))
    assert {"VariableV2", "RandomUniform", "Identity"} <= set(types(p))


def test_simplify_removes_what_changes_nothing():
    x = sg.placeholder(sg.float32, [2, 3], name="x")
    y = sg.transpose(sg.transpose(x)) * sg.ones_like(x) + 0.0
    y = sg.negative(sg.negative(sg.reshape(sg.identity(y), [2, 3])))
    z = sg.cast(y, sg.float32) / 1.0 - 0.0
    p = simplify(program_for([z], {x: X}))
    verify(p)
    assert p.fetches[0] is p.feeds[0]
    assert eliminate_dead_code(p).nodes == []


def test_simplify_powers_of_one_and_two():
    x = sg.placeholder(sg.float32, [4], name="x")
    (dx,) = sg.gradients(sg.reduce_sum(x ** 3 + x ** 2), [x])  # holds x ** 2 and x ** 1
    xv = np.array([np.nan, np.inf, -2.0, 0.5], np.float32)
    with sg.Session() as sess, np.errstate(invalid="ignore"):
        src = sess.source(dx, {x: xv})
        got = sess.run(dx, {x: xv})
    with sg.Session(options=sg.CompileOptions(disable={"simplify"})) as sess, \
            np.errstate(invalid="ignore"):
        want = sess.run(dx, {x: xv})
    assert "** 1.0" not in src and "** 2.0" not in src and "np.square(" in src
    np.testing.assert_array_equal(got, want)


def test_simplify_keeps_nan_and_inf_semantics():
    x = sg.placeholder(sg.float32, [3], name="x")
    y = x * 0.0  # NaN * 0 is NaN, not 0: never simplified
    p = simplify(program_for([y], {x: X[0]}))
    assert types(p) == ["Mul"]
    with sg.Session() as sess, np.errstate(invalid="ignore"):
        out = sess.run(y, {x: [np.nan, np.inf, 1.0]})
    assert np.isnan(out[0]) and np.isnan(out[1]) and out[2] == 0


def test_simplify_merges_two_transposes_into_one():
    x = sg.placeholder(sg.float32, [2, 3, 4], name="x")
    y = sg.transpose(sg.transpose(x, [1, 0, 2]), [0, 2, 1])
    p = eliminate_dead_code(simplify(program_for([y], {x: np.zeros((2, 3, 4), np.float32)})))
    (node,) = p.nodes
    assert node.type == "Transpose" and node.attrs["perm"] == (1, 2, 0)


def test_simplify_never_drops_a_node_with_control_dependencies():
    v = sg.Variable(0.0)
    x = sg.placeholder(sg.float32, [], name="x")
    bump = sg.assign_add(v, 1.0)
    with sg.control_dependencies([bump]):
        y = sg.identity(x)
    p = simplify(program_for([y], {x: np.float32(1)}))
    assert "Identity" in types(p)


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3e38, -3e38, 1e-38, 2.5, -0.75],
                   np.float32)


def _simplified_and_plain(fetch, x, xv):
    """(simplified program without dead nodes, its result, the result with simplify off)."""
    p = eliminate_dead_code(simplify(fold_constants(program_for([fetch], {x: xv}))))
    verify(p)
    results = []
    for off in (set(), {"simplify"}):
        with sg.Session(options=sg.CompileOptions(disable=off | {"fuse"})) as sess, \
                np.errstate(all="ignore"):
            results.append(sess.run(fetch, {x: xv}))
    return p, *results


def test_simplify_folds_factors_when_a_power_of_two_makes_it_exact():
    x = sg.placeholder(sg.float32, [SPECIAL.size], name="x")
    cases = [  # (expression, the node types left, the constant factor left)
        (-((0.5 * sg.exp(x)) * 2.0) * x, ["Exp", "Neg", "Mul"], None),
        ((1.0 / (1.0 + x)) * 2.0, ["Add", "RealDiv"], 2.0),
        (3.0 * (x * 4.0), ["Mul"], 12.0),
        (-(x * 0.75), ["Mul"], -0.75),
        (sg.negative(x) * 0.25, ["Mul"], -0.25),
    ]
    for y, left, factor in cases:
        p, got, want = _simplified_and_plain(y, x, SPECIAL)
        assert types(p) == left, (types(p), left)
        if factor is not None:
            assert [float(v.const) for n in p.nodes for v in n.inputs
                    if v.const is not None and v.const.size == 1][-1] == factor
        np.testing.assert_array_equal(got, want)  # NaN, Inf, signed zeros and overflow too
        number = ~np.isnan(want)  # (a NaN's sign means nothing: x86 keeps an operand's)
        assert (np.signbit(got) == np.signbit(want))[number].all()


def test_simplify_leaves_factors_that_would_round_or_overflow():
    x = sg.placeholder(sg.float32, [SPECIAL.size], name="x")
    for y in (1.5 * (x * 3.0),  # no power of two: (x*3)*1.5 may round twice
              (x * 3e38) * 4.0,  # 1.2e39 is no float32
              (x * 1e-38) * 0.5):  # 5e-39 is subnormal
        p, got, want = _simplified_and_plain(y, x, SPECIAL)
        assert types(p) == ["Mul", "Mul"]
        np.testing.assert_array_equal(got, want)


def test_simplify_reads_a_broadcast_gradient_seed_as_its_number():
    """d/dx sum(0.5 exp(-x^2) + log1p(x^2)) as W3 has it: the seed broadcast_to(1, [n])
    disappears, 1/(1+x^2)*2 becomes 2/(1+x^2) and -(0.5 e)*2 becomes -e."""
    x = sg.placeholder(sg.float32, [None], name="x")
    (dx,) = sg.gradients(sg.reduce_sum(0.5 * sg.exp(-x ** 2) + sg.log1p(x ** 2)), [x])
    for size in (50, 5000):  # the seed folded to a constant of ones, or a broadcast
        xv = np.concatenate([SPECIAL, np.linspace(-4, 4, size, dtype=np.float32)])
        p, got, want = _simplified_and_plain(dx, x, xv)
        assert "BroadcastTo" not in types(p) and types(p).count("Mul") == 2  # each term * x
        np.testing.assert_array_equal(got, want)
        with np.errstate(all="ignore"):
            x64 = xv.astype(np.float64)
            exact = -x64 * np.exp(-x64 ** 2) + 2 * x64 / (1 + x64 ** 2)
        finite = np.isfinite(exact)
        np.testing.assert_allclose(got[finite], exact[finite], rtol=2e-6, atol=1e-30)


def test_simplify_spreads_an_op_of_numbers_and_keeps_broadcasts_it_needs():
    x = sg.placeholder(sg.float32, [3000], name="x")  # too big to fold the broadcast
    spread = sg.broadcast_to(sg.constant([2.0]), [4, 3000])
    y = 0.5 * spread + x  # the sum still needs the [4, 3000] shape
    p, got, want = _simplified_and_plain(y, x, np.arange(3000, dtype=np.float32))
    assert types(p) == ["BroadcastTo", "Add"]
    assert float(p.nodes[0].inputs[0].const) == 1.0
    np.testing.assert_array_equal(got, want)
    assert got.shape == (4, 3000)


def test_simplify_never_moves_a_variable_read_into_a_folded_factor():
    """v * 2 is read before the assignment; folding (v * 2) * 4 into v * 8 would read v
    again where the outer product runs, after it."""
    v = sg.Variable(np.ones(3, np.float32))
    inner = v * 2.0
    with sg.control_dependencies([inner]):
        bump = sg.assign_add(v, np.ones(3, np.float32))
    y = inner * 4.0  # made after the assignment, so it runs after it
    with sg.Session() as sess:
        sess.run(v.initializer)
        got, _ = sess.run([y, bump])
    np.testing.assert_array_equal(got, np.full(3, 8.0, np.float32))


def _on_off(fetch, feed):
    results = []
    for off in (set(), {"simplify"}):
        with sg.Session(options=sg.CompileOptions(disable=off)) as sess, \
                np.errstate(all="ignore"):
            sess.run(sg.global_variables_initializer())
            results.append(sess.run(fetch, feed))
    return results


def test_simplify_found_by_review():
    """Each of these went wrong in a first version of the broadcast and factor rules."""
    n = 4  # a broadcast row into matmul: matmul does not broadcast as elementwise ops do
    x, v = sg.placeholder(sg.float32, [n, n]), sg.placeholder(sg.float32, [n])
    w = sg.Variable(np.arange(n * n, dtype=np.float32).reshape(n, n))
    (dx,) = sg.gradients(sg.reduce_sum(sg.reduce_sum(sg.matmul(x, w), axis=0) * v), [x])
    got, want = _on_off(dx, {x: np.ones((n, n)), v: np.arange(n)})
    assert got.shape == (n, n)
    np.testing.assert_array_equal(got, want)

    x = sg.placeholder(sg.float32, [None])
    xv = np.concatenate([np.arange(1, 1001), [2e-38, 1e38, 3e38]]).astype(np.float32)
    for y in ((2.0 / x) * 0.1,  # a / x rounds: only a power-of-two factor folds exactly
              (x * 4.0) * 0.25, (16.0 / x) * 0.25, -(x * 4.0) * 0.25):  # overflows stay
        got, want = _on_off(y, {x: xv})
        np.testing.assert_array_equal(got, want)
    assert np.isinf(_on_off((x * 4.0) * 0.25, {x: xv})[0][-1])

    # numbers spread over a shape, with a number of higher rank
    y = sg.broadcast_to(sg.constant(2.0), [3000]) * sg.constant([[0.5]])
    got, want = _on_off(y, {})
    assert got.shape == (1, 3000)
    np.testing.assert_array_equal(got, want)


def test_cse_merges_equal_computations_and_equal_constants():
    x = sg.placeholder(sg.float32, [2, 3], name="x")
    a = sg.exp(x) * 2.0
    b = sg.exp(x) * 2.0
    p = eliminate_dead_code(cse(program_for([a + b], {x: X})))
    verify(p)
    assert types(p) == ["Exp", "Mul", "Add"]
    add = p.nodes[-1]
    assert add.inputs[0] is add.inputs[1]


def test_cse_never_merges_random_draws():
    r1, r2 = sg.random_normal([3]), sg.random_normal([3])
    p = cse(program_for([r1 - r2], {}))
    assert types(p).count("RandomStandardNormal") == 2


def test_transposes_fold_into_matmul_flags():
    a = sg.placeholder(sg.float32, [3, 2], name="a")
    b = sg.placeholder(sg.float32, [4, 3], name="b")
    y = sg.matmul(sg.transpose(a), sg.transpose(b))
    p = eliminate_dead_code(fold_transposes_into_matmul(
        program_for([y], {a: np.ones((3, 2), np.float32), b: np.ones((4, 3), np.float32)})))
    (node,) = p.nodes
    assert node.type == "MatMul" and node.attrs["transpose_a"] and node.attrs["transpose_b"]
    assert node.inputs == tuple(p.feeds)


def test_verifier_catches_a_broken_program():
    x = sg.placeholder(sg.float32, [2, 3], name="x")
    p = program_for([sg.exp(x)], {x: X})
    (exp,) = p.nodes
    bad = make_node(get_opdef("Exp"), {}, exp.outputs, exp.origin)  # reads its own output
    with pytest.raises(VerificationError, match="before it is defined"):
        verify(Program([bad], p.feeds, p.fetches))
    wrong = make_node(get_opdef("Exp"), {}, p.feeds, exp.origin)
    wrong.outputs[0].shape = sg.TensorShape([5])
    with pytest.raises(VerificationError, match="its op makes"):
        verify(Program([wrong], p.feeds, [wrong.outputs[0]]))


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
    assert compiler.PASS_NAMES == ("fold", "simplify", "expand", "cse", "negations",
                                   "transpose_matmul", "dce", "fuse", "scalars", "memory")


# -- the corpus, with each pass switched off -----------------------------------------------------
@pytest.fixture
def fuse_small_arrays(monkeypatch):
    """Fusion for any size, in blocks of 4 elements on 2 threads: the corpus's small graphs
    then go through fused groups and several blocks."""
    from staticgrad import runtime_blocks
    from staticgrad.passes import fuse
    monkeypatch.setattr(fuse, "FUSE_MIN_ELEMENTS", 1)
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
        grads = [t for t in sg.gradients(loss, xs) if t is not None]
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


# -- the memory plan -------------------------------------------------------------------------
def _chain(x, n=8):
    y = x
    for i in range(n):
        y = sg.exp(y * 0.5) - 1.0 if i % 2 else sg.tanh(y) * 2.0
    return y


def test_memory_plan_frees_after_last_use_and_writes_into_dead_buffers():
    x = sg.placeholder(sg.float32, [8192], name="x")
    y = _chain(x)
    with sg.Session(options=sg.CompileOptions(disable={"fuse"})) as sess:
        src = sess.source(y, {x: np.zeros(8192, np.float32)})
    assert "out=" in src and "del " in src
    assert "out=x" not in src  # never into a fed array


def test_memory_plan_lowers_the_peak():
    import tracemalloc
    x = sg.placeholder(sg.float32, [1 << 18], name="x")
    y = _chain(x, 12)
    xv = np.linspace(-1, 1, 1 << 18, dtype=np.float32)
    peaks, results = [], []
    for options in (sg.CompileOptions(disable={"memory", "fuse"}),
                    sg.CompileOptions(disable={"fuse"})):
        with sg.Session(options=options) as sess:
            sess.run(y, {x: xv})  # compile first
            tracemalloc.start()
            results.append(sess.run(y, {x: xv}))
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
    np.testing.assert_array_equal(results[0], results[1])
    buffer = xv.nbytes
    assert peaks[1] <= 3 * buffer < peaks[0]


def test_memory_plan_never_overwrites_feeds_variables_or_fetches():
    n = 8192  # large enough to be planned
    x = sg.placeholder(sg.float32, [n], name="x")
    w = sg.Variable(np.arange(n, dtype=np.float32), name="w")
    a = sg.exp(x)                 # fetched: must come back intact
    b = a * 2.0 + w               # reads w before the update below
    c = sg.reshape(b, [2, -1])    # a view of b, fetched
    with sg.control_dependencies([c]):
        update = sg.assign(w, b * 3.0)
    xv = np.zeros(n, np.float32)
    with sg.Session(options=sg.CompileOptions(disable={"fuse"})) as sess:
        sess.run(w.initializer)
        assert "out=" in sess.source([a, b, c, update], {x: xv})  # the plan is at work
        got_a, got_b, got_c, _ = sess.run([a, b, c, update], {x: xv})
        new_w = sess.run(w)
        again = sess.run(sg.identity(w))
    np.testing.assert_array_equal(xv, 0)                       # the feed
    np.testing.assert_array_equal(got_a, 1)                    # a fetch
    np.testing.assert_array_equal(got_b, 2 + np.arange(n))    # the old w
    np.testing.assert_array_equal(got_c.ravel(), got_b)        # a view of a fetch
    np.testing.assert_array_equal(new_w, 3 * (2 + np.arange(n)))
    np.testing.assert_array_equal(again, new_w)


def _sgd(n=8192):
    """A linear model's gradient descent step on a planned-size weight vector."""
    x = sg.placeholder(sg.float32, [n], name="x")
    w = sg.Variable(np.linspace(-1, 1, n, dtype=np.float32), name="w")
    loss = sg.reduce_sum(sg.square(w * x - 1.0))
    train = sg.train.GradientDescentOptimizer(0.01).minimize(loss)
    return x, w, loss, train, np.linspace(0, 2, n, dtype=np.float32)


def test_updates_write_into_the_variable_array_and_agree_with_new_arrays():
    x, w, loss, train, xv = _sgd()
    got = []
    for options in (sg.CompileOptions(), sg.CompileOptions(disable={"memory"})):
        with sg.Session(options=options) as sess:
            sess.run(w.initializer)
            before = sess.run(w)
            src = sess.source([loss, train], {x: xv})
            losses = [sess.run([loss, train], {x: xv})[0] for _ in range(3)]
            array = sess._vars["w"]
            sess.run(train, {x: xv})
            same_array = sess._vars["w"] is array
            got.append((losses, sess.run(w), before, src, same_array))
    (losses, w_in_place, before, src, same_array), (want_losses, want_w, *_, plain_src, moved) = got
    assert "rt.update_in_place(np.subtract, V['w'], " in src
    assert "update_in_place" not in plain_src
    assert same_array and not moved
    assert losses == want_losses
    np.testing.assert_array_equal(w_in_place, want_w)
    np.testing.assert_array_equal(before, np.linspace(-1, 1, 8192, dtype=np.float32))  # a copy


def test_no_update_in_place_while_a_view_of_the_old_value_is_still_read():
    n = 8192
    w = sg.Variable(np.arange(n, dtype=np.float32), name="w")
    t = sg.reshape(w, [2, -1])              # a view of w's array, computed before the update
    with sg.control_dependencies([t]):
        step = sg.assign_add(w, sg.ones([n]))
    with sg.control_dependencies([step]):
        later = t * 1.0                     # reads the view after the update
    first = sg.assign(w, sg.zeros([n]))     # V['w'] is this op's result ...
    with sg.control_dependencies([first]):
        bump = sg.assign_add(w, sg.ones([n]))  # ... which is fetched beside the update
    for fetches, want in (([later, step], [np.arange(n), np.arange(n) + 1]),
                          ([t, later, step], [np.arange(n), np.arange(n), np.arange(n) + 1]),
                          ([first, bump], [np.zeros(n), np.ones(n)])):
        with sg.Session() as sess:
            sess.run(w.initializer)
            assert "update_in_place" not in sess.source(fetches)
            for value, expected in zip(sess.run(fetches), want):
                np.testing.assert_array_equal(np.ravel(value), expected)


def test_updates_in_place_never_touch_an_array_the_user_gave_or_got():
    n = 8192
    x = sg.placeholder(sg.float32, [n], name="x")
    w = sg.Variable(np.zeros(n, np.float32), name="w")
    set_w = sg.assign(w, x)                 # the fed array, copied into the variable
    with sg.control_dependencies([set_w]):
        bump = sg.assign_add(w, sg.ones([n]))
    step = sg.assign_add(w, sg.ones([n]))
    xv = np.full(n, 5, np.float32)
    mine = np.full(n, 7, np.float32)
    with sg.Session() as sess:
        assert "rt.update_in_place(" in sess.source(bump, {x: xv})
        sess.run(bump, {x: xv})
        w.load(mine, sess)
        got = sess.run(w)
        sess.run(step)
        sess.run(step)
        final = sess.run(w)
    np.testing.assert_array_equal(xv, 5)
    np.testing.assert_array_equal(mine, 7)
    np.testing.assert_array_equal(got, 7)
    np.testing.assert_array_equal(final, 9)


def test_a_variable_never_shares_its_array_with_another_value():
    """Found by review: assign(w, reshape(tmp)) stored a view of tmp as w's array, so the
    fetched tmp, a second variable assigned tmp, or a view of the value taken before the
    Assign changed with w's updates."""
    n = 8192
    x = sg.placeholder(sg.float32, [2, n // 2], name="x")
    w = sg.Variable(np.zeros(n, np.float32), name="w")
    w2 = sg.Variable(np.zeros((2, n // 2), np.float32), name="w2")
    tmp = x * 2.0
    flat = sg.reshape(tmp, [n])        # a view of tmp
    set_w = sg.assign(w, flat)
    with sg.control_dependencies([set_w]):
        set_w2 = sg.assign(w2, tmp)
    step = sg.assign_add(w, sg.ones([n]))
    before = sg.reshape(x * 3.0, [n])
    with sg.control_dependencies([sg.reshape(before, [2, -1])]):
        set_from_view = sg.assign(w, before)
    drawn = sg.Variable(sg.random_normal([n]), name="drawn")  # a new array, read once
    xv = np.ones((2, n // 2), np.float32)
    with sg.Session() as sess:
        assert "np.array(" not in sess.source(drawn.initializer)  # stored as it is: no copy
        assert "np.array(Reshape)" in sess.source(set_w, {x: xv})  # a view: copied
        sess.run(sg.global_variables_initializer())
        got_tmp, _, _ = sess.run([tmp, set_w, set_w2], {x: xv})
        sess.run(step)
        np.testing.assert_array_equal(got_tmp, 2)
        np.testing.assert_array_equal(sess.run(w2), 2)
        np.testing.assert_array_equal(sess.run(w), 3)
        got_before, _ = sess.run([before, set_from_view], {x: xv})
        sess.run(step)
        np.testing.assert_array_equal(got_before, 3)
        np.testing.assert_array_equal(sess.run(w), 4)


def test_an_update_that_raises_leaves_the_variable_as_it_was():
    n = 8192
    w = sg.Variable(np.full(n, 3e38, np.float32), name="w")
    double = sg.assign_add(w, sg.identity(w) * 1.0)
    with sg.Session() as sess:
        sess.run(w.initializer)
        assert "rt.update_in_place(" in sess.source(double)
        with np.errstate(over="raise"), pytest.raises(sg.errors.InvalidArgumentError,
                                                      match="FloatingPointError"):
            sess.run(double)
        np.testing.assert_array_equal(sess.run(w), np.float32(3e38))
        with warnings.catch_warnings():  # NumPy warns; the filter makes the warning an error
            warnings.simplefilter("error")
            with np.errstate(over="warn"), pytest.raises(sg.errors.InvalidArgumentError,
                                                         match="RuntimeWarning"):
                sess.run(double)
        np.testing.assert_array_equal(sess.run(w), np.float32(3e38))
        with np.errstate(over="ignore"):
            sess.run(double)
        assert np.isinf(sess.run(w)).all()


def test_a_fetched_sum_to_is_never_the_variable_array_itself():
    """Found while planning updates in place: SumTo of a variable read, with nothing to sum
    and simplify off, was `V['w']` itself, fetched without a copy."""
    from staticgrad.ops.array_ops import shape_of, sum_to
    w = sg.Variable(np.ones(4, np.float32), name="w")
    s = sum_to(sg.identity(w), shape_of(w))
    with sg.Session(options=sg.CompileOptions(disable={"simplify"})) as sess:
        sess.run(w.initializer)
        got = sess.run(s)
        got[0] = 99
        np.testing.assert_array_equal(sess.run(w), 1)


# -- fusion ----------------------------------------------------------------------------------
N = 200_003  # more than one block per thread, and not a multiple of the block


def _w3(x):
    return sg.reduce_sum(sg.tanh(1.5 * x + 0.3) * sg.sigmoid(x) + 0.5 * sg.exp(-sg.square(x))
                         + sg.log1p(sg.square(x)))


def test_fusion_evaluates_forward_and_gradient_in_one_group_and_agrees():
    x = sg.placeholder(sg.float32, [None], name="x")
    y = _w3(x)
    (dx,) = sg.gradients(y, [x])
    mid = sg.tanh(1.5 * x + 0.3)  # an intermediate, fetched too
    xv = np.random.default_rng(0).normal(size=N).astype(np.float32)
    keep = xv.copy()
    # NumPy's ufuncs in the group (runtime_fast's exp, log and sigmoid, where installed, may
    # differ in the last bits: tests/test_runtime_fast.py)
    with sg.Session(options=sg.CompileOptions(vector_math=False)) as sess:
        src = sess.source([y, dx, mid], {x: xv})
        fused = sess.run([y, dx, mid], {x: xv})
    with sg.Session(options=sg.CompileOptions(disable={"fuse"})) as sess:
        plain = sess.run([y, dx, mid], {x: xv})
    with sg.Session() as sess:
        default = sess.run([y, dx, mid], {x: xv})
    assert src.count("rt.run_blocks(") == 1 and "# fused: " in src
    assert "#   Sum = sum(" in src  # the fused expression is shown
    np.testing.assert_allclose(fused[0], plain[0], rtol=1e-5)  # sums add in another order
    np.testing.assert_array_equal(fused[1], plain[1])          # elementwise: bit for bit
    np.testing.assert_array_equal(fused[2], plain[2])
    for a, b in zip(default, plain):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6)
    np.testing.assert_array_equal(xv, keep)


def test_fused_groups_keep_dtypes_and_read_scalars_and_variables():
    x = sg.placeholder(sg.float64, [N], name="x")
    scale = sg.placeholder(sg.float64, [], name="scale")
    w = sg.Variable(np.linspace(0, 1, N), name="w")
    y = sg.exp(x * scale) * w - sg.sqrt(sg.abs(x) + 1.0)
    xv = np.linspace(-2, 2, N)
    with sg.Session() as sess:
        sess.run(w.initializer)
        got = sess.run(y, {x: xv, scale: 0.5})
        assert "rt.run_blocks(" in sess.source(y, {x: xv, scale: 0.5})
    want = np.exp(xv * 0.5) * np.linspace(0, 1, N) - np.sqrt(np.abs(xv) + 1.0)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_relu6_expm1_softplus_floordiv_floormod_and_rsqrt_write_into_their_rows(dtype):
    """Each line of the block writes with out= (none allocates a new array), and the values
    are the unfused ones, bit for bit."""
    x = sg.placeholder(sg.as_dtype(dtype), [N], name="x")
    y = sg.nn.relu6(sg.floordiv(x * 3, x * 0 + 2) - 1)
    y = sg.expm1(y * 0.5) + y + sg.mod(x, 3.5) * sg.rsqrt(sg.abs(x) + 0.25)
    y = y - sg.nn.softplus(x * 0.25)
    xv = (np.arange(N) % 23 - 11).astype(dtype)
    with sg.Session() as sess:
        src = sess.source(y, {x: xv})
        got = sess.run(y, {x: xv})
    with sg.Session(options=sg.CompileOptions(disable={"fuse"})) as sess:
        want = sess.run(y, {x: xv})
    kernel = src[src.index("def fused"):]
    steps = [line for line in kernel.splitlines() if " = np." in line or " = rt." in line]
    assert steps and all("out=" in line for line in steps), kernel
    assert all(f in kernel for f in ("rt.clip(", "np.floor_divide(", "np.remainder(", "np.sqrt(",
                                     "rt.softplus("))
    np.testing.assert_array_equal(got, want)
    assert got.dtype == dtype


@pytest.mark.parametrize("fuse", [True, False])
def test_relu_grad_writes_into_a_dying_buffer_and_keeps_nans(fuse):
    """ReluGrad (g * (y > 0)) has an out= form: in a block it writes into a row, alone it
    takes the buffer of the gradient that dies there. NaN gradients stay NaN, as in TF1."""
    x = sg.placeholder(sg.float32, [N], name="x")
    y = sg.nn.relu(x * 1.5 - 2.0)
    dx, = sg.gradients(sg.reduce_sum(y * sg.sin(x)), [x])
    xv = np.linspace(-3, 3, N).astype(np.float32)
    xv[:3] = [np.nan, np.inf, -np.inf]
    options = sg.CompileOptions(disable=set() if fuse else {"fuse"})
    with np.errstate(invalid="ignore"), sg.Session(options=options) as sess:
        src = sess.source(dx, {x: xv})
        got = sess.run(dx, {x: xv})
    line = next(line for line in src.splitlines() if "ReluGrad = " in line)
    g, mask, out = re.search(r"np\.multiply\((\w+), np\.greater\((\w+), 0\), out=(\w+)\)",
                             line).groups()
    assert out.startswith("r") if fuse else out in (g, mask), src  # a row, or a dying buffer
    assert ("def fused" in src) is fuse
    with np.errstate(invalid="ignore"):  # by hand: sin(x) 1.5 [1.5x - 2 > 0] + y cos(x)
        z = xv * np.float32(1.5) - np.float32(2)
        want = (np.sin(xv) * (np.maximum(z, 0) > 0)) * np.float32(1.5) \
            + np.maximum(z, 0) * np.cos(xv)
    np.testing.assert_allclose(got[3:], want[3:], rtol=1e-6, atol=1e-6)
    assert np.isnan(got[:3]).all()  # NaN in: NaN; inf in: sin(inf) is NaN, times 0 or 1


def test_fused_numbers_are_0d_constants_only_where_ufuncs_read_them():
    """In a block, ufuncs read numbers as 0-d constants named by value (f32_1_5). Elsewhere
    the literal stays: `x ** 0.5` (NumPy's square-root path) differs from np.power for
    float16 at -0.0 and -inf, and the same constant outside the group keeps its literal."""
    x = sg.placeholder(sg.float16, [N], name="x")
    s = sg.placeholder(sg.float16, [3], name="s")
    half = sg.constant(0.5, sg.float16)
    big = sg.pow(sg.abs(x) * -1.5, half)  # fused: the Mul by a number, the Pow by a literal
    small = sg.pow(s * sg.reduce_sum(big), half)  # three elements, outside the group
    xv = np.full(N, 4.0, np.float16)
    xv[:3] = [0.0, np.inf, 2.0]
    feed = {x: xv, s: np.array([-0.0, -np.inf, 4.0], np.float16)}
    with np.errstate(all="ignore"):
        with sg.Session() as sess:
            src = sess.source([big, small], feed)
            got = sess.run([big, small], feed)
        with sg.Session(options=sg.CompileOptions(disable={"fuse"})) as sess:
            want = sess.run([big, small], feed)
    kernel = src[src.index("def fused"):]
    assert "np.multiply(" in kernel and "f16_m1_5" in kernel and "** 0.5" in kernel, kernel
    assert "** 0.5" in src[:src.index("def fused")], src
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert np.array_equal(np.signbit(g), np.signbit(w))


def test_module_constants_outside_blocks_keep_their_names():
    x = sg.placeholder(sg.float32, [4], name="x")
    c = sg.placeholder(sg.bool, [4], name="c")
    y = sg.where(c, sg.constant(0.25, name="learning_rate"), sg.constant(0.5, name="momentum"))
    with sg.Session() as sess:
        src = sess.source(y + x, {x: np.ones(4, np.float32), c: np.ones(4, bool)})
    assert "rt.select(c, learning_rate, momentum)" in src, src


def test_an_error_in_a_fused_block_names_the_op():
    x = sg.placeholder(sg.int32, [N], name="x")
    y = sg.pow(x + 1, x - 5, name="the_power")  # negative integer powers raise in NumPy
    with sg.Session() as sess, pytest.raises(sg.errors.InvalidArgumentError,
                                             match="the_power"):
        sess.run(y * 2, {x: np.arange(N, dtype=np.int32)})


# -- the scalar fast path ------------------------------------------------------------------------
def _elementwise_cases():
    """Every elementwise op of the registry on one-element inputs: (type, fn, arrays)."""
    from staticgrad.ops.registry import REGISTRY
    cases = []
    for op_type, opdef in sorted(REGISTRY.items()):
        if not opdef.elementwise or opdef.stateful or opdef.numpy is None:
            continue
        for dtype, value in ((np.float64, 0.7), (np.int32, 3), (np.bool_, True)):
            if op_type == "Cast":
                attrs = {"dtype": sg.float32}
            elif op_type == "LeakyRelu":
                attrs = {"alpha": 0.2}
            else:
                attrs = {}
            n_in = 3 if op_type in ("Select", "ClipByValue") else (2 if op_type in _BINARY else 1)
            arrays = [np.full((1,), value, dtype) for _ in range(n_in)]
            if op_type == "Select":
                arrays[0] = np.array([True])
            try:
                with sg.Graph().as_default():
                    xs = [sg.constant(a) for a in arrays]
                    sg.get_default_graph().create_op(op_type, xs, attrs)
            except (TypeError, ValueError):
                continue
            cases.append((op_type, attrs, arrays))
            break
    return cases


_BINARY = {"Add", "Sub", "Mul", "RealDiv", "FloorDiv", "FloorMod", "Pow", "Maximum", "Minimum",
           "Greater", "Less", "GreaterEqual", "LessEqual", "Equal", "NotEqual", "LogicalAnd",
           "LogicalOr", "ReluGrad", "AddN"}


@pytest.mark.parametrize("op_type,attrs,arrays", _elementwise_cases(),
                         ids=[c[0] for c in _elementwise_cases()])
def test_scalar_path_gives_the_same_values_and_dtypes(op_type, attrs, arrays):
    results = []
    for options in (sg.CompileOptions(), sg.CompileOptions(disable={"scalars"})):
        with sg.Graph().as_default() as g:
            xs = [sg.placeholder(sg.as_dtype(a.dtype), a.shape) for a in arrays]
            y = g.create_op(op_type, xs, dict(attrs)).outputs[0]
            z = sg.logical_not(y) if y.dtype.is_bool else y + y  # a chain of two nodes
            with sg.Session(options=options) as sess:
                src = sess.source(z, dict(zip(xs, arrays)))
                results.append(sess.run(z, dict(zip(xs, arrays))))
        if not options.disable and op_type not in ("Identity", "StopGradient"):
            assert "[0]" in src  # those two are simplified away
    assert results[0].dtype == results[1].dtype and results[0].shape == results[1].shape == (1,)
    np.testing.assert_array_equal(results[0], results[1])


def test_scalar_path_makes_w1_cheap_and_exact():
    a = sg.placeholder(sg.float32, [1], name="a")
    ws = [sg.Variable(np.array([v], np.float32), name=f"w{i}") for i, v in enumerate((2, 5, 9, 7))]
    w1, w2, w3, w4 = ws
    loss = 10.0 - (w3 * (w1 * a) + w4 * (w2 * a))
    fetches = [loss, *sg.gradients(loss, ws)]
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        src = sess.source(fetches, {a: [4.0]})
        got = sess.run(fetches, {a: [4.0]})
    assert "a_s = a[0]" in src and "np.multiply" not in src
    assert [v.tolist() for v in got] == [[-202.0], [-36.0], [-28.0], [-8.0], [-20.0]]
    assert all(v.dtype == np.float32 and v.shape == (1,) for v in got)


# -- found by review: each compared with every pass off ----------------------------------------
def _on_and_off(fetches, feed=None, init=()):
    out = []
    for options in (sg.CompileOptions(verify=True),
                    sg.CompileOptions(disable=set(compiler.PASS_NAMES), verify=True)):
        with sg.Session(options=options) as sess:
            for i in init:
                sess.run(i)
            out.append(sess.run(fetches, feed))
    return out


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


def test_fused_groups_with_several_sums_and_integer_sums():
    x = sg.placeholder(sg.float32, [N], name="x")
    a = sg.exp(x * 0.001)
    s1, s2 = sg.reduce_sum(a * 2.0), sg.reduce_sum(a * 3.0)
    k = sg.placeholder(sg.int32, [N], name="k")
    big = sg.reduce_sum(k * 3)
    feed = {x: np.linspace(-1, 1, N, dtype=np.float32), k: np.full(N, 20000, np.int32)}
    on, off = _on_and_off([s1, s2.op, big], feed)
    np.testing.assert_allclose(on[0], off[0], rtol=1e-5)
    assert on[2] == off[2] and on[2].dtype == off[2].dtype == np.int32


def test_fused_sum_over_every_axis_named_two_ways_and_long_chains():
    x = sg.placeholder(sg.float32, [None, 300, 300], name="x")
    s = sg.reduce_sum(sg.exp(x * 0.01) + 1.0, axis=[1, -1])
    y = sg.reshape(x, [-1])
    for _ in range(600):  # longer than the recursion limit's depth of a naive expression walk
        y = sg.sin(y)
    xv = np.random.default_rng(1).normal(size=(2, 300, 300)).astype(np.float32)
    on, off = _on_and_off([s, y], {x: xv})
    assert on[0].shape == off[0].shape == (2,)
    np.testing.assert_allclose(on[0], off[0], rtol=1e-5)
    np.testing.assert_array_equal(on[1], off[1])


def test_a_fused_sum_of_a_broadcast_number_counts_every_element():
    """Members computed from numbers alone are computed once, before the blocks; a sum over
    one still adds one term per element."""
    c = sg.placeholder(sg.float32, [], name="c")
    b = sg.broadcast_to(c, [N])
    sums = [sg.reduce_sum(0.5 * b), sg.reduce_sum(sg.exp(b) * 2.0), sg.reduce_sum(b)]
    fetched = sg.exp(b) + 1.0  # and a fetched one is written out in full...
    x = sg.placeholder(sg.float32, [N], name="x")
    read = sg.sin(x) + (fetched * 3.0)  # ...even when another number reads it
    on, off = _on_and_off([*sums, fetched, read],
                          {c: 2.0, x: np.linspace(-1, 1, N, dtype=np.float32)})
    np.testing.assert_allclose(on[:3], [N, np.exp(2.0) * 2 * N, 2 * N], rtol=1e-5)
    np.testing.assert_allclose(on[:3], off[:3], rtol=1e-5)
    np.testing.assert_array_equal(on[3], off[3])
    np.testing.assert_array_equal(on[4], off[4])


def test_fused_blocks_compute_in_scratch_rows_and_allocate_nothing():
    import tracemalloc
    x = sg.placeholder(sg.float32, [None], name="x")
    y = sg.reduce_sum(sg.tanh(1.5 * x + 0.3) * sg.exp(-sg.square(x)) + x / (1.0 + x * x))
    (dx,) = sg.gradients(y, [x])  # an AddN of four terms (one negated: a subtraction)
    xv = np.random.default_rng(0).normal(size=N).astype(np.float32)
    # NumPy's ufuncs (bit for bit with the unfused plan; runtime_fast's kernels compute in
    # the same rows, allocating nothing either, and agree to a few ulps: test_runtime_fast)
    with sg.Session(options=sg.CompileOptions(vector_math=False)) as sess:
        src = sess.source([y, dx], {x: xv})
        fn = sess.make_callable([y, dx], [x])
        first = fn(xv)  # the first call makes each thread's scratch
        tracemalloc.start()
        try:
            again = fn(xv)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    with sg.Session(options=sg.CompileOptions(disable={"fuse"})) as sess:
        plain = sess.run([y, dx], {x: xv})
    kernel = src[src.index("def fused"):]
    assert "scratch=(" in src and "np.subtract(" in kernel and "np.broadcast_to" not in src
    assert all("out=" in line for line in kernel.split("\n")[3:-2] if "np.add.reduce" not in line)
    # dx itself and a few small objects: no block-sized temporary (128 KB each)
    assert peak < xv.nbytes + 64_000, peak
    np.testing.assert_array_equal(first[1], plain[1])
    np.testing.assert_array_equal(again[1], plain[1])
    np.testing.assert_allclose(again[0], plain[0], rtol=1e-5)


def test_an_add_n_of_one_input_is_a_new_array():
    """Found by review: with simplify off, AddN([a]) was `a` itself, and the memory plan
    (told AddN makes a new array) let a later node overwrite it."""
    from staticgrad.ops.math_ops import apply1
    x = sg.placeholder(sg.float32, [N], name="x")
    a = sg.exp(x)
    b, c = apply1("AddN", [a]), a * 2.0
    xv = np.linspace(-1, 1, N, dtype=np.float32)
    for off in ({"simplify"}, {"simplify", "fuse"}):
        with sg.Session(options=sg.CompileOptions(disable=off, vector_math=False)) as sess:
            got_b, got_c = sess.run([b, c], {x: xv})
        np.testing.assert_array_equal(got_b, np.exp(xv))
        np.testing.assert_array_equal(got_c, np.exp(xv) * np.float32(2))


def test_kernel_names_and_negative_literals_are_safe():
    x = sg.placeholder(sg.float32, [N], name="x")
    y = sg.exp(sg.add(sg.multiply(x, 2.0, name="hi"), 1.0, name="lo"))
    z = sg.pow(sg.constant(-2.0), sg.constant([2.0, 3.0]))
    on, off = _on_and_off([y, z], {x: np.zeros(N, np.float32)})
    np.testing.assert_array_equal(on[0], off[0])
    np.testing.assert_array_equal(on[1], [4.0, -8.0])


def test_fetched_results_are_private_and_writable():
    x = sg.placeholder(sg.float32, [100_000], name="x")
    w = sg.Variable(np.zeros(100_000, np.float32))
    b = sg.exp(x) * 2.0
    upd = sg.assign(w, b)
    (g,) = sg.gradients(sg.reduce_sum(sg.sin(x) * 0.5), [x])
    with sg.Session() as sess:
        sess.run(w.initializer)
        got_b, _, got_g = sess.run([b, upd, g], {x: np.zeros(100_000, np.float32)})
        got_b[:] = -1
        got_g += 1  # writable
        assert (sess.run(w) == 2).all()  # the variable did not change with the fetched array


def test_sum_to_that_does_nothing_is_not_overwritten():
    x = sg.placeholder(sg.float32, [8192], name="x")
    a = sg.exp(x)
    b = sg.ops.array_ops.sum_to(a, sg.shape(x))
    c = a * 2.0
    with sg.Session(options=sg.CompileOptions(disable={"simplify", "fuse"})) as sess:
        got_b, got_c = sess.run([b, c], {x: np.zeros(8192, np.float32)})
    assert (got_b == 1).all() and (got_c == 2).all()


def test_folding_never_makes_a_broadcast_into_a_big_constant():
    x = sg.placeholder(sg.float32, [60_000], name="x")
    (g,) = sg.gradients(sg.reduce_sum(sg.sin(x) * 0.5 - x * 3.0), [x])
    with sg.Session() as sess:
        plan = sess.plan(g, {x: np.zeros(60_000, np.float32)})
    assert sum(np.asarray(c).nbytes for c in plan.fn.__globals__.values()
               if isinstance(c, np.ndarray)) < 10_000


def test_every_ufunc_form_computes_what_the_ops_numpy_form_computes():
    """The memory plan writes results with `OpDef.ufunc` (out=); it must agree with `numpy`."""
    from staticgrad import runtime
    from staticgrad.ops.registry import REGISTRY, NodeCtx, kernel, render_ufunc
    checked = 0
    for op_type, opdef in REGISTRY.items():
        if not opdef.ufunc:
            continue
        # {0}, {1}..., then {out}; a callable form takes any number (AddN): three
        arity = opdef.ufunc.count("{") - 1 if isinstance(opdef.ufunc, str) else 3
        arrays = [np.linspace(0.5, 2.0, 7) + i for i in range(arity)]
        ctx = NodeCtx(op_type, {}, [sg.TensorShape([7])] * arity, [sg.float64] * arity,
                      [None] * arity)
        ctx.out_shapes, ctx.out_dtypes = [sg.TensorShape([7])], [sg.float64]
        want = kernel(opdef, ctx)(*arrays)
        out = np.empty(7)
        names = {f"a{i}": a for i, a in enumerate(arrays)}
        env = {"np": np, "rt": runtime, "out": out, **names}
        got = eval(render_ufunc(opdef, list(names), "out", ctx), env)
        assert got is out, op_type
        np.testing.assert_array_equal(out, want, err_msg=op_type)
        for i in range(arity):  # and in place: the result written over each input
            env = {"np": np, "rt": runtime, **{k: a.copy() for k, a in names.items()}}
            got = eval(render_ufunc(opdef, list(names), f"a{i}", ctx), env)
            assert got is env[f"a{i}"], op_type
            np.testing.assert_array_equal(got, want, err_msg=f"{op_type} into input {i}")
        checked += 1
    assert checked >= 18
