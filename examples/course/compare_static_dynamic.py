"""Train the same model define-by-run and define-then-run, and measure what each costs.

Two models, each trained both ways from the same starting values on the same data, with the
same plain gradient descent:
- seed 003's regression: w x^2 + b on 100 points, summed squared error, lr 0.001, 800 steps;
- a small MLP: 16-64-64-4, ReLU, softmax cross-entropy on 512 synthetic points, lr 0.5,
  300 steps.

Dynamic (staticgrad.dynamic): each iteration runs the forward pass, which computes and
records a new tape at once ("build"), then backward() and the update under no_grad ("run").
Static (the graph API): the model, its gradients and the update are declared once and
compiled once ("build", in the setup row); each iteration is one sess.run ("run").

Reported per iteration: graph nodes built (dynamic: tape nodes recorded, from
dy.tape_nodes_created(); static: the graph's ops, built once), build and run time, memory
held by the graph (dynamic: the tape and its saved arrays after the forward pass, freed by
backward; static: the graph, the session and its compiled code, held throughout), the peak
memory of the iteration, and the time so far. Memory is measured with tracemalloc in a
separate pass over all the iterations, so that tracing does not slow the timed one; each
way is warmed up first (imports, templates, kernel caches are one-time costs of the
process, not of the model), and NumPy's threads are limited to 2, as in benchmarks/. With
matplotlib, a plot of time against iterations goes to --plot.

    python examples/course/compare_static_dynamic.py
    python examples/course/compare_static_dynamic.py --iterations 20 --no-plot
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "2")  # before NumPy is imported

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import _course  # noqa: E402
import numpy as np  # noqa: E402

import staticgrad as sg  # noqa: E402
import staticgrad.dynamic as dy  # noqa: E402

SHOWN = 3  # iterations shown one by one in the table


# -- the two models, written once per way ---------------------------------------------------

def regression_dynamic(params, x, y):
    w, b = params
    return ((y - (w * x.pow(2) + b)) ** 2).sum()


def regression_static(params, x, y):
    w, b = params
    return sg.reduce_sum((y - (w * sg.pow(x, 2) + b)) ** 2)


def mlp_dynamic(params, x, labels):
    W1, b1, W2, b2, W3, b3 = params
    h = dy.relu(x @ W1 + b1)
    h = dy.relu(h @ W2 + b2)
    return dy.nn.functional.cross_entropy(h @ W3 + b3, labels)


def mlp_static(params, x, labels):
    W1, b1, W2, b2, W3, b3 = params
    h = sg.nn.relu(sg.matmul(x, W1) + b1)
    h = sg.nn.relu(sg.matmul(h, W2) + b2)
    logits = sg.matmul(h, W3) + b3
    return sg.reduce_mean(sg.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))


@dataclasses.dataclass
class Model:
    name: str
    dynamic_loss: object
    static_loss: object
    inputs: tuple   # the data: (x, y) or (x, labels), NumPy arrays
    initial: list   # starting values of the parameters, NumPy arrays
    lr: float
    iterations: int


def regression_model():
    w0 = np.array([[_course.W0]], np.float32)
    return Model("seed 003 regression: w x^2 + b, 100 points", regression_dynamic,
                 regression_static, _course.quadratic_data(), [w0, np.zeros((1, 1), np.float32)],
                 lr=0.001, iterations=800)


def mlp_model(sizes=(16, 64, 64, 4), points=512):
    rng = np.random.RandomState(0)
    x = rng.randn(points, sizes[0]).astype(np.float32)
    labels = np.argmax(x @ rng.randn(sizes[0], sizes[-1]), axis=1)  # a linear teacher
    initial = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        limit = np.sqrt(6 / (fan_in + fan_out))
        initial += [rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32),
                    np.zeros(fan_out, np.float32)]
    return Model(f"MLP {'-'.join(map(str, sizes))}, ReLU, cross-entropy, {points} points",
                 mlp_dynamic, mlp_static, (x, labels), initial, lr=0.5, iterations=300)


# -- training, timed ------------------------------------------------------------------------

@dataclasses.dataclass
class Run:
    """One way's training: per-iteration figures (seconds, node counts), and the setup's."""
    nodes: list
    build: list
    run: list
    losses: list
    setup_nodes: int = 0
    setup_build: float = 0.0
    ops_per_step: int = 0  # static: lines of generated code each run executes


class Dynamic:
    """Define-by-run: each iteration records a tape (forward), walks and frees it
    (backward), then updates the parameters under no_grad."""

    def __init__(self, model):
        self.model = model
        self.params = [dy.tensor(p, requires_grad=True) for p in model.initial]
        self.inputs = [dy.tensor(v) for v in model.inputs]

    def forward(self):
        return self.model.dynamic_loss(self.params, *self.inputs)

    def backward_and_update(self, loss):
        loss.backward()
        with dy.no_grad():
            for p in self.params:
                p -= self.model.lr * p.grad
                p.grad.zero_()

    def train(self, iterations):
        out = Run([], [], [], [])
        for _ in range(iterations):
            created = dy.tape_nodes_created()
            start = time.perf_counter()
            loss = self.forward()
            built = time.perf_counter()
            self.backward_and_update(loss)
            done = time.perf_counter()
            out.nodes.append(dy.tape_nodes_created() - created)
            out.build.append(built - start)
            out.run.append(done - built)
            out.losses.append(loss.item())
        return out


class Static:
    """Define-then-run: declare the model, its gradients and the update once, compile once,
    then run the compiled step."""

    def __init__(self, model):
        self.model = model
        self.graph = sg.Graph()
        with self.graph.as_default():
            self.feeds = [sg.placeholder(sg.as_dtype(v.dtype), [None, *v.shape[1:]])
                          for v in model.inputs]
            self.params = [sg.Variable(p) for p in model.initial]
            self.loss = model.static_loss(self.params, *self.feeds)
            self.step = sg.train.GradientDescentOptimizer(model.lr).minimize(self.loss)
            init = sg.global_variables_initializer()
        self.sess = sg.Session(graph=self.graph)
        self.sess.run(init)
        self.feed = dict(zip(self.feeds, model.inputs))
        self.plan = self.sess.plan([self.step, self.loss], self.feed)  # compiles the step

    def train(self, iterations):
        out = Run([], [], [], [], setup_nodes=len(self.graph.get_operations()),
                  ops_per_step=len(self.plan.line_ops))
        for _ in range(iterations):
            start = time.perf_counter()
            _, loss = self.sess.run([self.step, self.loss], self.feed)
            out.run.append(time.perf_counter() - start)
            out.nodes.append(0)
            out.build.append(0.0)
            out.losses.append(float(loss))
        return out


def train_static(model, iterations):
    start = time.perf_counter()
    static = Static(model)
    setup = time.perf_counter() - start
    out = static.train(iterations)
    out.setup_build = setup
    return out


# -- memory, in a separate pass under tracemalloc -------------------------------------------

def memory_dynamic(model, iterations):
    """Per iteration: bytes the tape holds after the forward pass, and the iteration's peak
    (both over what was allocated when it began)."""
    way = Dynamic(model)
    held, peak = [], []
    tracemalloc.start()
    for _ in range(iterations):
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        loss = way.forward()
        held.append(tracemalloc.get_traced_memory()[0] - base)
        way.backward_and_update(loss)
        del loss
        peak.append(tracemalloc.get_traced_memory()[1] - base)
    tracemalloc.stop()
    return held, peak


def memory_static(model, iterations):
    """Bytes the built graph, session and compiled step hold; per iteration, the peak of a
    run over that."""
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    static = Static(model)
    held = tracemalloc.get_traced_memory()[0] - base
    peak = []
    for _ in range(iterations):
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        static.sess.run([static.step, static.loss], static.feed)
        peak.append(tracemalloc.get_traced_memory()[1] - start)
    tracemalloc.stop()
    return [held] * iterations, peak


def recording_overhead(model, repeats=50):
    """Median forward time with the tape and under no_grad (no tape), in seconds."""
    way = Dynamic(model)
    times = {True: [], False: []}
    for _ in range(repeats):
        for enabled in (True, False):
            with dy.set_grad_enabled(enabled):
                start = time.perf_counter()
                way.forward()
                times[enabled].append(time.perf_counter() - start)
    return float(np.median(times[True])), float(np.median(times[False]))


# -- the report ---------------------------------------------------------------------------

def table(model, dyn, sta, dyn_mem, sta_mem):
    """The table for one model, as lines of text."""
    n = len(dyn.run)
    if not all(len(values) == n for mem in (dyn_mem, sta_mem) for values in mem):
        raise ValueError("memory must be measured over every iteration: the median row "
                         "reports its median over all of them")
    lines = [f"{model.name}, {n} iterations",
             f"{'':9}{'':15}{'nodes built':>12}{'build ms':>10}{'run ms':>9}"
             f"{'graph KB':>10}{'peak KB':>9}{'total ms':>10}"]

    def row(way, label, nodes, build, run, held, peak, total):
        held = "" if held is None else f"{held / 1024:.1f}"
        peak = "" if peak is None else f"{peak / 1024:.1f}"
        total = "" if total is None else f"{total * 1e3:.2f}"
        lines.append(f"{way:9}{label:15}{nodes:>12}{build * 1e3:>10.3f}{run * 1e3:>9.3f}"
                     f"{held:>10}{peak:>9}{total:>10}")

    for way, r, (held, peak) in (("dynamic", dyn, dyn_mem), ("static", sta, sta_mem)):
        total = r.setup_build
        if way == "static":
            row(way, "setup (once)", r.setup_nodes, r.setup_build, 0.0, held[0], None, total)
        for i in range(n):
            total += r.build[i] + r.run[i]
            if i < SHOWN:
                row(way if i == 0 and way == "dynamic" else "", f"iteration {i + 1}",
                    r.nodes[i], r.build[i], r.run[i], held[i], peak[i], total)
        if n > SHOWN:
            row("", f"median of {n}", int(np.median(r.nodes)), float(np.median(r.build)),
                float(np.median(r.run)), float(np.median(held)), float(np.median(peak)), None)
        row("", f"all {n}", sum(r.nodes) + r.setup_nodes, sum(r.build) + r.setup_build,
            sum(r.run), None, None, total)
    return lines


def summary(dyn, sta, overhead):
    n = len(dyn.run)
    dyn_total = sum(dyn.build) + sum(dyn.run)
    sta_total = sta.setup_build + sum(sta.run)
    dyn_cum = np.cumsum(np.add(dyn.build, dyn.run))
    sta_cum = sta.setup_build + np.cumsum(sta.run)
    ahead = np.nonzero(sta_cum < dyn_cum)[0]
    with_tape, without = overhead
    return [
        f"total time: dynamic {dyn_total * 1e3:.1f} ms, static {sta_total * 1e3:.1f} ms "
        f"(dynamic / static = {dyn_total / sta_total:.2f})",
        "static is ahead from iteration "
        + (f"{ahead[0] + 1} on" if ahead.size else f"- (not within {n})"),
        f"static graph: {sta.setup_nodes} ops, of which each run executes {sta.ops_per_step} "
        "lines of generated code",
        f"dynamic forward: {with_tape * 1e3:.3f} ms recording the tape, {without * 1e3:.3f} ms "
        f"under no_grad: recording costs {with_tape / without - 1:.0%}",
        f"final loss: dynamic {dyn.losses[-1]:.6g}, static {sta.losses[-1]:.6g}",
    ]


def plot(path, results):
    """Time so far against iterations (log-log), one panel per model."""
    try:
        import matplotlib
    except ImportError:
        print("plot skipped: matplotlib is not installed (pip install 'staticgrad[examples]')")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 3.8))
    for ax, (model, dyn, sta) in zip(np.atleast_1d(axes), results):
        steps = np.arange(1, len(dyn.run) + 1)
        ax.plot(steps, 1e3 * np.cumsum(np.add(dyn.build, dyn.run)), label="dynamic")
        ax.plot(steps, 1e3 * (sta.setup_build + np.cumsum(sta.run)), label="static")
        ax.set_xscale("log")  # log-log: the static build up front, then the crossing
        ax.set_yscale("log")
        ax.set_title(model.name, fontsize=9)
        ax.set_xlabel("iteration")
        ax.set_ylabel("time so far (ms)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    print(f"plot written to {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=None,
                        help="iterations per model (default: 800 regression, 300 MLP)")
    parser.add_argument("--plot", default="compare_static_dynamic.png", help="PNG to write")
    parser.add_argument("--no-plot", action="store_true", help="do not draw the plot")
    args = parser.parse_args()

    results = []
    for model in (regression_model(), mlp_model()):
        iterations = args.iterations or model.iterations
        Dynamic(model).train(2), train_static(model, 2)  # warm-up
        dyn, sta = Dynamic(model).train(iterations), train_static(model, iterations)
        dyn_mem = memory_dynamic(model, iterations)  # all of them: the median row covers all
        sta_mem = memory_static(model, iterations)
        for line in table(model, dyn, sta, dyn_mem, sta_mem):
            print(line)
        for line in summary(dyn, sta, recording_overhead(model)):
            print(line)
        print()
        results.append((model, dyn, sta))

    if args.no_plot:
        print("plot skipped: --no-plot")
    else:
        plot(args.plot, results)


if __name__ == "__main__":
    main()
