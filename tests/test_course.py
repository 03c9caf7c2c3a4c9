"""The course material of issue 7, run as a student would run it: every program of
examples/course/ against the seed articles' numbers (both programs of a pair print them),
the comparison program, the static-versus-dynamic benchmark and the docs' figures, briefly."""

import importlib.util
import json
import math
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.test_examples import ROOT, run_script

COURSE = ROOT / "examples" / "course"
PAIRS = sorted(p.stem.removesuffix("_dynamic") for p in COURSE.glob("seed*_dynamic.py"))
NUMBER = r"(?<![\w.])[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf)(?![\w.])"


def numbers_after(label, text):
    """Every number printed on the line after `label` (a regex), e.g. the elements of
    tensor([3.0000e-01, 3.0000e+00]) or of [3.e-01 3.e+00]; `^` matches at each line."""
    m = re.search(label + r"(.*)", text, re.M)
    assert m, f"no line with {label!r} in:\n{text}"
    return [float(v) for v in re.findall(NUMBER, m.group(1))]


@pytest.fixture(scope="module")
def outputs():
    """What each course program prints, the programs run side by side."""
    names = [f"{pair}_{way}" for pair in PAIRS for way in ("dynamic", "static")]
    with ThreadPoolExecutor(4) as pool:
        futures = {name: pool.submit(run_script, f"examples/course/{name}.py") for name in names}
        return {name: f.result() if f.exception() is None else f.exception()
                for name, f in futures.items()}


def output(outputs, name):
    if isinstance(outputs[name], BaseException):
        raise outputs[name]
    return outputs[name]


def test_every_program_has_its_pair_and_names_its_article():
    programs = {p.stem for p in COURSE.glob("seed*.py")}
    assert programs == {f"{pair}_{way}" for pair in PAIRS for way in ("dynamic", "static")}
    assert {pair[:7] for pair in PAIRS} == {f"seed00{i}" for i in range(5)}  # all five seeds
    for name in programs:
        doc = (COURSE / f"{name}.py").read_text().split('"""')[1]
        assert doc.startswith(f"Seed {name[4:7]} ("), name
        assert ("define-by-run" if name.endswith("dynamic") else "define-then-run") in doc, name


# (label, the article's numbers) that both programs of a pair print
ARTICLE = {
    "seed000_weights_chain": [(r"^b =", [8]), (r"^c =", [20]), (r"^d =", [212]),
                              (r"^L =", [-202])]
    + [(rf"Gradient of w{i} w.r.t to L:", [g]) for i, g in enumerate((-36, -28, -8, -20), 1)],
    "seed000_no_grad": [(r"^L =", [-18])],
    "seed001_backward_gradient": [
        (r"example 1: y =", [22.7918, 39.9459, 61.0794]),
        (r"example 1: a.grad =", [0.3, 3.0, 3e-4]),
        (r"example 1: b.grad =", [1.2, 16.0, 2e-3]),
        (r"example 1: c.grad =", [1.6667e-02, 1.4286e-01, 1.25e-05]),
        (r"example 2: a.grad, b.grad, c.grad =", [3, 4, 10]),
        (r"example 3: a.grad, b.grad, c.grad =", [3.3003, 0, math.inf]),
        (r"example 4: a.grad, b.grad, c.grad =", [6, 8, 2])],
    "seed003_regression": [(r"initial w, b:", [1.1046, 0])],
    "seed004_hooks": [(r"the gradient at y:", [1, 1, 1])],
    "seed004_custom_function": [(r"^z =", [0.75])],
    "seed004_higher_order": [(r"y, dy/dx, d2y/dx2, d3y/dx3 =", [81, 108, 108, 72])],
}


@pytest.mark.parametrize("way", ["dynamic", "static"])
@pytest.mark.parametrize("pair", sorted(ARTICLE))
def test_both_ways_print_the_articles_numbers(outputs, pair, way):
    out = output(outputs, f"{pair}_{way}")
    for label, numbers in ARTICLE[pair]:
        got = numbers_after(label, out)
        assert got == pytest.approx(numbers, rel=1e-4), (pair, way, label, out)


def lines(outputs, name):
    return output(outputs, name).splitlines()


