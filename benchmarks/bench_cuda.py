"""staticgrad's CUDA backend beside PyTorch and JAX on one GPU, every way timed in one process.

Four measurements, each against its peers in the same run (interleaved round by round, the
order reversed every other round; the device synchronized around every timed turn; median
over the rounds):

  compile   first-run cost of the W2 MLP step (batch 256) in fresh processes: `import cupy`
            and the device context timed apart, then building the graph, `sess.run` of the
            initializer and of the first step, and a second step; once with an empty kernel
            cache (STATICGRAD_CUDA_CACHE, a new temporary folder) and once more with that
            folder warm. Compile = init + first step - second step. Run first, so nothing
            this process compiles can warm a cache the backend might keep elsewhere.
  W3        y = sum(tanh(1.5x+0.3)*sigmoid(x) + 0.5*exp(-x^2) + log1p(x^2)) and dy/dx on 2^24
            float32 values already on the GPU, both results left there (fetch_device=True).
            Effective bandwidth counts 8 bytes an element (x read once, dy/dx written once),
            against a device-to-device copy of x (the same 8 bytes an element) timed in the
            same rounds. Peers: PyTorch eager (autograd.grad), torch.compile (of
            torch.func.grad_and_value; if that does not compile, of the forward with
            autograd.grad outside), JAX jit(value_and_grad). Skipped with --quick:
            torch.compile (20-40 s of compiling).
  MLP       one SGD step (lr 0.01) of the 784-512-512-10 ReLU MLP with mean softmax
            cross-entropy (W2, bench_mlp_step.build_graph), batches 256 and 4096, feeds
            already on the GPU and the loss left there. Peers: PyTorch eager (nn.Linear,
            CrossEntropyLoss, optim.SGD, zero_grad(set_to_none=True)), PyTorch with the whole
            step captured in a CUDA graph (its documentation's recipe: warm-up on a side
            stream, static inputs copied in, `graph.replay()`), and a jitted JAX update
            (donated parameters). Every way starts from the same weights, and its first four
            losses are checked against staticgrad's.
  W1        the suite's W1 (seed 000's weights chain, forward and four gradients) per call,
            NumPy feeds in and NumPy results out: the full round trip. staticgrad's CUDA
            backend with and without cuda_graph=True, its NumPy backend for reference,
            PyTorch CUDA eager (torch.from_numpy(...).to("cuda"), `.cpu().numpy()`), JAX jit.

Every system's results are checked before it is timed (W3: the relative error of y and of
dy/dx against staticgrad's, staticgrad's own against float64 NumPy). Matrix products are
float32 everywhere: JAX's are asked for precision "highest" (its GPU default is TF32; CuPy's
and PyTorch's defaults are not). A way that fails prints `FAILED: <error>` and the run goes
on; a peer that is missing, or a feature the backend lacks, prints `n/a`.

    python benchmarks/bench_cuda.py [--quick] [--out PATH] [--only compile W3 MLP W1]
    python benchmarks/bench_cuda.py --dry-run --quick     # no GPU: the NumPy backend, small
                                                          # sizes, PyTorch on the CPU
"""

import _harness

_harness.limit_threads()  # before NumPy is imported; the host side is small here
# JAX takes 75% of the GPU's memory at start unless told not to; CuPy and PyTorch share it
import os  # noqa: E402

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
import bench_mlp_step  # noqa: E402
from workloads import w1, w3  # noqa: E402

import staticgrad as sg  # noqa: E402

DEFAULT_OUT = os.path.join(ROOT, "benchmarks", "results", "cuda.json")
CACHE_VAR = "STATICGRAD_CUDA_CACHE"
CHILD_MARK = "BENCH_CUDA_CHILD "
SIZES, LR = bench_mlp_step.SIZES, bench_mlp_step.LR
W3_SIZE, MLP_BATCHES, COMPILE_BATCH = 1 << 24, (256, 4096), 256
DRY_W3_SIZE, DRY_MLP_BATCHES = 1 << 18, (64, 512)  # --dry-run: the NumPy backend on a CPU
AGREE = 1e-3  # relative error under which two systems' results agree (float32, 2^24 terms)
TARGETS = {"W3 % of copy": 80.0, "MLP x PyTorch eager": 1.0, "compile cold s": 2.0,
           "compile warm s": 0.2}


class NotAvailable(Exception):
    """A peer that is not installed, or a feature this backend does not have: a row `n/a`."""


# ---------------------------------------------------------------------------------------------
# where the run happens

