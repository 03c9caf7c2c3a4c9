"""The floor of an im2col-and-OpenBLAS convolution on this machine, beside PyTorch eager's
convolution (issue 27: "ahead of PyTorch CPU eager").

For each convolution of bench_conv.py's two models (batch 128, 28x28 inputs, NHWC, stride 1,
SAME) and each of its three kernels (forward, input gradient `di`, filter gradient `dw`),
the pieces conv_blocked.py's lowering is made of, each timed alone on ONE thread over the
whole batch, an image at a time as conv_blocked walks it:

  copy   im2col of each image into a slab (forward, dw), or col2im of the slab into dx (di),
         with conv_fast's numba loops
  gemm   the products on the slab, OpenBLAS held to one thread: forward [HW, k] @ [k, O],
         di [HW, O] @ [O, k], dw [k, HW] @ [HW, O] added up (k = kh*kw*C)

then the floor on the two cores of the whole run: (copy + gemm) / 2, as if the two threads
lost nothing to each other, and (gemm) / 2, as if the copies cost nothing too; staticgrad's
kernel as it runs (conv_fast, two threads); PyTorch's (eager ATen, torch.set_num_threads(2):
oneDNN's direct convolution). Interleaved, round by round, in one process; medians in ms.
Where PyTorch's time is under the `gemm / 2` floor, no lowering onto OpenBLAS's products,
however its copies are made, can be ahead of it on that kernel.

    python benchmarks/bench_conv_floor.py                 # 5 rounds
    python benchmarks/bench_conv_floor.py --rounds 9
"""

import _harness

_harness.limit_threads()  # before NumPy is imported

import argparse  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from contextlib import nullcontext  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
from bench_conv import BATCH, MODELS, torch_way  # noqa: E402

from staticgrad.backends.numpy import conv_fast  # noqa: E402

KINDS = ("conv", "conv_di", "conv_dw")


def layers():
    """(name, H, C, O, k) of every convolution of bench_conv's models."""
    out = []
    for model, (convs, _) in MODELS.items():
        for i, (hw, c, o, k) in enumerate(convs):
            out.append((f"{model} conv{i + 1} {hw}x{hw}x{c}->{o} {k}x{k}", hw, c, o, k))
    return out


def pieces(kernels, kind, x, w, dy):
    """(copy, gemm): the lowering's copies and products of `kind`, on one thread, each a
    callable over the whole batch."""
    n, hw, _, c = x.shape
    k, o = w.shape[0], w.shape[3]
    pad = k // 2
    slab = np.empty((1, hw, hw, k, k, c), np.float32)
    flat = slab.reshape(-1, k * k * c)
    w2 = w.reshape(-1, o)
    w2t = np.ascontiguousarray(w2.T)
    out = np.empty((n, hw, hw, o), np.float32)
    dx = np.zeros(x.shape, np.float32)
    total = np.zeros((k * k * c, o), np.float32)
    kernels.im2col(x[:1], pad, pad, (1, 1), (1, 1), slab)  # (compiled before timing)

    def im2col():
        for b in range(n):
            kernels.im2col(x[b:b + 1], pad, pad, (1, 1), (1, 1), slab)

    def col2im():
        for b in range(n):
            kernels.col2im(slab, pad, pad, (1, 1), (1, 1), dx[b:b + 1])

    def forward():
        for b in range(n):
            np.matmul(flat, w2, out=out[b].reshape(-1, o))

    def input_gradient():
        for b in range(n):
            np.matmul(dy[b].reshape(-1, o), w2t, out=flat)

    product = np.empty_like(total)

    def filter_gradient():
        for b in range(n):
            np.matmul(flat.T, dy[b].reshape(-1, o), out=product)
            np.add(total, product, out=total)

    return {"conv": (im2col, forward), "conv_di": (col2im, input_gradient),
            "conv_dw": (im2col, filter_gradient)}[kind]


def staticgrads(kind, x, w, dy):
    """staticgrad's kernel of `kind` as a generated run() calls it (conv_fast)."""
    if kind == "conv":
        return lambda: conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))
    if kind == "conv_di":
        return lambda: conv_fast.conv2d_backprop_input(x.shape, w, dy, (1, 1), "SAME", (1, 1))
    return lambda: conv_fast.conv2d_backprop_filter(x, w.shape, dy, (1, 1), "SAME", (1, 1))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    args = parser.parse_args(argv)
    if not conv_fast.available():
        sys.exit(f"needs the [fast] extra: {conv_fast.why_not()}")
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(2)
    kernels = conv_fast._load()
    rng = np.random.default_rng(0)
    print(f"median ms of {args.rounds} rounds; copy and gemm on one thread, the rest on two")
    print(f"{'kernel':<38} {'copy':>7} {'gemm':>7} {'(c+g)/2':>8} {'g/2':>7} "
          f"{'staticgrad':>10} {'torch':>7}")
    for name, hw, c, o, k in layers():
        x = rng.random((BATCH, hw, hw, c), dtype=np.float32)
        w = rng.normal(0, 0.1, (k, k, c, o)).astype(np.float32)
        dy = rng.random((BATCH, hw, hw, o), dtype=np.float32)
        for kind in KINDS:
            copy, gemm = pieces(kernels, kind, x, w, dy)
            ours = staticgrads(kind, x, w, dy)
            theirs = torch_way(torch, kind, {"x": x, "w": w, "dy": dy})
            times = {"copy": [], "gemm": [], "staticgrad": [], "torch": []}
            for _ in range(args.rounds + 1):  # (the first round warms up, untimed)
                for way, call, threads in (("copy", copy, 1), ("gemm", gemm, 1),
                                           ("staticgrad", ours, None), ("torch", theirs, None)):
                    with threadpool_limits(threads) if threads else nullcontext():
                        start = time.perf_counter()
                        call()
                        times[way].append(time.perf_counter() - start)
            m = {way: 1e3 * statistics.median(v[1:]) for way, v in times.items()}
            label = f"{name} {kind.replace('conv_', '') if kind != 'conv' else 'fwd'}"
            print(f"{label:<38} {m['copy']:>7.2f} {m['gemm']:>7.2f} "
                  f"{(m['copy'] + m['gemm']) / 2:>8.2f} {m['gemm'] / 2:>7.2f} "
                  f"{m['staticgrad']:>10.2f} {m['torch']:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
