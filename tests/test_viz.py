"""staticgrad.viz: DOT structure parsed back, fetch pruning, hostile names, install messages,
and (where the `dot` program exists) SVG and PNG output."""

import re
import shutil
import sys
import xml.etree.ElementTree as ET

import pytest

import staticgrad as sg
from staticgrad import viz
from tests.conftest import growing_loop

QUOTED = r'"(?:[^"\\\n]|\\.)*"'
ATTRS = rf"\[(?:\w+={QUOTED}(?:, \w+={QUOTED})*)?\]"
NODE = re.compile(rf"^\s*({QUOTED}) ({ATTRS});$")
EDGE = re.compile(rf"^\s*({QUOTED}) -> ({QUOTED}) ({ATTRS});$")
SUBGRAPH = re.compile(rf"^\s*subgraph ({QUOTED}) {{$")
DEFAULTS = re.compile(rf"^\s*(?:graph|node|edge) {ATTRS};$")
ATTR = re.compile(rf"(\w+)=({QUOTED})")

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="the `dot` program (system package graphviz) is missing")
needs_graphviz = pytest.mark.skipif("graphviz" not in sys.modules and
                                    __import__("importlib").util.find_spec("graphviz") is None,
                                    reason="the graphviz package is missing: "
                                           "pip install 'staticgrad[viz]'")


def unquote(text):
    return re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], text[1:-1])


def parse_dot(source):
    """Every line of `source` must be one DOT statement of the shapes to_dot writes (so no
    name can have added a statement). Returns (nodes: name -> attrs, edges: [(tail, head,
    attrs)], clusters: cluster name -> the node names directly inside it)."""
    lines = source.strip().split("\n")
    assert lines[0] == "digraph staticgrad {" and lines[-1] == "}", source
    nodes, edges, clusters, stack = {}, [], {}, [None]
    for line in lines[1:-1]:
        if m := EDGE.match(line):
            attrs = {k: unquote(v) for k, v in ATTR.findall(m[3])}
            edges.append((unquote(m[1]), unquote(m[2]), attrs))
        elif m := NODE.match(line):
            nodes[unquote(m[1])] = {k: unquote(v) for k, v in ATTR.findall(m[2])}
            if stack[-1] is not None:
                clusters[stack[-1]].append(unquote(m[1]))
        elif m := SUBGRAPH.match(line):
            stack.append(unquote(m[1]))
            clusters[stack[-1]] = []
        elif line.strip() == "}":
            stack.pop()
        else:
            assert DEFAULTS.match(line), f"not a statement to_dot writes: {line!r}"
    assert stack == [None]
    return nodes, edges, clusters


@pytest.fixture
def model():
    """x -> layer/MatMul(x, layer/w) -> loss, its gradient wrt w, and an unrelated op."""
    graph = sg.Graph()
    with graph.as_default():
        x = sg.placeholder(sg.float32, [None, 3], name="x")
        with sg.name_scope("layer"):
            w = sg.Variable([[1.0, 2.0]] * 3, name="w")
            y = sg.matmul(x, w)
        loss = sg.reduce_sum(sg.square(y), name="loss")
        unrelated = sg.exp(sg.constant(1.0, name="c"), name="unrelated")
        dw, = sg.gradients(loss, [w])
    return graph, x, w, loss, dw, unrelated


def test_whole_graph_has_a_node_per_op_and_an_edge_per_input(model):
    graph, *_ = model
    nodes, edges, _ = parse_dot(viz.to_dot(graph))
    assert set(nodes) == {op.name for op in graph.get_operations()}
    expected = sorted((t.op.name, op.name) for op in graph.get_operations() for t in op.inputs)
    assert sorted((tail, head) for tail, head, attrs in edges
                  if attrs.get("style") != "dashed") == expected


