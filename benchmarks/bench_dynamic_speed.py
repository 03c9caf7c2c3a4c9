"""The dynamic mode's speed beside PyTorch CPU eager (issue 26), as ratios in one run.

Three measurements, each timed side by side with PyTorch in one process, interleaved round by
round (drifts in machine load hit both alike), float32, threads limited to 2:

  ops       per-op overhead: `(x * y + y).exp()`, three elementwise ops (mul, add, exp) on
            8-element tensors; once with no input requiring grad, once with `x` requiring it
            (each op then records a tape node; no backward)
  W1        the suite's W1 in the dynamic mode: the weights chain of seed 000,
            L = 10 - (w3*(w1*a) + w4*(w2*a)) on shape (1,), and `autograd.grad(L, ws)`
  mlp       one training step of the 784-512-512-10 ReLU MLP, batch 256 (W2's sizes), written
            as PyTorch users write it: `nn.Sequential` of `nn.Linear` and `nn.ReLU`,
            `nn.CrossEntropyLoss`, `optim.SGD(lr=0.01)`; zero_grad, forward, loss, backward,
            step

The two sides are the same code: each builds from a module object, `staticgrad.dynamic` or
`torch`. Before timing, each measurement's result must agree between the two (the MLP from
the same initial weights). The cycle collector stays on while timing (timeit turns it off):
the dynamic mode's tape is Python objects that a user's loop pays to collect, PyTorch's is
C++ that it does not. Reported: median microseconds per call and the ratio
staticgrad / PyTorch, with issue 26's targets (ops within 1.5x, W1 under 1.0x, mlp within
1.2x). No figure is asserted.

    python benchmarks/bench_dynamic_speed.py [--rounds 7] [--number N] [--only ops W1 mlp]
"""

import _harness

_harness.limit_threads()  # before NumPy is imported

import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
import staticgrad.dynamic as dy  # noqa: E402

DEFAULT_OUT = os.path.join(ROOT, "benchmarks", "results", "dynamic_speed.json")
TARGETS = {"ops": 1.5, "ops_grad": 1.5, "W1": 1.0, "mlp": 1.2}
NUMBERS = {"ops": 2000, "ops_grad": 2000, "W1": 2000, "mlp": 5}
SIZES = (784, 512, 512, 10)
BATCH = 256


def ops_way(lib, requires_grad: bool):
    x = lib.tensor(np.linspace(-1, 1, 8, dtype=np.float32), requires_grad=requires_grad)
    y = lib.tensor(np.full(8, 0.5, np.float32))
    return lambda: (x * y + y).exp()


def w1_way(lib):
    ws = [lib.tensor(np.array([v], np.float32), requires_grad=True) for v in (2, 5, 9, 7)]
    w1, w2, w3, w4 = ws
    a_value = np.array([4.0], np.float32)

    def call():
        a = lib.from_numpy(a_value)
        L = 10.0 - (w3 * (w1 * a) + w4 * (w2 * a))
        return (L, *lib.autograd.grad(L, ws))
    return call


def mlp_way(lib, weights, xb, yb):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    with lib.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(lib.from_numpy(w))
    loss_fn = nn.CrossEntropyLoss()
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    x, y = lib.from_numpy(xb), lib.from_numpy(yb)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _values(out) -> list:
    outs = out if isinstance(out, tuple) else (out,)
    return [np.asarray(o.detach().numpy()) for o in outs]


def main(argv=None):
    parser = _harness.timing_arguments(__doc__, 0, "calls (default: per measurement)",
                                       DEFAULT_OUT)
    parser.add_argument("--only", nargs="+", choices=("ops", "W1", "mlp"),
                        default=("ops", "W1", "mlp"))
    args = parser.parse_args(argv)
    import torch
    torch.set_num_threads(2)

    rng = np.random.default_rng(0)
    weights = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1 / np.sqrt(fan_in)
        weights.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32))
        weights.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    xb = rng.normal(size=(BATCH, SIZES[0])).astype(np.float32)
    yb = rng.integers(0, SIZES[-1], BATCH).astype(np.int64)

    pairs = {}
    if "ops" in args.only:
        pairs["ops"] = (ops_way(dy, False), ops_way(torch, False))
        pairs["ops_grad"] = (ops_way(dy, True), ops_way(torch, True))
    if "W1" in args.only:
        pairs["W1"] = (w1_way(dy), w1_way(torch))
    if "mlp" in args.only:
        pairs["mlp"] = (mlp_way(dy, weights, xb, yb), mlp_way(torch, weights, xb, yb))

    results = {"environment": _harness.environment(with_platform=True),
               "load_average_start": os.getloadavg(), "measurements": {}}
    print(f"staticgrad.dynamic beside PyTorch {torch.__version__} CPU eager, "
          f"median of {args.rounds} rounds, interleaved")
    print(f"{'':<10}{'dynamic us':>12}{'torch us':>12}{'ratio':>8}{'target':>8}")
    for key, (ours, theirs) in pairs.items():
        for a, b in zip(_values(ours()), _values(theirs())):  # the same numbers first
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=key)
        number = args.number or NUMBERS[key]
        per_call = _harness.time_interleaved({"dynamic": ours, "torch": theirs}, args.rounds,
                                             number, warmup=3, scale=1e6, collect=True)
        median, ratio = _harness.medians_and_ratios(per_call, base="torch")
        print(f"{key:<10}{median['dynamic']:>12.1f}{median['torch']:>12.1f}"
              f"{ratio['dynamic']:>8.2f}{TARGETS[key]:>8.1f}")
        results["measurements"][key] = {"median_us": median, "ratio": ratio["dynamic"],
                                        "target": TARGETS[key], "rounds_us": per_call}
    results["load_average_end"] = os.getloadavg()
    _harness.write_json(args.out, results)


if __name__ == "__main__":
    main()