class Target:
    """The GPU (CuPy arrays, backend "cuda", PyTorch on "cuda") or, with --dry-run, the host
    (NumPy arrays, the NumPy backend, PyTorch on the CPU, no CUDA graphs, no torch.compile)."""

    def __init__(self, dry_run: bool):
        self.dry_run = dry_run
        if dry_run:
            self.xp, self.backend, self.torch_device = np, "numpy", "cpu"
        else:
            import cupy
            self.xp, self.backend, self.torch_device = cupy, "cuda", "cuda"
            cupy.zeros(1)  # the device context, before anything is timed

    def sync(self, _out=None) -> None:
        """Wait for everything queued on the device (every stream of the context)."""
        if not self.dry_run:
            self.xp.cuda.Device().synchronize()

    def to_device(self, array: np.ndarray):
        return np.array(array) if self.dry_run else self.xp.asarray(array)

    def make_callable(self, sess, fetches, feeds, **cuda_options):
        """sess.make_callable with the CUDA backend's options (fetch_device, cuda_graph);
        the NumPy backend of a dry run takes none of them."""
        if self.dry_run:
            if cuda_options.get("cuda_graph"):
                raise NotAvailable("dry run: no CUDA graphs")
            cuda_options = {}
        return sess.make_callable(fetches, feed_list=feeds, **cuda_options)

    def describe(self) -> dict:
        if self.dry_run:
            return {"dry_run": True}
        cupy = self.xp
        out = {"cupy": cupy.__version__}
        try:
            name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
            out.update(gpu=name.decode() if isinstance(name, bytes) else str(name),
                       cuda_runtime=cupy.cuda.runtime.runtimeGetVersion(),
                       cuda_driver=cupy.cuda.runtime.driverGetVersion())
        except Exception as e:  # noqa: BLE001 -- a description, not a measurement
            out["gpu"] = f"unknown ({error_text(e)})"
        return out


def to_host(value) -> np.ndarray:
    """Any system's array (CuPy, PyTorch, JAX, NumPy) as a NumPy array."""
    if type(value).__module__.startswith("cupy"):
        return value.get()
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text if len(text) < 300 else text[:300] + " ..."


def progress(text: str) -> None:
    print(f"  .. {text}", file=sys.stderr, flush=True)


def load_torch(target: Target):
    try:
        import torch
    except Exception as e:  # noqa: BLE001 -- any failure to import means "not installed"
        raise NotAvailable(f"PyTorch does not import ({error_text(e)})") from e
    if not target.dry_run and not torch.cuda.is_available():
        raise NotAvailable("PyTorch sees no CUDA device")
    return torch


def load_jax(target: Target):
    try:
        import jax
        import jax.numpy  # noqa: F401
    except Exception as e:  # noqa: BLE001
        raise NotAvailable(f"JAX does not import ({error_text(e)})") from e
    if not target.dry_run and jax.default_backend() != "gpu":
        raise NotAvailable(f"JAX runs on {jax.default_backend()}, not the GPU")
    return jax


def peer_versions(target: Target) -> dict:
    out = {}
    for name, load in (("torch", load_torch), ("jax", load_jax)):
        try:
            out[name] = load(target).__version__
        except NotAvailable as e:
            out[name] = f"n/a: {e}"
    return out


# ---------------------------------------------------------------------------------------------
# timing

@dataclass
class Way:
    """One system's implementation of a measurement, set up and checked."""

    call: object                # () -> its results; what is timed
    sync: object                # (last result) -> None: waits until the device is done
    first: list = field(default_factory=list)  # its first results, for the check
    note: str = ""


