"""Memory of a forward pass: the dynamic mode's tape against PyTorch's autograd graph.

A 20-layer MLP (Linear + ReLU, width 1024, batch 256, float32: 1 MiB per activation) whose
parameters require grad, run forward once with its output kept (the graph alive, as before
a backward). Each way runs in a fresh process, in turn (dynamic, torch, dynamic, torch...):

  peak     the process's peak RSS during the forward pass, over its RSS just before (VmHWM,
           reset through /proc/self/clear_refs; the model is made and warmed up on two rows
           first; glibc's mmap threshold fixed at 128 KiB, so that a freed array leaves RSS)
  held     the RSS still held once the forward pass has returned, over the same baseline
  traced   (dynamic only) tracemalloc's peak and held bytes for the same pass: NumPy's
           allocations, exact, in a separate run (tracemalloc slows it down)

PyTorch's autograd keeps for each layer what its backward formulas read (addmm: the input
and the weight; relu: its result); the dynamic mode keeps what each op's `saves` declares
(staticgrad/ops/table.py). With torch absent its runs are skipped.

    python benchmarks/bench_tape_memory.py [--layers 20] [--width 1024] [--batch 256]
                                           [--rounds 3] [--out PATH]
"""

import _harness

_harness.limit_threads()  # before NumPy is imported

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "benchmarks", "results", "tape_memory.json")
MIB = 1 << 20


def rss() -> int:
    """The resident set size now, in bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss() -> int:
    """The peak RSS since the last reset_peak() (VmHWM), in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def reset_peak() -> None:
    """Make the peak RSS the RSS now (Linux 4.0+)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def weights(layers: int, width: int):
    rng = np.random.default_rng(0)
    scale = np.float32(np.sqrt(2.0 / width))
    return [(rng.standard_normal((width, width), dtype=np.float32) * scale,
             np.zeros(width, np.float32)) for _ in range(layers)]


def dynamic_model(params):
    sys.path.insert(0, ROOT)
    import staticgrad.dynamic as dy
    layers = []
    for w, b in params:
        linear = dy.nn.Linear(w.shape[1], w.shape[0])
        with dy.no_grad():
            linear.weight.copy_(dy.from_numpy(w))
            linear.bias.copy_(dy.from_numpy(b))
        layers += [linear, dy.nn.ReLU()]
    return dy.nn.Sequential(*layers), dy.from_numpy


def torch_model(params):
    import torch
    torch.set_num_threads(2)
    layers = []
    for w, b in params:
        linear = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(w))
            linear.bias.copy_(torch.from_numpy(b))
        layers += [linear, torch.nn.ReLU()]
    return torch.nn.Sequential(*layers), torch.from_numpy


def child(way: str, layers: int, width: int, batch: int, traced: bool) -> dict:
    """One forward pass in this process; what it took."""
    params = weights(layers, width)
    model, wrap = (dynamic_model if way == "dynamic" else torch_model)(params)
    x = np.random.default_rng(1).standard_normal((batch, width), dtype=np.float32)
    model(wrap(x[:2]))  # warm-up on two rows: kernels compiled, little memory
    x = wrap(x)
    gc.collect()
    if traced:
        import tracemalloc
        tracemalloc.start()
        out = model(x)
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return {"traced_held": held, "traced_peak": peak}
    reset_peak()
    base = rss()
    out = model(x)
    return {"peak": peak_rss() - base, "held": rss() - base,
            "checksum": float(out.detach().sum())}


def run_child(way, args, traced=False) -> dict:
    argv = [sys.executable, os.path.abspath(__file__), "--child", way, "--layers",
            str(args.layers), "--width", str(args.width), "--batch", str(args.batch)]
    if traced:
        argv.append("--traced")
    # every block of 128 KiB or more mmapped, so that freeing it lowers the RSS (glibc's
    # threshold otherwise grows as blocks are freed, and freed ones stay resident)
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(128 * 1024)}
    out = subprocess.run(argv, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=20)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--child", choices=("dynamic", "torch"))
    parser.add_argument("--traced", action="store_true")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.layers, args.width, args.batch, args.traced)))
        return
    try:
        import torch  # noqa: F401
        ways = ("dynamic", "torch")
    except ImportError:
        print("torch is not installed: the dynamic mode alone")
        ways = ("dynamic",)
    runs = {way: [] for way in ways}
    for _ in range(args.rounds):
        for way in ways:
            runs[way].append(run_child(way, args))
    traced = run_child("dynamic", args, traced=True)
    activation = args.batch * args.width * 4
    print(f"{args.layers}-layer MLP, width {args.width}, batch {args.batch}, float32: "
          f"one activation is {activation / MIB:.2f} MiB; medians of {args.rounds} runs")
    print(f"{'way':10} {'peak MiB':>9} {'held MiB':>9} {'held / activation':>18}")
    summary = {}
    for way in ways:
        peak = statistics.median(r["peak"] for r in runs[way]) / MIB
        held = statistics.median(r["held"] for r in runs[way]) / MIB
        summary[way] = {"peak_mib": peak, "held_mib": held}
        print(f"{way:10} {peak:9.1f} {held:9.1f} {held * MIB / activation:18.1f}")
    print(f"dynamic, tracemalloc: peak {traced['traced_peak'] / MIB:.1f} MiB, held "
          f"{traced['traced_held'] / MIB:.1f} MiB")
    if len(ways) == 2:
        sums = [r["checksum"] for r in runs["dynamic"] + runs["torch"]]
        assert np.allclose(sums, sums[0], rtol=1e-3), f"the two models disagree: {sums}"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"args": vars(args), "summary": summary, "runs": runs, "traced": traced},
                  f, indent=1)


if __name__ == "__main__":
    main()
