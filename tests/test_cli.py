"""The `staticgrad` command (staticgrad/cli.py), run as `python -m staticgrad` in a subprocess."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import staticgrad as sg
from tests.backends.cuda.emulator import CXX, fake_cupy

ROOT = Path(__file__).resolve().parents[1]
X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 2.0], [0.5, 0.5]], np.float32)


def staticgrad(*args, cwd, returncode=0, path_first=()):
    """Run `python -m staticgrad <args>`; return (stdout, stderr)."""
    pythonpath = os.pathsep.join([*map(str, path_first), str(ROOT)])
    env = dict(os.environ, PYTHONPATH=pythonpath)
    proc = subprocess.run([sys.executable, "-m", "staticgrad", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == returncode, (
        f"staticgrad {' '.join(map(str, args))} exited with {proc.returncode}, not "
        f"{returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
    return proc.stdout, proc.stderr


def one_error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("staticgrad: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A small classifier saved as graph.json, its trained-looking weights in ckpt/model, and
    the probabilities and loss those weights give on X."""
    folder = tmp_path_factory.mktemp("cli")
    (folder / "ckpt").mkdir()
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [None, 2], name="x")
        W = sg.Variable(np.zeros((2, 3), np.float32), name="W")
        with sg.name_scope("layer"):
            probs = sg.nn.softmax(sg.matmul(x, W), name="probs")
        total = sg.reduce_sum(probs * probs, name="total")
        sg.train.export_meta_graph(str(folder / "graph.json"))
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            sess.run(W.assign([[1.0, -1.0, 0.5], [0.5, 1.0, -1.0]]))
            sg.train.Saver().save(sess, str(folder / "ckpt" / "model"))
            expected = sess.run([probs, total], {x: X})
    return folder, expected


@pytest.mark.parametrize("command", [None, "export", "draw", "source", "demo"])
def test_help(command, tmp_path):
    out, _ = staticgrad(*([command] if command else []), "--help", cwd=tmp_path)
    assert out.startswith("usage: staticgrad")
    if command is None:
        assert all(c in out for c in ("export", "draw", "source", "demo"))
    if command in ("export", "source"):
        assert "--fetch" in out and "--feed" in out and "x:?,3" in out
    if command == "draw":
        assert ".dot" in out


def test_export_with_checkpoint_matches_the_session(saved, tmp_path):
    folder, (probs, total) = saved
    out, _ = staticgrad("export", folder / "graph.json", "--fetch", "layer/probs",
                        "--fetch", "total:0", "--feed", "x:4,2", "--checkpoint",
                        folder / "ckpt" / "model", "-o", tmp_path / "model.py", cwd=tmp_path)
    assert "model.py" in out and (tmp_path / "model.npz").exists()
    # the module runs where only NumPy is found: staticgrad is not on its path
    np.save(tmp_path / "x.npy", X)
    check = ("import numpy as np, model; p, t = model.run(np.load('x.npy')); "
             "np.save('p.npy', p); np.save('t.npy', t)")
    subprocess.run([sys.executable, "-c", check], cwd=tmp_path, check=True, timeout=60,
                   env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), probs)
    np.testing.assert_array_equal(np.load(tmp_path / "t.npy"), total)


def test_export_without_checkpoint_uses_the_initializers(saved, tmp_path):
    folder, _ = saved
    staticgrad("export", folder / "graph.json", "--fetch", "layer/probs", "--feed", "x:0:3,2",
               "-o", tmp_path / "init.py", cwd=tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        import init
        probs = init.run(X[:3])[0]
        with pytest.raises(ValueError, match=r"x:0 must have shape \(3, 2\)"):
            init.run(X)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("init", None)
    np.testing.assert_allclose(probs, np.full((3, 3), 1 / 3, np.float32))  # W = 0


@pytest.mark.parametrize("feed", ["x:?,2", "x"])
def test_export_leaves_an_unknown_size_free(saved, tmp_path, feed):
    folder, (probs, total) = saved
    staticgrad("export", folder / "graph.json", "--fetch", "layer/probs", "--fetch", "total",
               "--feed", feed, "--checkpoint", folder / "ckpt" / "model",
               "-o", tmp_path / "free.py", cwd=tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        import free
        p, t = free.run(X)
        np.testing.assert_array_equal(p, probs)
        np.testing.assert_array_equal(t, total)
        # one row alone: that row's probabilities (up to the rounding of a smaller matmul)
        np.testing.assert_allclose(free.run(X[1:2])[0], probs[1:2], rtol=1e-6)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("free", None)


def test_export_for_cuda_writes_the_kernels_beside_the_module(saved, tmp_path, monkeypatch):
    folder, (probs, total) = saved
    out, _ = staticgrad("export", folder / "graph.json", "--fetch", "layer/probs",
                        "--fetch", "total", "--feed", "x:4,2", "--checkpoint",
                        folder / "ckpt" / "model", "--backend", "cuda",
                        "-o", tmp_path / "gpu.py", cwd=tmp_path)  # (no GPU needed)
    assert "gpu.cu" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpu.cu", "gpu.npz", "gpu.py"]
    _, err = staticgrad("export", folder / "graph.json", "--fetch", "total", "--feed", "x",
                        "--backend", "cuda", "-o", tmp_path / "free.py", cwd=tmp_path,
                        returncode=1)
    assert "x:0 dimension 0 free" in one_error_line(err) and "feed_shapes" in err
    if CXX is None:
        return
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "gpu", raising=False)
    import gpu
    p, t = gpu.run(X)
    np.testing.assert_allclose(p, probs, rtol=1e-6)
    np.testing.assert_allclose(t, total, rtol=1e-6)
    sys.modules.pop("gpu", None)


def test_export_needs_the_rank_of_a_feed(tmp_path):
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, None, name="x")
        sg.identity(x * 2.0, name="y")
        sg.train.export_meta_graph(str(tmp_path / "graph.json"))
    _, err = staticgrad("export", tmp_path / "graph.json", "--fetch", "y", "--feed", "x",
                        "-o", tmp_path / "m.py", cwd=tmp_path, returncode=1)
    assert "unknown rank" in one_error_line(err) and "x:?,3" in err
    staticgrad("export", tmp_path / "graph.json", "--fetch", "y", "--feed", "x:?",
               "-o", tmp_path / "m.py", cwd=tmp_path)