def time_ways(ways: dict, rounds: int, turn_s: float, sync_all, max_number: int = 2000):
    """({name: [seconds per call in each round]}, {name: calls per turn}, {name: error}).

    Each way is warmed up, then given as many calls a turn as fill about `turn_s` (at least
    one); in each round every way has one turn, in reverse order every other round. A turn
    starts on an idle device and ends when the device has finished its last call, so a way
    is charged for its host-side dispatch and its device time, overlapped as a loop of its
    calls overlaps them. A way that raises stops being timed and reports its error."""
    numbers, per_call, errors = {}, {}, {}
    for name, way in ways.items():
        try:
            for _ in range(3):
                way.sync(way.call())
            single = []
            for _ in range(3):
                sync_all()
                start = time.perf_counter()
                way.sync(way.call())
                single.append(time.perf_counter() - start)
            numbers[name] = max(1, min(max_number, int(turn_s / max(min(single), 1e-7))))
            per_call[name] = []
        except Exception as e:  # noqa: BLE001
            errors[name] = error_text(e)
    order = list(numbers)
    for r in range(rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            if name in errors:
                continue
            way, number = ways[name], numbers[name]
            try:
                sync_all()
                start = time.perf_counter()
                for _ in range(number):
                    out = way.call()
                way.sync(out)
                per_call[name].append((time.perf_counter() - start) / number)
            except Exception as e:  # noqa: BLE001
                errors[name] = error_text(e)
    return per_call, numbers, errors


def run_section(setups: dict, check, args, sync_all, scale: float) -> dict:
    """Set up every way (`setups`: name -> (label, setup)), check each (`check(name, way,
    ways so far)` -> dict of errors, with "agrees"), time the ones that work together.
    {name: row}: status "ok" (with the median, every round, the check), "failed" or "n/a"."""
    rows, ways = {}, {}
    for name, (label, setup) in setups.items():
        progress(f"setting up {label}")
        try:
            way = setup()
            rows[name] = {"label": label, "status": "ok", **check(name, way, ways)}
            if way.note:
                rows[name]["note"] = way.note
            ways[name] = way
        except NotAvailable as e:
            rows[name] = {"label": label, "status": "n/a", "why": str(e)}
        except Exception as e:  # noqa: BLE001
            rows[name] = {"label": label, "status": "failed", "error": error_text(e)}
    progress(f"timing {', '.join(rows[n]['label'] for n in ways)}")
    per_call, numbers, errors = time_ways(ways, args.rounds, args.turn_s, sync_all)
    for name in ways:
        if name in errors:
            rows[name].update(status="failed", error=errors[name])
        else:
            rows[name].update(median=statistics.median(per_call[name]) * scale,
                              rounds=[t * scale for t in per_call[name]],
                              calls_per_turn=numbers[name])
    return rows


def median_of(rows: dict, name: str):
    row = rows.get(name, {})
    return row.get("median") if row.get("status") == "ok" else None


def print_table(title: str, rows: dict, unit: str, base: str, extra=()) -> None:
    """One row a way: its median, its ratio to `base`'s, the `extra` columns ((header, key,
    format)); failed and missing ways say so."""
    print(f"\n{title}")
    header = f"{'':<44}{unit:>10}{'x ' + rows.get(base, {}).get('label', base)[:22]:>26}"
    print(header + "".join(f"{h:>13}" for h, _, _ in extra))
    base_median = median_of(rows, base)
    for row in rows.values():
        label = row["label"][:43]
        if row["status"] == "n/a":
            print(f"{label:<44}{'n/a':>10}  ({row['why']})")
        elif row["status"] == "failed":
            print(f"{label:<44}  FAILED: {row['error']}")
        else:
            ratio = f"{row['median'] / base_median:.3f}" if base_median else "-"
            cells = "".join(f"{format(row[k], f) if row.get(k) is not None else '-':>13}"
                            for _, k, f in extra)
            note = "" if row.get("agrees", True) else "   DISAGREES (see the errors)"
            print(f"{label:<44}{row['median']:>10.4g}{ratio:>26}{cells}{note}")
            if row.get("note"):
                print(f"    ({row['note']})")


# ---------------------------------------------------------------------------------------------
# W3: an elementwise function of 2^24 values and its gradient

def w3_data(size: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(size).astype(np.float32)


def w3_reference(x: np.ndarray) -> list:
    """y and dy/dx in float64, the derivative by hand (workloads/w3.py's hand NumPy)."""
    y, dx = w3.by_hand(x.astype(np.float64))
    return [np.asarray(y), dx]


def w3_setups(target: Target, x_host: np.ndarray, args) -> dict:
    xp = target.xp
    x_dev = target.to_device(x_host)

    def copy():
        out = xp.empty_like(x_dev)
        call = lambda: xp.copyto(out, x_dev)
        call()
        return Way(call, target.sync, [x_host, to_host(out)])

    def staticgrad_way():
        g, x, fetches = w3.graph()
        sess = sg.Session(graph=g, backend=target.backend)
        fn = target.make_callable(sess, fetches, [x], fetch_device=True)
        call = lambda: fn(x_dev)
        return Way(call, target.sync, [to_host(v) for v in call()])

    def torch_f(torch):
        return lambda x: torch.sum(torch.tanh(1.5 * x + 0.3) * torch.sigmoid(x)
                                   + 0.5 * torch.exp(-x ** 2) + torch.log1p(x ** 2))

    def torch_sync(torch):
        return lambda _out=None: torch.cuda.synchronize() if not target.dry_run else None

    def torch_eager():
        torch = load_torch(target)
        f = torch_f(torch)
        x = torch.from_numpy(x_host).to(target.torch_device).requires_grad_()

        def call():
            y = f(x)
            return (y, *torch.autograd.grad(y, [x]))
        return Way(call, torch_sync(torch), [to_host(v) for v in call()])

    def torch_compiled():
        if target.dry_run or args.quick:
            raise NotAvailable("skipped: " + ("dry run" if target.dry_run else "--quick"))
        torch = load_torch(target)
        f = torch_f(torch)
        x = torch.from_numpy(x_host).to(target.torch_device)
        start = time.perf_counter()
        try:
            grad_and_value = torch.compile(torch.func.grad_and_value(f))
            call = lambda: grad_and_value(x)[::-1]  # (value, grad)
            first = call()
            how = "torch.compile(grad_and_value)"
        except Exception as e:  # noqa: BLE001 -- the other way users compile training code
            progress(f"torch.compile(grad_and_value) failed ({error_text(e)}); compiling "
                     "the forward, autograd.grad outside")
            forward = torch.compile(f)
            x_leaf = x.clone().requires_grad_()

            def call():
                y = forward(x_leaf)
                return (y, *torch.autograd.grad(y, [x_leaf]))
            first = call()
            how = "torch.compile(forward) + autograd.grad"
        torch.cuda.synchronize()
        note = f"{how}, compiled in {time.perf_counter() - start:.1f} s"
        return Way(call, torch_sync(torch), [to_host(v) for v in first], note)

    def jax_jit():
        jax = load_jax(target)
        jnp = jax.numpy

        def f(x):
            return jnp.sum(jnp.tanh(1.5 * x + 0.3) * jax.nn.sigmoid(x)
                           + 0.5 * jnp.exp(-x ** 2) + jnp.log1p(x ** 2))
        value_and_grad = jax.jit(jax.value_and_grad(f))
        x = jax.device_put(x_host)
        call = lambda: value_and_grad(x)
        return Way(call, jax.block_until_ready, [to_host(v) for v in call()])

    return {"copy": (f"device-to-device copy ({xp.__name__}.copyto)", copy),
            "staticgrad": (f"staticgrad {target.backend}, fetch_device", staticgrad_way),
            "torch": ("PyTorch eager, autograd.grad", torch_eager),
            "torch_compile": ("torch.compile", torch_compiled),
            "jax": ("JAX jit(value_and_grad)", jax_jit)}


def w3_section(target: Target, args, sync_all) -> dict:
    size = DRY_W3_SIZE if target.dry_run else W3_SIZE
    x_host = w3_data(size)
    progress(f"W3: the float64 reference on {size:,} values")
    reference = w3_reference(x_host)

    def rel_errors(got, want) -> tuple:
        y_err = abs(float(got[0]) - float(want[0])) / max(abs(float(want[0])), 1e-30)
        g_err = float(np.max(np.abs(got[1].astype(np.float64) - want[1]))
                      / max(float(np.max(np.abs(want[1]))), 1e-30))
        return y_err, g_err

    def check(name, way, ways):
        if name == "copy":
            return {"agrees": bool(np.array_equal(way.first[0], way.first[1]))}
        y_ref, g_ref = rel_errors(way.first, reference)
        out = {"agrees": max(y_ref, g_ref) < AGREE, "err_y_float64": y_ref,
               "err_grad_float64": g_ref}
        if name == "staticgrad":
            out.update(err_y=y_ref, err_grad=g_ref)  # staticgrad's row: against float64
        elif "staticgrad" in ways:
            out["err_y"], out["err_grad"] = rel_errors(way.first, ways["staticgrad"].first)
        return out

    rows = run_section(w3_setups(target, x_host, args), check, args, sync_all, scale=1e3)
    copy_ms = median_of(rows, "copy")
    for row in rows.values():
        if row.get("median"):
            row["GB_per_s"] = 8 * size / (row["median"] * 1e-3) / 1e9
            if copy_ms:
                row["percent_of_copy"] = 100 * copy_ms / row["median"]
    print_table(f"W3: value and gradient of {size:,} float32 on the device (8 bytes an "
                f"element; errors: peers against staticgrad, staticgrad* against float64)",
                rows, "ms", "staticgrad",
                (("GB/s", "GB_per_s", ".0f"), ("% of copy", "percent_of_copy", ".1f"),
                 ("err y", "err_y", ".1e"), ("err dy/dx", "err_grad", ".1e")))
    return {"size": size, "bytes_per_element": 8, "ways": rows}


# ---------------------------------------------------------------------------------------------
# MLP: one SGD step of W2's network

CHECK_STEPS = 4  # losses compared between systems: the first forward and three updates


def mlp_batch(batch: int, seed: int = 1):
    """Standard-normal inputs, labels as class indices and one-hot, float32."""
    rng = np.random.default_rng(seed)
    xb = rng.normal(size=(batch, SIZES[0])).astype(np.float32)
    labels = rng.integers(0, SIZES[-1], batch)
    return xb, labels.astype(np.int64), np.eye(SIZES[-1], dtype=np.float32)[labels]


def staticgrad_mlp(target: Target, weights, xb, onehot, cuda_graph=False):
    g, x, y, _, loss, train, init = bench_mlp_step.build_graph(weights)
    sess = sg.Session(graph=g, backend=target.backend)
    sess.run(init)
    options = {"fetch_device": True, **({"cuda_graph": True} if cuda_graph else {})}
    try:
        fn = target.make_callable(sess, [train, loss], [x, y], **options)
        x_dev, y_dev = target.to_device(xb), target.to_device(onehot)
        step = lambda: fn(x_dev, y_dev)[1]
        losses = [float(to_host(step())) for _ in range(CHECK_STEPS)]
    except (TypeError, NotImplementedError, sg.errors.UnimplementedError) as e:
        if not cuda_graph:
            raise
        raise NotAvailable(f"cuda_graph=True: {error_text(e)}") from e
    return Way(step, target.sync, losses)


def torch_model(torch, target: Target, weights):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(SIZES[0], SIZES[1]), nn.ReLU(),
                          nn.Linear(SIZES[1], SIZES[2]), nn.ReLU(),
                          nn.Linear(SIZES[2], SIZES[3])).to(target.torch_device)
    with torch.no_grad():  # bench_mlp_step's weights are (in, out); nn.Linear's (out, in)
        for p, w in zip(model.parameters(), weights):
            p.copy_(torch.from_numpy(np.ascontiguousarray(w.T)))
    return model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=LR)