def test_seed000_weights_chain(outputs):
    dynamic = output(outputs, "seed000_weights_chain_dynamic")
    assert "grad_fn=<RsubBackward1>" in dynamic
    assert dynamic.count("AccumulateGrad") == 4
    assert "a second L.backward(): Trying to backward through the graph a second time" in dynamic
    static = output(outputs, "seed000_weights_chain_static")
    assert numbers_after(r"the gradients, run again:", static) == [-36, -28, -8, -20]
    assert "L, declared: Tensor(\"Sub:0\", shape=(1,), dtype=float32)" in static


def test_seed000_retain_grad(outputs):
    quarter = [0.5] * 4 + [0.25] * 4 + [1.0]
    dynamic = output(outputs, "seed000_retain_grad_dynamic")
    assert "tensor([0.5000, 0.5000, 0.5000, 0.5000]) None None" in dynamic
    assert numbers_after(r"with retain_grad:", dynamic) == quarter
    assert "tensor([0.2500, 0.2500, 0.2500, 0.2500]) tensor(1.)" in dynamic
    static = output(outputs, "seed000_retain_grad_static")
    assert numbers_after(r"dz/dx, dz/dy, dz/dz:", static) == quarter


def test_seed000_no_grad(outputs):
    dynamic = output(outputs, "seed000_no_grad_dynamic")
    assert "w1.grad, w2.grad: tensor([-4.]) None" in dynamic
    assert numbers_after(r"^tape nodes recorded:", dynamic) == [3]
    assert numbers_after(r"under no_grad: tape nodes recorded:", dynamic) == [0]
    assert "under no_grad: L = tensor([-18.])" in dynamic  # no grad_fn
    static = output(outputs, "seed000_no_grad_static")
    assert numbers_after(r"dL/dw1:", static) == [-4]
    assert "trainable variables: ['w1:0']" in static
    both, alone = (numbers_after(rf"ops run for L {what}", static)[0]
                   for what in ("and its gradient:", r"alone \(inference\):"))
    assert 0 < alone < both


def test_seed001_prints_as_pytorch_does(outputs):
    dynamic = output(outputs, "seed001_backward_gradient_dynamic")
    for text in ("a.grad = tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])",
                 "b.grad = tensor([1.2000e+00, 1.6000e+01, 2.0000e-03])",
                 "c.grad = tensor([1.6667e-02, 1.4286e-01, 1.2500e-05])",
                 "tensor(3.) tensor(4.) tensor(10.)", "tensor([3.3003]) tensor([0.]) tensor([inf])",
                 "tensor(6.) tensor(8.) tensor(2.)"):
        assert text in dynamic, text
    static = output(outputs, "seed001_backward_gradient_static")
    assert "example 3, a not fed: you must feed a value for placeholder 'a'" in static
    assert numbers_after(r"example 4, each run: a.grad, b.grad, c.grad =", static) == [3, 4, 1]


SEED_002 = """\
Forward: z = 0.2528530955314636
dz/dz = 1 (输出对自己的梯度永远是1) -> 1.0
dz/dw = dz/dz * ∂z/∂w = 1 * 1 = 1.0
dz/dy1 = dz/dw * ∂w/∂y1 = 1.0 * y2 = 1.0 * 0.14112000167369843 = 0.14112000167369843
dz/dy2 = dz/dw * ∂w/∂y2 = 1.0 * y1 = 1.0 * 1.7917594909667969 = 1.7917594909667969
dz/da = dz/dy1 * ∂y1/∂a = 0.14112000167369843 * (1/a) = 0.14112000167369843 * (1/6.0) = \
0.023520000278949738
dz/dX1 = dz/da * ∂a/∂X1 = 0.023520000278949738 * X2 = 0.023520000278949738 * 3.0 = \
0.07056000083684921
dz/dX2 = dz/da * ∂a/∂X2 + dz/dy2 * ∂y2/∂X2
 = 0.023520000278949738 * X1 + 1.7917594909667969 * cos(X2)
 = 0.023520000278949738 * 2.0 + 1.7917594909667969 * -0.9899924993515015
 = -1.7267885208129883
"""


@pytest.mark.parametrize("way", ["dynamic", "static"])
def test_seed002_prints_the_articles_output_exactly(outputs, way):
    assert output(outputs, f"seed002_chain_rule_{way}") == SEED_002