def test_leaves_ops_and_gradients_styled_apart(model):
    graph, x, w, loss, dw, _ = model
    nodes, _, _ = parse_dot(viz.to_dot(graph))
    kinds = {name: (a["shape"], a["fillcolor"]) for name, a in nodes.items()}
    placeholder, variable, const = kinds["x"], kinds["layer/w"], kinds["c"]
    assert placeholder[0] == variable[0] == const[0] == "box"
    assert len({placeholder[1], variable[1], const[1]}) == 3
    forward, gradient = kinds["loss"], kinds[dw.op.name]
    assert dw.op.name.startswith("gradients/")
    assert forward[0] == gradient[0] == "ellipse" and forward[1] != gradient[1]
    assert forward[1] not in {placeholder[1], variable[1], const[1]}
    for name, (shape, colour) in kinds.items():  # every gradient op is styled as one
        if name.startswith("gradients/") and shape == "ellipse":
            assert colour == gradient[1], name
    assert "Placeholder" in nodes["x"]["label"] and "(?, 3)" in nodes["x"]["label"]
    assert "created at" in nodes["loss"]["tooltip"]


def test_edges_labelled_with_shape_and_dtype(model):
    graph, x, w, *_ = model
    _, edges, _ = parse_dot(viz.to_dot(graph))
    labels = {(tail, head): attrs["label"] for tail, head, attrs in edges}
    assert labels[("x", "layer/MatMul")] == "(?, 3) float32"
    assert labels[("layer/w", "layer/MatMul")] == "(3, 2) float32"
    _, edges, _ = parse_dot(viz.to_dot(graph, dtypes=False))
    assert {(t, h): a["label"] for t, h, a in edges}[("x", "layer/MatMul")] == "(?, 3)"
    _, edges, _ = parse_dot(viz.to_dot(graph, edge_labels=False))
    assert all("label" not in attrs for _, _, attrs in edges)


def test_name_scopes_are_nested_clusters(model):
    graph, _, _, _, dw, _ = model
    nodes, _, clusters = parse_dot(viz.to_dot(graph))
    assert "layer/MatMul" in clusters["cluster_layer"]
    assert "layer/w/Assign" in clusters["cluster_layer/w"]
    assert dw.op.name in clusters["cluster_" + dw.op.name.rsplit("/", 1)[0]]
    assert "cluster_gradients" in clusters
    assert all(scope.startswith("cluster_") for scope in clusters)
    source = viz.to_dot(graph)  # a child cluster sits inside its parent
    assert source.index('subgraph "cluster_layer"') < source.index('subgraph "cluster_layer/w"')
    _, _, clusters = parse_dot(viz.to_dot(graph, clusters=False))
    assert clusters == {}


def test_a_name_thousands_of_scopes_deep_draws_as_nested_clusters():
    """to_dot builds and writes the scope tree without recursion (the limit is 1000 frames)."""
    depth = 1500
    graph = sg.Graph()
    with graph.as_default():
        x = sg.placeholder(sg.float32, [2], name="/".join(["s"] * depth + ["x"]))
        sg.identity(x, name="gradients/" + "/".join(["g"] * depth + ["y"]))
    source = viz.to_dot(graph)
    nodes, _, clusters = parse_dot(source)  # every brace closes where it should
    assert len(clusters) == 2 * depth + 1
    innermost = "cluster_" + "/".join(["s"] * depth)
    assert clusters[innermost] == [x.op.name]
    assert clusters["cluster_gradients/" + "/".join(["g"] * depth)] == [
        "gradients/" + "/".join(["g"] * depth + ["y"])]
    deep_gradient = 'label="g", style="rounded,filled", fillcolor="#fff5f0"'
    assert source.count(deep_gradient) == depth  # a gradient scope's style reaches down