def torch_mlp(target: Target, weights, xb, labels):
    torch = load_torch(target)
    model, loss_fn, opt = torch_model(torch, target, weights)
    x = torch.from_numpy(xb).to(target.torch_device)
    y = torch.from_numpy(labels).to(target.torch_device)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    losses = [float(step().detach()) for _ in range(CHECK_STEPS)]
    sync = (lambda _out=None: None) if target.dry_run else (lambda _out=None:
                                                            torch.cuda.synchronize())
    return Way(step, sync, losses)


def torch_graphed_mlp(target: Target, weights, xb, labels):
    """The whole step in one CUDA graph, as "Whole-network capture" in PyTorch's CUDA
    semantics notes: warm up on a side stream, capture, then copy inputs and replay."""
    if target.dry_run:
        raise NotAvailable("dry run: no CUDA graphs")
    torch = load_torch(target)
    model, loss_fn, opt = torch_model(torch, target, weights)
    x = torch.from_numpy(xb).to("cuda")
    y = torch.from_numpy(labels).to("cuda")
    static_x, static_y = x.clone(), y.clone()
    losses = []
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(CHECK_STEPS - 1):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(static_x), static_y)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = loss_fn(model(static_x), static_y)
        static_loss.backward()
        opt.step()

    def step():
        static_x.copy_(x)
        static_y.copy_(y)
        graph.replay()
        return static_loss
    losses.append(step().detach())
    return Way(step, lambda _out=None: torch.cuda.synchronize(), [float(v) for v in losses])


