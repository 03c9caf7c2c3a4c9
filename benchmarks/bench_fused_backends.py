"""Why fused groups run on NumPy blocks (with vector exp and log): W3 up to eight ways.

W3 is y = sum(tanh(1.5x + 0.3) * sigmoid(x) + 0.5 exp(-x^2) + log1p(x^2)) and dy/dx over a
million float32 values (benchmarks/workloads/w3.py). Ways, interleaved round by round in one
process, threads limited to 2:

  hand NumPy   the expression and its derivative written by hand, one NumPy call per op
  staticgrad   make_callable on the graph: one fused group, run in blocks on threads; with
               the [fast] extra (numba) working here, the group is one generated numba
               kernel (backends/numpy/one_pass_render.py: what one_pass below does by hand),
               else NumPy's ufuncs a block
  staticgrad_numpy   the same with CompileOptions(vector_math=False): NumPy's ufuncs only
  numexpr      the same two expressions given to numexpr.evaluate (if numexpr is installed),
               which is what the issue proposed for an optional `staticgrad[fast]` extra
  numba        the expression and its derivative as one loop over the elements, compiled
               by numba (if installed) with parallel=True: numba's own math, one element at
               a time
  one_pass     a fused group compiled whole by numba, written by hand (issue 27's prototype
               of what staticgrad now generates): one pass over the elements in sub-blocks
               of 512 (nine rows of 2 KB, in L1), cheap ops in loops LLVM vectorizes, tanh,
               sigmoid, exp and log1p eight at a time from glibc's libmvec through
               runtime_fast's intrinsics, y summed in eight float32 lanes (a float64 sum,
               element after element, is a chain of dependent adds: 1.8x slower in a run
               here), and a check that every result is finite (what a generated kernel
               needs to hand a block with a NaN or an Inf to NumPy, which reports it); run
               on staticgrad's block threads (blocks.run_blocks). Needs the [fast] extra
  jax          `jax.jit(jax.value_and_grad(f))` (if JAX is installed): the peer of issue 27
  mkl_umath    staticgrad_numpy's fused group with NumPy's ufunc loops swapped for Intel VML's
               (if mkl_umath is installed): patched before each call and restored after
               (about 40 us of each call), so that the other ways keep NumPy's own loops.
               MKL_NUM_THREADS is set to 1 before it loads: the blocks are the threads.

With numba or mkl_umath there, each turn starts after the suite's rest and rewarm
(workloads/common.py): their OpenMP threads spin after their work and slow the next way.

Each way's y and dy/dx are checked against hand NumPy first, and the dtype numexpr returns
is reported: numexpr reads the Python constants as float64 and returns float64 for float32
input. Reported: median milliseconds per call and the ratio to hand NumPy.

    python benchmarks/bench_fused_backends.py [--rounds 7] [--number 5] [--out PATH]
"""

import _harness

_harness.limit_threads()  # before NumPy is imported

import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
from workloads import w3  # noqa: E402

import staticgrad as sg  # noqa: E402

DEFAULT_OUT = os.path.join(ROOT, "benchmarks", "results", "fused_backends.json")
Y = "sum(tanh(1.5*x + 0.3) / (1 + exp(-x)) + 0.5*exp(-x*x) + log1p(x*x))"
DY = ("1.5*(1 - tanh(1.5*x + 0.3)**2) / (1 + exp(-x))"
      " + tanh(1.5*x + 0.3) * exp(-x) / (1 + exp(-x))**2 - x*exp(-x*x) + 2*x / (1 + x*x)")


def numexpr_way():
    """(call, its first result, numexpr's version and whether it uses Intel's VML), or None."""
    try:
        import numexpr
    except ImportError:
        return None
    numexpr.set_num_threads(2)
    x = w3.data()

    def call():
        return numexpr.evaluate(Y, {"x": x}), numexpr.evaluate(DY, {"x": x})
    return call, call(), f"{numexpr.__version__} (VML: {numexpr.use_vml})"


def numba_way():
    """(call, its first result, numba's version and whether it uses Intel's SVML), or None.
    Compiled before it is timed (about a second)."""
    try:
        import numba
    except ImportError:
        return None
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))  # 1 on a 1-core machine
    f32, x = np.float32, w3.data()

    @numba.njit(parallel=True)
    def kernel(x, dx):
        y = 0.0  # float64: a float32 sum of a million terms would not meet rtol 1e-4
        for i in numba.prange(x.shape[0]):
            v = x[i]
            t = np.tanh(f32(1.5) * v + f32(0.3))
            s = f32(1) / (f32(1) + np.exp(-v))
            e = np.exp(-v * v)
            y += t * s + f32(0.5) * e + np.log1p(v * v)
            dx[i] = (f32(1.5) * (f32(1) - t * t) * s + t * s * (f32(1) - s) - v * e
                     + f32(2) * v / (f32(1) + v * v))
        return y

    def call():
        dx = np.empty_like(x)
        return kernel(x, dx), dx
    return call, call(), f"{numba.__version__} (SVML: {numba.config.USING_SVML})"


SUB = 512  # the one-pass kernel's sub-block (elements)