def test_fetches_draw_only_what_they_need(model):
    graph, x, w, loss, dw, unrelated = model
    nodes, _, _ = parse_dot(viz.to_dot(loss))
    assert set(nodes) == {"x", "layer/w", "layer/MatMul", "Square", "loss"}
    assert nodes["loss"].get("penwidth")  # the fetch stands out
    nodes, _, _ = parse_dot(viz.to_dot([dw, unrelated]))
    assert "unrelated" in nodes and "c" in nodes
    assert "layer/w/Assign" not in nodes  # the initializer is not needed by a run of dw
    assert all(not name.startswith("gradients/") for name in parse_dot(viz.to_dot(w))[0])
    assert set(parse_dot(viz.to_dot(w))[0]) == {"layer/w"}  # a Variable draws as its op


def test_bad_arguments(model):
    graph, *_ = model
    with pytest.raises(TypeError, match="viz draws a Graph"):
        viz.to_dot([42])
    with pytest.raises(ValueError, match="no fetches"):
        viz.to_dot([])
    with pytest.raises(ValueError, match="rankdir"):
        viz.to_dot(graph, rankdir="sideways")
    other = sg.Graph()
    with other.as_default():
        z = sg.constant(1.0)
    with pytest.raises(ValueError, match="different graphs"):
        viz.to_dot([model[3], z])


HOSTILE = ['evil"]; injected [label="pwned"]; "x',
           "a\\",
           'scope"} subgraph x {/b\\"',
           "<b>html</b>",
           "two\nlines\r\x00;",
           "a:b -> c",
           "\\N\\G"]


def hostile_graph():
    graph = sg.Graph()
    with graph.as_default():
        x = sg.placeholder(sg.float32, [2], name="x")
        ops = [sg.negative(x, name=f"n{i}").op for i in range(len(HOSTILE))]
        total = sg.add_n([op.outputs[0] for op in ops])
    for op, name in zip(ops, HOSTILE):  # names no public API would accept
        op.name = name
    return graph, ops, total


def test_hostile_names_stay_text():
    graph, ops, total = hostile_graph()
    nodes, edges, clusters = parse_dot(viz.to_dot(graph))  # every line one known statement
    assert len(nodes) == len(graph.get_operations())
    assert len(edges) == sum(len(op.inputs) for op in graph.get_operations())
    names = set(nodes)
    for name in HOSTILE:
        cleaned = name.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
        assert cleaned in names, name
    assert "injected" not in names and "pwned" not in names


@needs_dot
@needs_graphviz
def test_hostile_names_through_dot():
    graph, ops, total = hostile_graph()
    svg = ET.fromstring(viz.to_svg(graph))
    ns = {"svg": "http://www.w3.org/2000/svg"}
    nodes = svg.findall(".//svg:g[@class='node']", ns)
    assert len(nodes) == len(graph.get_operations())
    titles = {g.find("svg:title", ns).text for g in nodes}
    assert 'evil"]; injected [label="pwned"]; "x' in titles
    assert "<b>html</b>" in titles and "a:b -> c" in titles
    assert not svg.findall(".//svg:b", ns)  # no HTML label was made


def test_missing_graphviz_package_says_what_to_install(model, monkeypatch):
    graph, *_ = model
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz -> ImportError
    assert viz.to_dot(graph).startswith("digraph")   # DOT needs no package
    with pytest.raises(ImportError, match=re.escape("pip install 'staticgrad[viz]'")):
        viz.to_svg(graph)
    with pytest.raises(ImportError, match="graphviz Python package"):
        viz.render(graph, "never.svg")
    monkeypatch.setattr(viz, "_warned", False)
    with pytest.warns(UserWarning, match="staticgrad\\[viz\\]"):
        assert graph._repr_svg_() is None  # Jupyter falls back to the text repr