def test_seed003_leaves(outputs):
    assert lines(outputs, "seed003_leaves_dynamic")[:4] == [
        "requires_grad of x, w, b: False True True", "requires_grad of y, z: True True",
        "is_leaf of x, w, b, y, z: True True True False False",
        "grad_fn of x, w, b: None None None"]
    dynamic = output(outputs, "seed003_leaves_dynamic")
    assert re.search(r"grad_fn of y, z: <MulBackward0 object at 0x[0-9a-f]+> "
                     r"<AddBackward0 object at 0x[0-9a-f]+>", dynamic)
    assert "w.grad, b.grad, x.grad: tensor([2.]) tensor([1.]) None" in dynamic
    assert "y.grad, z.grad: None None" in dynamic
    static = output(outputs, "seed003_leaves_static")
    assert numbers_after(r"dz/dw, dz/db:", static) == [2, 1]
    assert "trainable variables: ['w:0', 'b:0']" in static
    assert "x = x:0: op type Placeholder, inputs []" in static
    assert "y = Mul:0: op type Mul, inputs ['w:0', 'x:0']" in static


def test_seed003_regression_both_ways_alike_and_on_the_article(outputs):
    runs = {}
    for way in ("dynamic", "static"):
        out = output(outputs, f"seed003_regression_{way}")
        losses = [float(v) for v in re.findall(r"step +\d+: loss = (\S+)", out)]
        runs[way] = losses + numbers_after(r"fitted w, b:", out)
        assert len(losses) == 9 and losses[0] > 100 > 0.5 > losses[-1], out
    assert runs["dynamic"] == pytest.approx(runs["static"], rel=1e-4)
    # the article's w = 2.9668, b = 2.1138 to its 4 decimals (the noise is PyTorch's draw)
    assert runs["static"][-2:] == pytest.approx([2.9668, 2.1138], abs=1e-9)
    assert runs["static"][-3] == pytest.approx(0.3335, abs=1e-9)  # the loss at step 800


def test_seed004_hooks_and_repeated_backward(outputs):
    dynamic = output(outputs, "seed004_hooks_dynamic")
    assert "hook, the gradient at y: tensor([1., 1., 1.])" in dynamic
    assert "autograd.grad(z, y): (tensor([1., 1., 1.]),)" in dynamic
    assert numbers_after(r"dz/dw:", output(outputs, "seed004_hooks_static")) == [1, 1, 1]
    dynamic = output(outputs, "seed004_repeated_backward_dynamic")
    for how in ("retain_graph", "rebuilt graph"):
        assert numbers_after(rf"{how}, first backward: w.grad =", dynamic) == [1, 1, 1]
        assert numbers_after(rf"{how}, second backward: w.grad =", dynamic) == [2, 2, 2]
    static = output(outputs, "seed004_repeated_backward_static")
    assert numbers_after(r"first run: dz/dw =", static) == [1, 1, 1]
    assert numbers_after(r"second run: dz/dw =", static) == [1, 1, 1]  # nothing accumulates
    assert numbers_after(r"accumulate, second run: accumulated =", static) == [2, 2, 2]


def test_seed004_custom_function_backward_runs_when_each_way_says(outputs):
    dynamic = lines(outputs, "seed004_custom_function_dynamic")
    assert dynamic == ["z = tensor([0.7500], grad_fn=<MultiplyAddBackward>)",
                       "backward called with grad_output = tensor([1.])",
                       "x.grad, w.grad, b.grad: None tensor([1.]) tensor([1.])"]
    static = lines(outputs, "seed004_custom_function_static")
    assert static[0].startswith("backward called with grad_output = Tensor(")  # at build time
    assert static[1:] == ["z = [0.75]", "dz/dw, dz/db: [1.] [1.]"]


def test_seed004_higher_order(outputs):
    assert "dy/dx = tensor(108., grad_fn=" in output(outputs, "seed004_higher_order_dynamic")
    assert "dy/dx = Tensor(" in output(outputs, "seed004_higher_order_static")


def table_rows(out, way):
    """The (label, nodes built) rows of `way` in each model's table."""
    rows, current = [], None
    for line in out.splitlines():
        if line.startswith(("dynamic ", "static ")):
            current = line.split()[0]
        elif not line.startswith(" "):
            current = None
        m = re.match(r"\S*\s+((?:setup \(once\)|iteration \d+|median of \d+|all \d+))\s+(\d+)",
                     line)
        if m and current == way:
            rows.append((m.group(1), int(m.group(2))))
    return rows