def one_pass_way():
    """(call, its first result, what it uses), or None where runtime_fast does not work."""
    if sg.runtime_fast.why_not() is not None:
        return None
    from numba import njit

    from staticgrad.backends.numpy import _vector_kernels as vk
    from staticgrad.backends.numpy.blocks import run_blocks
    exp8, sigmoid8, tanh8, log1p8 = vk.exp8, vk.sigmoid8, vk.tanh8, vk.log1p8
    f32, x = np.float32, w3.data()

    @njit(nogil=True, error_model="numpy", boundscheck=False)
    def kernel(lo, hi, x, dx):
        rows = np.empty((9, SUB), np.float32)  # (per block of run_blocks: 18 KB)
        a, m2, sq, xs, t, s, e, lg, y = (rows[0], rows[1], rows[2], rows[3], rows[4], rows[5],
                                         rows[6], rows[7], rows[8])
        lanes = np.zeros(8, np.float32)  # y summed in eight float32 lanes (a vector register)
        finite = True
        b = lo
        while b < hi:
            m = min(SUB, hi - b)
            for j in range(m):
                v = x[b + j]
                a[j], m2[j], sq[j], xs[j] = f32(1.5) * v + f32(0.3), -(v * v), v * v, v
            for j in range(m, SUB):  # the last sub-block's padding: eights of zeros
                a[j] = m2[j] = sq[j] = xs[j] = y[j] = f32(0)
            for i in range(0, SUB, 8):
                tanh8(a, t, i)
                sigmoid8(xs, s, i)
                exp8(m2, e, i)
                log1p8(sq, lg, i)
            for j in range(m):
                v, tj, sj, ej = xs[j], t[j], s[j], e[j]
                yj = tj * sj + f32(0.5) * ej + lg[j]
                dj = (f32(1.5) * (f32(1) - tj * tj) * sj + tj * sj * (f32(1) - sj) - v * ej
                      + f32(2) * v / (f32(1) + sq[j]))
                finite &= (yj - yj == 0) & (dj - dj == 0)  # False for an Inf or a NaN
                y[j] = yj
                dx[b + j] = dj
            for i in range(0, SUB, 8):
                for k in range(8):
                    lanes[k] += y[i + k]
            b += SUB
        return lanes.sum(), finite

    def call():
        dx = np.empty_like(x)
        parts = run_blocks(kernel, x.shape[0], x, dx)
        assert all(p[1] for p in parts)
        return np.float32(sum(p[0] for p in parts)), dx
    return call, call(), "numba, libmvec, run_blocks"


def jax_way():
    """(call, its first result, JAX's version and device), or None."""
    try:
        import jax
    except ImportError:
        return None
    x = w3.data()

    def f(v):
        jnp = jax.numpy
        return jnp.sum(jnp.tanh(1.5 * v + 0.3) * jax.nn.sigmoid(v) + 0.5 * jnp.exp(-v * v)
                       + jnp.log1p(v * v))
    step, xj = jax.jit(jax.value_and_grad(f)), jax.numpy.asarray(x)

    def call():
        y, dx = jax.block_until_ready(step(xj))
        return np.asarray(y), np.asarray(dx)
    return call, call(), f"{jax.__version__} ({jax.default_backend()})"


def mkl_umath_way():
    """(call, its first result, mkl_umath's version), or None."""
    os.environ["MKL_NUM_THREADS"] = "1"  # read once, when MKL loads
    try:
        import mkl_umath
    except ImportError:
        return None
    fused, _ = w3.staticgrad_way(sg.CompileOptions(vector_math=False), fast=True)()

    def call():
        mkl_umath.patch_numpy_umath()
        try:
            return fused()
        finally:
            mkl_umath.restore_numpy_umath()
    return call, call(), mkl_umath.__version__


def main(argv=None):
    args = _harness.timing_arguments(__doc__, 5, "calls", DEFAULT_OUT).parse_args(argv)

    hand, want = w3.hand_numpy()
    ours, got = w3.staticgrad_way(None, fast=True)()
    plain, got_plain = w3.staticgrad_way(sg.CompileOptions(vector_math=False), fast=True)()
    ways = {"hand_numpy": hand, "staticgrad": ours, "staticgrad_numpy": plain}
    results = {"hand_numpy": want, "staticgrad": got, "staticgrad_numpy": got_plain}
    dtypes, versions = {}, {"staticgrad vector math": sg.runtime_fast.why_not() or "on"}
    for name, way in (("numexpr", numexpr_way), ("numba", numba_way),
                      ("one_pass", one_pass_way), ("jax", jax_way),
                      ("mkl_umath", mkl_umath_way)):
        found = way()
        if found is None:
            print(f"{name} is not installed: `pip install {name}` to compare it")
        else:
            ways[name], results[name], versions[name] = found
    for name, values in results.items():  # every way computes W3
        dtypes[name] = str(values[1].dtype)
        np.testing.assert_allclose(values[0], want[0], rtol=1e-4)
        np.testing.assert_allclose(values[1], want[1], rtol=1e-4, atol=1e-5)

    # numba's and MKL's OpenMP threads busy-wait after their work: the suite's rest before
    # each turn, when they are here (it doubled staticgrad's time without it)
    settle = 0.3 if {"numba", "mkl_umath"} & set(ways) else 0.0
    per_call = _harness.time_interleaved(ways, args.rounds, args.number, warmup=2, scale=1e3,
                                         settle_s=settle)
    median, ratio = _harness.medians_and_ratios(per_call)
    print(f"W3, {w3.SIZE:,} float32 values; median of {args.rounds} rounds x {args.number} "
          "calls, interleaved")
    print(f"{'':<18}{'ms/call':>10}{'x hand NumPy':>15}  result dtype")
    for name in ways:
        print(f"{name:<18}{median[name]:>10.2f}{ratio[name]:>15.3f}  {dtypes[name]}")
    for name, version in versions.items():
        print(f"{name} {version}")
    out = {"benchmark": "fused_backends", "workload": "W3", "rounds": args.rounds,
           "number_per_round": args.number, "ms_per_call_median": median,
           "ms_per_call_rounds": per_call, "ratio_to_hand_numpy": ratio,
           "result_dtype": dtypes, "versions": versions,
           "environment": _harness.environment()}
    _harness.write_json(args.out, out)
    return out


if __name__ == "__main__":
    main()
