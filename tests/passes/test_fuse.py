"""Fusion: elementwise chains over one large shape, forward and gradient, run block by
block in one group; the values are the unfused plan's (bit for bit, sums to rounding),
dtypes are kept, blocks allocate nothing, and an error names the op."""

from __future__ import annotations

import re

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.backends.numpy.policy import FUSE
from staticgrad.passes.fuse import FusePolicy, fuse_elementwise
from staticgrad.verify import verify
from tests.passes.helpers import Body, N, _on_and_off, number, types, vector

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


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
    # differ in the last bits: tests/backends/numpy/test_fast.py)
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


# -- found by review -----------------------------------------------------------------------------
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


def test_kernel_names_and_negative_literals_are_safe():
    x = sg.placeholder(sg.float32, [N], name="x")
    y = sg.exp(sg.add(sg.multiply(x, 2.0, name="hi"), 1.0, name="lo"))
    z = sg.pow(sg.constant(-2.0), sg.constant([2.0, 3.0]))
    on, off = _on_and_off([y, z], {x: np.zeros(N, np.float32)})
    np.testing.assert_array_equal(on[0], off[0])
    np.testing.assert_array_equal(on[1], [4.0, -8.0])


def test_each_region_is_fused_on_its_own_and_its_node_joins_no_group():
    x = vector(FUSE.min_elements)
    region = Body(x)
    t = region.op("Tanh", region.op("Mul", region.op("Exp", region.feeds[0]), number(0.5)))
    outer = Body(x)
    s = outer.op("Sin", outer.op("Exp", outer.feeds[0]))
    (c,) = outer.call(region.program(t), s)
    program = outer.program(outer.op("Cos", outer.op("Neg", c)))
    fused = fuse_elementwise(program, FUSE)
    verify(fused)
    assert types(fused) == ["Fused", "Call", "Fused"]
    assert types(fused.nodes[1].regions[0]) == ["Fused"]
    assert [m.type for m in fused.nodes[1].regions[0].nodes[0].members] == ["Exp", "Mul",
                                                                           "Tanh"]
    small = FusePolicy(min_elements=FUSE.min_elements + 1, scalar_broadcasts=True,
                       reductions={"Sum"})
    assert fuse_elementwise(program, small).nodes == program.nodes  # too small: as it was
    no_scalars = FusePolicy(min_elements=1, scalar_broadcasts=False, reductions=())
    assert types(fuse_elementwise(program, no_scalars).nodes[1].regions[0]) == [
        "Exp", "Mul", "Tanh"]  # x * 0.5 broadcasts a number: not blockwise under it


def test_a_member_reading_a_variable_joins_a_group_in_a_training_step():
    """A node reading a variable may be in a group where the plan assigns variables: here
    x * w joins its ReLU, the sum, the gradient and the step's lr * g in one group (it was
    kept out, one more pass over memory, lest the group run after an assignment of w)."""
    x = sg.placeholder(sg.float32, [256, 512], name="x")
    w = sg.Variable(np.linspace(-1, 1, 256 * 512, dtype=np.float32).reshape(256, 512),
                    name="w")
    loss = sg.reduce_sum(sg.nn.relu(x * w))
    step = sg.train.GradientDescentOptimizer(0.1).minimize(loss)
    xv = np.random.default_rng(0).normal(size=(256, 512)).astype(np.float32)
    with sg.Session() as sess:
        sess.run(w.initializer)
        source = sess.source([step, loss], {x: xv})
        got = [sess.run([step, loss], {x: xv})[1] for _ in range(3)] + [sess.run(w)]
    run = source.split("def run(")[1].split("\ndef ")[0]
    assert run.count("rt.run_blocks(") == 1 and "# fused: 6 elementwise ops" in run
    # (the block kernel, or with the [fast] extra its one-pass numba kernel)
    assert re.search(r"rt\.run_blocks\(fused\w*, 131072, x\.reshape\(-1\), V\['w'\]", run)
    want_w, want = np.linspace(-1, 1, 256 * 512, dtype=np.float32).reshape(256, 512), []
    for _ in range(3):
        pre = xv * want_w
        want.append(np.maximum(pre, 0).sum(dtype=np.float64))
        want_w = want_w - np.float32(0.1) * (pre > 0) * xv
    np.testing.assert_allclose(got[:3], want, rtol=1e-5)
    np.testing.assert_allclose(got[3], want_w, rtol=1e-6)


@pytest.mark.parametrize("update", ["assign", "assign_sub", "scatter_sub"])
def test_a_group_never_reads_a_variable_after_a_later_write_of_it(update):
    """A group runs where its last member is. `early` reads w (the value it has when the run
    begins), then w is written, then `later` reads `early`: had `later` joined `early`'s
    group, the group would read w after the write (it did, with a fused update in place)."""
    x = sg.placeholder(sg.float32, [N], name="x")
    w = sg.Variable(np.full(N, 2.0, np.float32), name="w")
    early = w * x
    write = {"assign": lambda: sg.assign(w, x * 10.0),
             "assign_sub": lambda: sg.assign_sub(w, x),
             "scatter_sub": lambda: sg.scatter_sub(w, [0, 5], [1.0, 1.0])}[update]()
    later = sg.exp(early * 0.001)
    xv = np.linspace(-1, 1, N, dtype=np.float32)
    for options in (sg.CompileOptions(), sg.CompileOptions(disable={"fuse"})):
        with sg.Session(options=options) as sess:
            sess.run(w.initializer)
            got = sess.run([later, write], {x: xv})[0]
        np.testing.assert_allclose(got, np.exp(2.0 * xv * np.float32(0.001)), rtol=1e-6)


def test_a_group_never_reads_a_broadcast_variable_after_a_later_write_of_it():
    """A group reads a broadcast of a number as the number itself, where the group runs; a
    read of a variable, where the plan assigns variables, it must read as the broadcast did:
    `b` is w broadcast before w is written; `early` reads b (so `later`, after the write,
    joined its group) and `late`, made after the write, reads b too. Both read the new w
    (before and after reads of variables could join groups in a plan that assigns them)."""
    x = sg.placeholder(sg.float32, [N], name="x")
    w = sg.Variable(np.float32(2.0), name="w")
    b = sg.broadcast_to(w, [N])
    early = x * b
    write = sg.assign(w, 5.0)
    later = sg.exp(early * 0.001)
    late = sg.tanh(x + b)
    xv = np.linspace(-1, 1, N, dtype=np.float32)
    want = np.exp(2.0 * xv * np.float32(0.001))
    for options in (sg.CompileOptions(verify=True), sg.CompileOptions(disable={"fuse"})):
        with sg.Session(options=options) as sess:
            sess.run(w.initializer)
            got = sess.run([later, late, write], {x: xv})
        np.testing.assert_allclose(got[0], want, rtol=1e-6)
        np.testing.assert_allclose(got[1], np.tanh(xv + 2.0), rtol=1e-6)
        assert got[2] == 5.0
