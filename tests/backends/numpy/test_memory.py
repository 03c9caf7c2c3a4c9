"""The memory plan: intermediates freed after their last use, results written into dead
buffers (`out=`), variable updates in place; never over a feed, a fetch, a variable's
array or a value still read."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import staticgrad as sg
from tests.passes.helpers import N

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


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


# -- updates in place ----------------------------------------------------------------------------
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


# -- found by review -----------------------------------------------------------------------------
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


def test_every_out_form_computes_what_the_ops_reference_kernel_computes():
    """The memory plan and fused kernels write results with the NumPy backend's out= forms
    (lowering.OUT_FORMS); each must agree with the op's reference kernel, written into a
    new buffer and into each input's own buffer it may take."""
    from staticgrad.backends.numpy import runtime
    from staticgrad.backends.numpy.epilogues import EPILOGUES
    from staticgrad.backends.numpy.lowering import OUT_FORMS, READS_AFTER_OUT, out_form
    from staticgrad.ops.kernels import kernel
    from staticgrad.ops.table import REGISTRY, NodeCtx
    assert set(OUT_FORMS) - EPILOGUES <= set(REGISTRY) and \
        set(READS_AFTER_OUT) <= set(OUT_FORMS)
    for op_type, form in OUT_FORMS.items():
        if op_type in EPILOGUES:  # (no graph op: test_epilogues.py writes them into inputs)
            continue
        opdef = REGISTRY[op_type]
        # {0}, {1}..., then {out}; a callable form takes any number (AddN): three
        arity = len(set(re.findall(r"{\d+}", form))) if isinstance(form, str) else 3
        arrays = [np.linspace(0.5, 2.0, 7) + i for i in range(arity)]
        ctx = NodeCtx(op_type, {}, [sg.TensorShape([7])] * arity, [sg.float64] * arity,
                      [None] * arity)
        ctx.out_shapes, ctx.out_dtypes = [sg.TensorShape([7])], [sg.float64]
        want = kernel(opdef, ctx)(*arrays)
        out = np.empty(7)
        names = {f"a{i}": a for i, a in enumerate(arrays)}
        env = {"np": np, "rt": runtime, "out": out, **names}
        got = eval(out_form(op_type, list(names), "out", ctx), env)
        assert got is out, op_type
        np.testing.assert_array_equal(out, want, err_msg=op_type)
        for i in range(arity):  # and in place: the result written over each input it may
            if i in READS_AFTER_OUT.get(op_type, ()):  # (one it reads after writing out)
                continue
            env = {"np": np, "rt": runtime, **{k: a.copy() for k, a in names.items()}}
            got = eval(out_form(op_type, list(names), f"a{i}", ctx), env)
            assert got is env[f"a{i}"], op_type
            np.testing.assert_array_equal(got, want, err_msg=f"{op_type} into input {i}")
    assert len(OUT_FORMS) >= 30


@pytest.mark.parametrize("passes_through", [
    lambda w: sg.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s), [0, w])[1],
    lambda w: sg.while_loop(lambda s: sg.reduce_sum(s) < 0.0, lambda s: s * 2.0, [w]),
    lambda w: sg.cond(sg.constant(True), lambda: sg.identity(w), lambda: w * 2.0),
], ids=["loop giving its input back", "loop running no iteration", "cond's identity branch"])
def test_an_update_in_place_never_writes_into_what_a_region_gave_back(g, passes_through):
    # (a loop or a cond may return the variable's own array: an update after it used to be
    # written into that array, changing the value fetched from the region)
    n = 5000  # (large enough for the update to be written in place)
    w = sg.Variable(np.ones(n), name="w")
    y = passes_through(w)
    with sg.control_dependencies([y]):
        update = sg.assign_sub(w, sg.fill([n], np.float64(0.5)))
    sess = sg.Session()
    sess.run(w.initializer)
    got, _ = sess.run([y, update])
    np.testing.assert_array_equal(got, np.ones(n))
    np.testing.assert_array_equal(sess.run(w), np.full(n, 0.5))


def test_a_regions_body_frees_and_reuses_its_own_buffers(g):
    # (the memory plan covered the regions' nodes, but the functions of the regions were
    # written without it: every temporary of an LSTM step was a new array)
    xs = sg.placeholder(sg.float64, [3, 5000], name="xs")
    out = sg.scan(lambda a, x: sg.tanh(sg.exp(a * 0.5) * x), xs, initializer=sg.ones([5000],
                                                                                     sg.float64))
    source = sg.Session().source(out, {xs: np.ones((3, 5000))})
    body = source[source.index("def scan_Scan_body"):]
    assert "out=" in body and "\n    del " in body
    rows = np.random.default_rng(0).normal(size=(3, 5000))
    a, want = np.ones(5000), []
    for x in rows:
        a = np.tanh(np.exp(a * 0.5) * x)
        want.append(a)
    np.testing.assert_allclose(sg.Session().run(out, {xs: rows}), want)


def test_a_bias_add_and_a_relu_gradient_write_into_the_convolution_kernels_results():
    """Convolution and pooling kernels make new arrays (OpDef.new_array): a bias add writes
    into the convolution's result, a ReLU's gradient into the pooling gradient's, and the
    results are those of the plan without the memory pass."""
    rng = np.random.default_rng(0)
    x = sg.placeholder(sg.float32, [8, 8, 8, 3], name="x")
    w = sg.Variable(rng.standard_normal((3, 3, 3, 16)).astype(np.float32), name="w")
    b = sg.Variable(rng.standard_normal(16).astype(np.float32), name="b")
    h = sg.nn.relu(sg.nn.bias_add(sg.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"), b))
    pooled = sg.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    loss = sg.reduce_sum(sg.tanh(pooled))
    fetches = [loss, sg.gradients(loss, [w, b, x])]
    feed = {x: rng.standard_normal((8, 8, 8, 3)).astype(np.float32)}
    results = []
    for options in (sg.CompileOptions(disable={"memory"}), sg.CompileOptions()):
        with sg.Session(options=options) as sess:
            sess.run(sg.global_variables_initializer())
            source = sess.source(fetches, feed)
            results.append(sess.run(fetches, feed))
    conv = re.search(r"(\w+) = rt\.conv2d\(", source).group(1)
    assert f"out={conv})" in source
    pool_grad = re.search(r"(\w+) = rt\.max_pool_grad\(", source).group(1)
    assert re.search(rf"ReluGrad = np\.multiply\({pool_grad}, .*, out={pool_grad}\)", source)
    np.testing.assert_array_equal(results[0][0], results[1][0])
    for without, with_plan in zip(results[0][1], results[1][1]):
        np.testing.assert_array_equal(without, with_plan)