def jax_mlp(target: Target, weights, xb, onehot):
    jax = load_jax(target)
    jnp = jax.numpy

    def dense(h, w, b):
        return jnp.matmul(h, w, precision="highest") + b

    def loss_fn(params, x, y):
        W1, b1, W2, b2, W3, b3 = params
        h1 = jax.nn.relu(dense(x, W1, b1))
        h2 = jax.nn.relu(dense(h1, W2, b2))
        logits = dense(h2, W3, b3)
        return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(logits), axis=1))

    def update(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return [p - LR * g for p, g in zip(params, grads)], loss

    update = jax.jit(update, donate_argnums=0)
    state = [[jax.device_put(w) for w in weights]]
    x, y = jax.device_put(xb), jax.device_put(onehot)

    def step():
        state[0], loss = update(state[0], x, y)
        return loss
    losses = [float(step()) for _ in range(CHECK_STEPS)]
    return Way(step, jax.block_until_ready, losses)


def mlp_section(target: Target, batch: int, args, sync_all) -> dict:
    weights = bench_mlp_step.initial_weights()
    xb, labels, onehot = mlp_batch(batch)
    setups = {
        "staticgrad": (f"staticgrad {target.backend}, make_callable",
                       lambda: staticgrad_mlp(target, weights, xb, onehot)),
        "staticgrad_cuda_graph": (f"staticgrad {target.backend}, cuda_graph=True",
                                  lambda: staticgrad_mlp(target, weights, xb, onehot, True)),
        "torch": ("PyTorch eager", lambda: torch_mlp(target, weights, xb, labels)),
        "torch_cuda_graph": ("PyTorch, CUDA graph of the step",
                             lambda: torch_graphed_mlp(target, weights, xb, labels)),
        "jax": ("JAX jit update", lambda: jax_mlp(target, weights, xb, onehot)),
    }

    def check(name, way, ways):
        base = ways.get("staticgrad") or ways.get("torch")
        if base is None or base is way:
            return {"losses": way.first, "agrees": all(np.isfinite(way.first))}
        err = max(abs(a - b) / abs(b) for a, b in zip(way.first, base.first))
        return {"losses": way.first, "err_loss": err, "agrees": err < AGREE}

    rows = run_section(setups, check, args, sync_all, scale=1e3)
    print_table(f"MLP 784-512-512-10 SGD step, batch {batch} (err: the first {CHECK_STEPS} "
                "losses against staticgrad's)", rows, "ms", "torch",
                (("err loss", "err_loss", ".1e"),))
    return {"batch": batch, "ways": rows}


# ---------------------------------------------------------------------------------------------
# W1: the per-call round trip of a tiny graph

def w1_section(target: Target, args, sync_all) -> dict:
    _, want = w1.hand_numpy()
    no_sync = lambda _out=None: None

    def staticgrad_way(host=False, cuda_graph=False):
        def setup():
            g, a, fetches, init = w1.staticgrad_graph()
            sess = sg.Session(graph=g, backend="numpy" if host else target.backend)
            sess.run(init)
            try:
                if host:
                    fn = sess.make_callable(fetches, [a])
                else:
                    options = {"cuda_graph": True} if cuda_graph else {}
                    fn = target.make_callable(sess, fetches, [a], **options)
                call = lambda: fn(w1.A)
                first = [to_host(v) for v in call()]
            except (TypeError, NotImplementedError, sg.errors.UnimplementedError) as e:
                if not cuda_graph:
                    raise
                raise NotAvailable(f"cuda_graph=True: {error_text(e)}") from e
            return Way(call, no_sync, first)
        return setup

    def torch_way():
        torch = load_torch(target)
        device = target.torch_device
        ws = [torch.from_numpy(w).to(device).requires_grad_() for w in w1.W]
        w1_, w2_, w3_, w4_ = ws

        def call():
            a = torch.from_numpy(w1.A).to(device)
            L = 10.0 - (w3_ * (w1_ * a) + w4_ * (w2_ * a))
            return [t.detach().cpu().numpy() for t in (L, *torch.autograd.grad(L, ws))]
        return Way(call, no_sync, call())

    def jax_way():
        jax = load_jax(target)

        def loss(ws, a):
            w1_, w2_, w3_, w4_ = ws
            return (10.0 - (w3_ * (w1_ * a) + w4_ * (w2_ * a)))[0]

        step = jax.jit(jax.value_and_grad(loss))
        ws = tuple(jax.device_put(w) for w in w1.W)

        def call():
            value, grads = step(ws, w1.A)
            return [np.asarray(value).reshape(1), *(np.asarray(g) for g in grads)]
        return Way(call, no_sync, call())

    setups = {
        "staticgrad": (f"staticgrad {target.backend}, make_callable",
                       staticgrad_way()),
        "staticgrad_cuda_graph": (f"staticgrad {target.backend}, cuda_graph=True",
                                  staticgrad_way(cuda_graph=True)),
        "staticgrad_numpy": ("staticgrad numpy backend (host)", staticgrad_way(host=True)),
        "torch": (f"PyTorch eager on {target.torch_device}", torch_way),
        "jax": ("JAX jit(value_and_grad)", jax_way),
    }

    def check(name, way, ways):
        err = max(float(np.max(np.abs(np.asarray(g, np.float64).reshape(w.shape) - w)))
                  for g, w in zip(way.first, want))
        return {"err_abs": err, "agrees": err < 1e-4 * 202}

    rows = run_section(setups, check, args, sync_all, scale=1e6)
    print_table("W1 per call, NumPy feeds in and NumPy results out (the round trip)", rows,
                "us", "torch")
    return {"ways": rows}


# ---------------------------------------------------------------------------------------------
# compile: first-run cost of the MLP step in fresh processes

def compile_child(dry_run: bool) -> None:
    """In a fresh process: each phase's wall seconds, printed as one JSON line."""
    phases = {}
    start = time.perf_counter()

    def lap(name):
        nonlocal start
        now = time.perf_counter()
        phases[name] = now - start
        start = now

    if not dry_run:
        import cupy
        lap("import_cupy")
        cupy.zeros(1)
        cupy.cuda.Device().synchronize()
        lap("device_context")
    weights = bench_mlp_step.initial_weights()
    xb, _, onehot = mlp_batch(COMPILE_BATCH)
    lap("data")
    g, x, y, _, loss, train, init = bench_mlp_step.build_graph(weights)
    lap("build_graph")
    sess = sg.Session(graph=g, backend="numpy" if dry_run else "cuda")
    sess.run(init)
    lap("session_and_init")
    losses = [float(sess.run([loss, train], {x: xb, y: onehot})[0])]
    lap("first_step")
    losses.append(float(sess.run([loss, train], {x: xb, y: onehot})[0]))
    lap("second_step")
    phases["compile"] = (phases["session_and_init"] + phases["first_step"]
                         - phases["second_step"])
    print(CHILD_MARK + json.dumps({"phases_s": phases, "losses": losses}), flush=True)


def compile_section(target: Target, args) -> dict:
    cache = tempfile.mkdtemp(prefix="staticgrad-cuda-cache-")
    env = {**os.environ, CACHE_VAR: cache}
    command = [sys.executable, os.path.abspath(__file__), "--compile-child"]
    if target.dry_run:
        command.append("--dry-run")
    rows = {}
    for name in ("cold", "warm"):
        label = f"{name} cache ({CACHE_VAR})"
        progress(f"compile: a new process, {label}")
        start = time.perf_counter()
        try:
            if "timed out" in rows.get("cold", {}).get("error", ""):
                raise RuntimeError("not run: the cold process timed out")
            done = subprocess.run(command, env=env, capture_output=True, text=True,
                                  timeout=args.child_timeout)
            wall = time.perf_counter() - start
            lines = [ln for ln in done.stdout.splitlines() if ln.startswith(CHILD_MARK)]
            if done.returncode != 0 or not lines:
                tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
                raise RuntimeError(f"child exited {done.returncode}: {tail}")
            row = {"label": label, "status": "ok", "process_wall_s": wall,
                   **json.loads(lines[-1][len(CHILD_MARK):])}
        except Exception as e:  # noqa: BLE001
            row = {"label": label, "status": "failed", "error": error_text(e)}
        row["cache_files"] = sum(len(files) for _, _, files in os.walk(cache))
        rows[name] = row
    honoured = rows["cold"]["cache_files"] > 0
    phases = {"import_cupy": "cupy import", "device_context": "context",
              "build_graph": "build graph", "session_and_init": "session+init",
              "first_step": "first step", "second_step": "second step", "compile": "compile"}
    print(f"\nCompile: the MLP step (batch {COMPILE_BATCH}) in a new process, seconds "
          f"(compile = init + first step - second step); cache {cache}")
    print(f"{'':<44}" + "".join(f"{header:>13}" for header in phases.values())
          + f"{'process':>10}{'files':>7}")
    for row in rows.values():
        if row["status"] == "failed":
            print(f"{row['label']:<44}  FAILED: {row['error']}")
            continue
        cells = "".join(f"{row['phases_s'][p]:>13.3f}" if p in row["phases_s"] else
                        f"{'-':>13}" for p in phases)
        print(f"{row['label']:<44}{cells}{row['process_wall_s']:>10.2f}"
              f"{row['cache_files']:>7}")
    if not honoured and not target.dry_run:
        print(f"  nothing was written to {CACHE_VAR}={cache}: the backend does not honour it "
              "(or keeps no cache), so 'warm' may not be warm and 'cold' may not be cold")
    return {"cache_dir": cache, "cache_var_honoured": honoured, "runs": rows}


# ---------------------------------------------------------------------------------------------
# the summary

def summary(results: dict) -> list:
    """(what, measured, target, met) rows for the final table."""
    out = []
    sections = {key: section for key, section in results["sections"].items()
                if section.get("status") != "failed"}

    def add(what, value, unit, target=None, smaller=True):
        if value is None:
            out.append((what, "n/a", "", ""))
            return
        text = f"{value:.3g}{unit}"
        if target is None:
            out.append((what, text, "", ""))
            return
        met = value <= target if smaller else value >= target
        out.append((what, text, f"{'<=' if smaller else '>='} {target:g}{unit}",
                    "yes" if met else "NO"))

    if "W3" in sections:
        rows = sections["W3"]["ways"]
        for name in ("staticgrad", "torch", "torch_compile", "jax"):
            row = rows.get(name, {})
            target = TARGETS["W3 % of copy"] if name == "staticgrad" else None
            add(f"W3 {row.get('label', name)}: % of copy bandwidth",
                row.get("percent_of_copy"), "%", target, smaller=False)
    for key in [key for key in sections if key.startswith("MLP_")]:
        rows = sections[key]["ways"]
        eager = median_of(rows, "torch")
        for name in ("staticgrad", "staticgrad_cuda_graph", "torch_cuda_graph", "jax"):
            ms = median_of(rows, name)
            target = TARGETS["MLP x PyTorch eager"] if name == "staticgrad" else None
            add(f"{key} {rows[name]['label']}: x PyTorch eager",
                ms / eager if ms and eager else None, "x", target)
    if "W1" in sections:
        rows = sections["W1"]["ways"]
        for name, row in rows.items():
            add(f"W1 {row['label']}: us a call", median_of(rows, name), " us")
    if "compile" in sections:
        for name, row in sections["compile"]["runs"].items():
            value = row["phases_s"]["compile"] if row["status"] == "ok" else None
            add(f"compile, {name} cache: init + first - second step", value, " s",
                TARGETS[f"compile {name} s"])
    return out


def print_summary(results: dict) -> None:
    env = results["environment"]
    print(f"\nSummary ({env.get('gpu', 'dry run, no GPU')}; staticgrad {env['staticgrad']}, "
          f"torch {env['peers'].get('torch')}, jax {env['peers'].get('jax')})")
    rows = summary(results)
    results["summary"] = [dict(zip(("what", "measured", "target", "met"), r)) for r in rows]
    for what, value, target, met in rows:
        print(f"{what[:68]:<70}{value:>12}{target:>14}{met:>5}")


# ---------------------------------------------------------------------------------------------

def arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="5 rounds, shorter turns, no torch.compile (about a minute)")
    parser.add_argument("--dry-run", action="store_true",
                        help="no GPU: the NumPy backend, small sizes, PyTorch on the CPU")
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help=f"JSON results file (default {os.path.relpath(DEFAULT_OUT)})")
    parser.add_argument("--only", nargs="+", choices=("compile", "W3", "MLP", "W1"),
                        default=("compile", "W3", "MLP", "W1"))
    parser.add_argument("--rounds", type=int, default=None, help="rounds (11; 5 with --quick)")
    parser.add_argument("--turn-s", type=float, default=None,
                        help="seconds of calls per way and round (0.05; 0.02 with --quick)")
    parser.add_argument("--child-timeout", type=float, default=60.0,
                        help="seconds allowed to each compile process")
    parser.add_argument("--compile-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (5 if args.quick else 11)
    args.turn_s = args.turn_s or (0.02 if args.quick else 0.05)
    return args


def main(argv=None):
    args = arguments(argv)
    if args.compile_child:
        return compile_child(args.dry_run)
    started = time.perf_counter()
    target = Target(args.dry_run)
    environment = {**_harness.environment(with_platform=True), **target.describe(),
                   "peers": peer_versions(target)}

    def sync_all():
        target.sync()
        if "torch" in sys.modules and not target.dry_run:
            sys.modules["torch"].cuda.synchronize()

    results = {"benchmark": "cuda", "quick": args.quick, "dry_run": args.dry_run,
               "rounds": args.rounds, "turn_s": args.turn_s, "environment": environment,
               "sections": {}}
    sections = results["sections"]
    measurements = [("compile", lambda: compile_section(target, args)),
                    ("W3", lambda: w3_section(target, args, sync_all))]
    batches = DRY_MLP_BATCHES if args.dry_run else MLP_BATCHES
    measurements += [(f"MLP_{b}", lambda b=b: mlp_section(target, b, args, sync_all))
                     for b in batches]
    measurements.append(("W1", lambda: w1_section(target, args, sync_all)))
    for key, measure in measurements:
        if key.split("_")[0] not in args.only:
            continue
        try:
            sections[key] = measure()
        except Exception as e:  # noqa: BLE001 -- one section's failure ends only that section
            sections[key] = {"status": "failed", "error": error_text(e)}
            print(f"\n{key}: FAILED: {error_text(e)}")
    results["wall_s"] = time.perf_counter() - started
    print_summary(results)
    print(f"\nwhole run {results['wall_s']:.1f} s")
    _harness.write_json(args.out, results)
    return results


if __name__ == "__main__":
    main()