def test_compare_static_dynamic_briefly(tmp_path):
    plot = tmp_path / "compare.png"
    out = run_script("examples/course/compare_static_dynamic.py", "--iterations", "4",
                     "--plot", str(plot))
    assert out.count("nodes built  build ms   run ms  graph KB  peak KB  total ms") == 2
    assert "seed 003 regression" in out and "MLP 16-64-64-4" in out
    dynamic, static = table_rows(out, "dynamic"), table_rows(out, "static")
    # per model: iterations 1-3, the median, all 4 (static: and its setup row first)
    assert [label for label, _ in dynamic] == ["iteration 1", "iteration 2", "iteration 3",
                                               "median of 4", "all 4"] * 2
    assert [label for label, _ in static][:2] == ["setup (once)", "iteration 1"]
    for model in (dynamic[:5], dynamic[5:]):  # a new tape of the same size each iteration
        per_iteration = {nodes for label, nodes in model[:4]}
        assert len(per_iteration) == 1 and per_iteration.pop() > 0
        assert model[4][1] == 4 * model[0][1]
    for model in (static[:6], static[6:]):  # the graph is built once, before iteration 1
        assert model[0][1] > 0 and all(nodes == 0 for _, nodes in model[1:5])
    for dyn_loss, static_loss in re.findall(r"final loss: dynamic (\S+), static (\S+)", out):
        assert float(dyn_loss) == pytest.approx(float(static_loss), rel=1e-4)
    assert out.count("dynamic / static = ") == 2
    if importlib.util.find_spec("matplotlib"):
        assert f"plot written to {plot}" in out
        assert plot.read_bytes().startswith(b"\x89PNG")
    else:
        assert "plot skipped: matplotlib is not installed" in out


def test_static_vs_dynamic_benchmark_smoke(tmp_path):
    """A tiny run: the ways agree on one step, and the JSON is written; no timing asserted."""
    target = tmp_path / "results" / "svd.json"
    out = run_script("benchmarks/bench_static_vs_dynamic.py", "--rounds", "1", "--number", "2",
                     "--builds", "1", "--out", str(target))
    assert "dynamic / static (sess.run):" in out
    data = json.loads(target.read_text())
    assert set(data["ratio_to_hand_numpy"]) == {"hand_numpy", "dynamic", "sess_run",
                                                "make_callable"}
    assert data["ratio_to_hand_numpy"]["hand_numpy"] == 1.0
    assert data["ratio_dynamic_to_static_sess_run"] > 0
    assert len(data["us_per_step_rounds"]["dynamic"]) == 1
    saved = data["us_per_step_median"]["dynamic"] - data["us_per_step_median"]["sess_run"]
    if saved > 0:  # the build is paid back after a whole number of steps, rounded up
        steps = data["static_break_even_steps"]
        assert isinstance(steps, int) and steps * saved >= data["static_build_us_median"]
        assert (steps - 1) * saved < data["static_build_us_median"]
        assert f"paid back after {steps} steps" in out


FIGURES = ["seed000_forward.png", "seed000_gradients.png", "seed000_tape.png"]


def test_make_figures_writes_the_pictures(tmp_path):
    pytest.importorskip("matplotlib")
    out = run_script("docs/make_figures.py", "--out", str(tmp_path))
    for name in FIGURES:
        assert f"wrote {tmp_path / name}" in out
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG")
        assert (tmp_path / name).stat().st_size < 200 * 1024