def test_draw_dot_and_svg(saved, tmp_path):
    folder, _ = saved
    staticgrad("draw", folder / "graph.json", "-o", tmp_path / "all.dot", cwd=tmp_path)
    dot = (tmp_path / "all.dot").read_text()
    assert dot.startswith("digraph staticgrad") and '"total"' in dot
    assert "cluster_layer" in dot
    staticgrad("draw", folder / "graph.json", "--fetch", "layer/probs", "-o",
               tmp_path / "part.dot", cwd=tmp_path)
    part = (tmp_path / "part.dot").read_text()
    assert '"layer/probs"' in part and '"total"' not in part
    if shutil.which("dot") is None:
        pytest.skip("the `dot` program is not installed: SVG not checked")
    pytest.importorskip("graphviz")
    staticgrad("draw", folder / "graph.json", "-o", tmp_path / "g.svg", cwd=tmp_path)
    assert "<svg" in (tmp_path / "g.svg").read_text()


def test_draw_without_graphviz_is_one_line(saved, tmp_path):
    folder, _ = saved
    stub = tmp_path / "hidden" / "graphviz"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('graphviz is hidden by the test')\n")
    _, err = staticgrad("draw", folder / "graph.json", "-o", tmp_path / "g.svg", cwd=tmp_path,
                        returncode=1, path_first=[tmp_path / "hidden"])
    assert "pip install" in one_error_line(err)
    assert not (tmp_path / "g.svg").exists()


def test_draw_without_dot_is_one_line(saved, tmp_path):
    folder, _ = saved
    env_path = os.environ.get("PATH")
    os.environ["PATH"] = str(tmp_path)  # no `dot` there (python is run by its full path)
    try:
        _, err = staticgrad("draw", folder / "graph.json", "-o", tmp_path / "g.png",
                            cwd=tmp_path, returncode=1)
    finally:
        os.environ["PATH"] = env_path
    line = one_error_line(err)
    assert "install" in line and "Error:" not in line


def test_source_prints_the_generated_code(saved, tmp_path):
    folder, _ = saved
    out, _ = staticgrad("source", folder / "graph.json", "--fetch", "layer/probs",
                        "--feed", "x:5,2", cwd=tmp_path)
    assert "def run(" in out and "@" in out and "float32(5, 2)" in out


def test_demo(tmp_path):
    out, _ = staticgrad("demo", cwd=tmp_path)
    assert "L = -202" in out
    assert "label = [0 1 1]" in out
    assert out.count("def run(") == 2


def test_the_demos_generated_code_names_the_demos_own_lines(tmp_path):
    """The demo is user code, though it lives in the package: its ops point at its lines,
    not at the line that called main(), the console script or runpy's frames."""
    demo = (ROOT / "staticgrad" / "demo.py").read_text().splitlines()
    line = next(i for i, text in enumerate(demo, 1) if text.strip() == "b = w1 * a")
    out, _ = staticgrad("demo", cwd=tmp_path)
    assert f"# Mul 'Mul' at demo.py:{line}\n" in out
    assert "runpy" not in out and "<unknown>" not in out


@pytest.mark.parametrize("args, message", [
    ([], "required: COMMAND"),
    (["source", "missing.json", "--fetch", "a"], "does not exist"),
    (["source", "bad.json", "--fetch", "a"], "not valid JSON"),
    (["source", "GRAPH", "--fetch", "nope"], "'nope' is not in the graph"),
    (["source", "GRAPH", "--fetch", "total", "--feed", "x:a,2"], "bad shape 'a,2'"),
    (["source", "GRAPH", "--fetch", "total", "--feed", "x:4,2,1"], "3 dimension(s)"),
    (["export", "GRAPH", "--fetch", "total", "--feed", "x:4,2", "--checkpoint", "none/m",
      "-o", "m.py"], "not found"),
    (["export", "GRAPH", "--fetch", "total"], "required: -o/--output"),
    (["draw", "GRAPH", "-o", "g.gif"], ".svg, .png or .dot"),
])
def test_errors_are_one_line(args, message, saved, tmp_path):
    folder, _ = saved
    (tmp_path / "bad.json").write_text("{not json")
    args = [str(folder / "graph.json") if a == "GRAPH" else a for a in args]
    _, err = staticgrad(*args, cwd=tmp_path, returncode=2 if "required" in message else 1)
    assert message in one_error_line(err)