def test_render_replaces_the_file_whole_or_not_at_all(model, monkeypatch, tmp_path):
    """The picture is made first and written through a temporary file and a rename: a failed
    render leaves an older picture as it was, and no temporary file."""
    graph, *_ = model
    out = tmp_path / "g.svg"
    out.write_text("<svg>old</svg>")

    def failing_pipe(source, format):
        raise RuntimeError("dot crashed")
    monkeypatch.setattr(viz, "_pipe", failing_pipe)
    with pytest.raises(RuntimeError, match="dot crashed"):
        viz.render(graph, out)
    monkeypatch.setattr(viz, "_pipe", lambda source, format: b"<svg>new</svg>")

    def full_disk(fd):
        raise OSError(28, "disk full")
    monkeypatch.setattr("os.fsync", full_disk)
    with pytest.raises(OSError, match="disk full"):
        viz.render(graph, out)
    assert [p.name for p in tmp_path.iterdir()] == ["g.svg"]
    assert out.read_text() == "<svg>old</svg>"
    monkeypatch.undo()
    monkeypatch.setattr(viz, "_pipe", lambda source, format: b"<svg>new</svg>")
    assert viz.render(graph, out) == str(out)
    assert out.read_text() == "<svg>new</svg>"


@needs_graphviz
def test_missing_dot_program_names_the_os_package(model, monkeypatch, tmp_path):
    graph, *_ = model
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` on the PATH
    with pytest.raises(RuntimeError, match="apt-get install graphviz"):
        viz.render(graph, tmp_path / "g.svg")
    assert not (tmp_path / "g.svg").exists()


@needs_dot
@needs_graphviz
def test_render_svg_has_a_titled_node_per_op(model, tmp_path):
    graph, x, w, loss, dw, _ = model
    path = viz.render(graph, tmp_path / "graph.svg")
    root = ET.parse(path).getroot()
    ns = {"svg": "http://www.w3.org/2000/svg"}
    titles = {g.find("svg:title", ns).text for g in root.findall(".//svg:g[@class='node']", ns)}
    assert titles == {op.name for op in graph.get_operations()}
    clusters = {g.find("svg:title", ns).text
                for g in root.findall(".//svg:g[@class='cluster']", ns)}
    assert {"cluster_layer", "cluster_gradients"} <= clusters
    texts = {t.text for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert "(?, 3) float32" in texts


@needs_dot
@needs_graphviz
def test_render_png_and_jupyter_svg(model, tmp_path):
    graph, x, w, loss, dw, _ = model
    path = viz.render([loss, dw], tmp_path / "graph.png")
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    path = viz.render(loss, tmp_path / "picture", format="png")
    assert open(path, "rb").read(4) == b"\x89PNG"
    with pytest.raises(ValueError, match="format"):
        viz.render(loss, tmp_path / "g.pdf", format="pdf")
    svg = graph._repr_svg_()
    assert ET.fromstring(svg).tag == "{http://www.w3.org/2000/svg}svg"


@needs_dot
@needs_graphviz
def test_readme_figures_script(tmp_path):
    import os
    import subprocess
    script = os.path.join(os.path.dirname(__file__), "..", "docs", "make_readme_figures.py")
    subprocess.run([sys.executable, script, "--out", str(tmp_path)], check=True,
                   capture_output=True)
    for name in ("readme_forward.svg", "readme_gradients.svg"):
        root = ET.parse(tmp_path / name).getroot()
        tooltips = {a.get("{http://www.w3.org/1999/xlink}title") for a in root.iter()}
        assert not any(t and os.sep + "docs" + os.sep in t for t in tooltips)  # no local path
    assert b"gradients" in (tmp_path / "readme_gradients.svg").read_bytes()


def test_the_sub_graphs_of_control_flow_are_clusters_of_their_own():
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float64, [3], name="x")
        y = growing_loop(x)
    dot = viz.to_dot(y)
    clusters = re.findall(r'subgraph "cluster_([^"]+)"', dot)
    assert {"grow/While:cond", "grow/While:body", "grow/While:body/grow/cond/If:then_branch",
            "grow/While:body/grow/cond/If:else_branch"} <= set(clusters)
    assert 'graph [label="body of grow/While"' in dot
    # a region's ops are nodes of their own, named under the op that holds them
    assert '"grow/While:body/grow/cond/If:then_branch/grow/cond/Mul" [' in dot
    assert '"grow/While" -> "grow/While:body/grow/loop_var_0" [style="dotted"' in dot