def test_figure_edges_bend_around_the_nodes_they_do_not_join():
    pytest.importorskip("matplotlib")
    pytest.importorskip("networkx")
    spec = importlib.util.spec_from_file_location("make_figures",
                                                  ROOT / "docs" / "make_figures.py")
    figures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(figures)
    # the checker: a straight line from a to c runs through b; bent through (1, 1), it does not
    position = {"a": (0, 0), "b": (1, 0), "c": (2, 0)}
    scale = lambda points: points * 100  # noqa: E731 - display units: 100 per column
    assert figures.crossings(position, {("a", "c"): [(0, 0), (2, 0)]}, scale, 20) == \
        [(("a", "c"), "b")]
    assert figures.crossings(position, {("a", "c"): [(0, 0), (1, 1), (2, 0)]}, scale, 20) == []
    # the layout: every edge that skips a column gets a bend point in each column it crosses
    graph, loss, gradients, a = figures.seed000_graph()
    every = [op.outputs[0] for op in graph.get_operations() if op.name.startswith("gradients/")]
    for picture in (figures.static_picture(graph, [loss], [a]),
                    figures.static_picture(graph, gradients, [a], fade=True, shown=every)):
        position, routes, _, _ = figures.layered_layout(picture)
        for (u, v), points in routes.items():
            assert [x for x, _ in points] == list(range(position[u][0], position[v][0] + 1))
        columns = {}
        for x, h in position.values():
            columns.setdefault(x, []).append(h)
        for (u, v), points in routes.items():  # a bend point never sits on a node
            for x, h in points[1:-1]:
                assert all(abs(h - other) >= 1 - 1e-9 for other in columns.get(x, [])), (u, v)


def test_the_docs_show_the_committed_pictures():
    doc = (ROOT / "docs" / "static-vs-dynamic.md").read_text()
    for name in FIGURES + ["compare_static_dynamic.png"]:
        assert f"images/{name}" in doc, name
        assert (ROOT / "docs" / "images" / name).stat().st_size < 200 * 1024, name


# The control-flow pairs (issue 24): a loop the values stop, and sequences of their own
# lengths, each written with the graph's control flow and with Python's
@pytest.mark.parametrize("pair", ["newton_sqrt", "rnn_lengths"])
def test_the_control_flow_pairs_print_the_same_numbers(pair):
    static = run_script(f"examples/course/{pair}_static.py")
    dynamic = run_script(f"examples/course/{pair}_dynamic.py")
    wanted = re.compile(r"^(a = |sequence |d sum)")
    lines = [line for line in static.splitlines() if wanted.match(line)]
    assert lines and lines == [line for line in dynamic.splitlines() if wanted.match(line)]
    if pair == "newton_sqrt":
        for line in lines:
            a, steps, root, slope = numbers_after(r"^", line)
            assert root == pytest.approx(math.sqrt(a), rel=1e-10)  # (the stop: 1e-10)
            assert slope == pytest.approx(1 / (2 * math.sqrt(a)), rel=1e-9)
        assert [numbers_after(r"^", line)[1] for line in lines] == [4, 6, 11]
        assert "    while True:\n" in static  # the loop, in the generated code it prints
    else:
        assert "variables: rnn/basic_rnn_cell/kernel (5, 3), rnn/basic_rnn_cell/bias (3,)" \
            in static


# From module to static graph (issue 26): one nn.Module trained eagerly and as a traced graph
def test_module_to_graph_trains_the_same_both_ways_and_measures_the_speed_up():
    out = run_script("examples/course/module_to_graph.py", "--rounds", "3")
    assert "(fc1): Linear(in_features=16, out_features=64, bias=True)" in out
    assert "variables ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias', 'out.weight', " \
        "'out.bias']" in out
    losses = [(float(a), float(b)) for a, b in
              re.findall(r"epoch +\d+: last batch loss eager (\S+), graph (\S+)", out)]
    assert len(losses) == 3 and losses[-1][0] < losses[0][0]  # it learns
    for eager, graph in losses:
        assert graph == pytest.approx(eager, rel=1e-5)
    assert numbers_after(r"after 48 steps: max \|eager - graph\| over the parameters =",
                         out)[0] < 1e-5
    eager_accuracy, graph_accuracy = numbers_after(r"^accuracy:", out)
    assert graph_accuracy == pytest.approx(eager_accuracy, abs=1e-3) and eager_accuracy > 0.5
    m = re.search(r"median of 2 epochs, interleaved\): eager ([\d.]+), graph ([\d.]+); speed-up "
                  r"graph / eager = (\S+)x", out)
    assert m, out
    eager_rate, graph_rate, ratio = float(m[1]), float(m[2]), float(m[3])
    assert eager_rate > 0 and graph_rate > 0  # no timing asserted: only that it adds up
    assert ratio == pytest.approx(graph_rate / eager_rate, rel=0.02)
