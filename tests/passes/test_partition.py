"""A plan partitioned across backends (passes/partition.py): one Transfer on each edge between
two of them, feeds and fetches on the host, regions where their holder runs; and, end to
end, a backend that leaves some ops to its host (built on the NumPy one, as a device backend
leaves host-only ops to NumPy) runs sessions with the same results as the NumPy backend."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import staticgrad as sg
from staticgrad import backends
from staticgrad.backends.numpy import NumpyBackend
from staticgrad.errors import UnimplementedError
from staticgrad.graph_io import GraphFormatError
from staticgrad.ir import walk
from staticgrad.passes.partition import check, partition
from staticgrad.verify import VerificationError, verify
from tests.passes.helpers import Body, N, program_for, vector
from tests.passes.helpers import types as node_types

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph

HOST_OPS = {"Sin", "Exp", "Placeholder", "Const"}


def on_host_if(op_types):
    """place(node): the host for these op types, the device for the rest."""
    return lambda node: "host" if node.type in op_types else "device"


def transfers(program):
    return [(n.inputs[0].name, n.attrs["source"], n.attrs["target"])
            for n in walk(program) if n.type == "Transfer"]


# -- the pass ------------------------------------------------------------------------------------
def test_each_crossing_edge_gets_one_transfer_and_fetches_come_home():
    x = sg.placeholder(sg.float32, [3], name="x")
    s = sg.sin(x, name="s")          # host
    m = sg.multiply(s, 2.0, name="m")  # device, reads s from the host
    a = sg.add(m, s, name="a")       # device, reads s again: the same transfer
    e = sg.exp(a, name="e")          # host, reads a from the device
    program = program_for([a, e, s], {x: np.zeros(3, np.float32)})
    place = on_host_if({"Sin", "Exp"})
    new = partition(program, place, "host")
    assert transfers(new) == [("s", "host", "device"), ("a", "device", "host")]
    assert node_types(new) == ["Sin", "Transfer", "Mul", "Add", "Transfer", "Exp"]
    # the fetch of a (on the device) is the transfer Exp reads too; e and s are on the host
    assert [f.producer.type for f in new.fetches] == ["Transfer", "Exp", "Sin"]
    assert check(new, place, "host") == []
    verify(new, "partition", place=place, host="host")
    assert transfers(program) == []  # the program given is left as it was


def test_feeds_arrive_on_the_host_and_a_plan_all_on_the_host_is_left_alone():
    x = sg.placeholder(sg.float32, [3], name="x")
    program = program_for([sg.tanh(x)], {x: np.zeros(3, np.float32)})
    new = partition(program, on_host_if(set()), "host")
    assert transfers(new) == [("x", "host", "device"), ("Tanh", "device", "host")]
    assert partition(program, lambda node: "host", "host") is program


def test_constants_and_static_inputs_move_nowhere():
    x = sg.placeholder(sg.float32, [2, 3], name="x")
    y = sg.reshape(x * np.arange(6, dtype=np.float32).reshape(2, 3), [3, 2])
    program = program_for([y], {x: np.zeros((2, 3), np.float32)})
    new = partition(program, on_host_if(set()), "host")
    # the feed and the result move; the constant array and reshape's shape input do not
    assert [t[0] for t in transfers(new)] == ["x", "Reshape"]


def test_a_missing_transfer_is_found_by_the_verifier():
    x = sg.placeholder(sg.float32, [3], name="x")
    program = program_for([sg.exp(sg.sin(x) * 2.0)], {x: np.zeros(3, np.float32)})
    place = on_host_if({"Sin", "Exp"})
    with pytest.raises(VerificationError, match=r"runs on device and reads .*Sin.* from host "
                                                r"with no Transfer"):
        verify(program, "a pass", place=place, host="host")


def test_regions_are_partitioned_where_their_holder_runs():
    x = vector()
    inner = Body(x)
    (r,) = [inner.op("Sin", inner.op("Tanh", inner.feeds[0]))]
    outer = Body(x)
    (c,) = outer.call(inner.program(r), outer.op("Exp", outer.feeds[0]))
    program = outer.program(c)
    place = on_host_if({"Exp", "Sin", "Call"})  # the loop on the host, Tanh on the device
    new = partition(program, place, "host")
    region = new.nodes[-1].regions[0]
    # in the region: its feed (on the host, where Call runs) goes to the device for Tanh,
    # and Tanh's result back for Sin; nothing moves in the outer program
    assert node_types(new) == ["Exp", "Call"]
    assert node_types(region) == ["Transfer", "Tanh", "Transfer", "Sin"]
    assert check(new, place, "host") == []
    verify(new, place=place, host="host")


# -- a backend that leaves ops to its host -------------------------------------------------------
class LeavesToHost(NumpyBackend):
    """The NumPy backend, but for HOST_OPS, which it leaves to its host (NumPy): the one
    process runs both sides, so what crosses is checked by results and by the plan."""

    name = "leaves"
    host = "numpy"

    def supports(self, op_type):
        return op_type not in HOST_OPS and super().supports(op_type)

    @property
    def late_passes(self):
        return (("partition", self.partition),) + super().late_passes


class RunsNothingOfTanh(LeavesToHost):
    name = "notanh"
    host = None

    def supports(self, op_type):
        return op_type != "Tanh" and NumpyBackend.supports(self, op_type)


@pytest.fixture
def leaves(monkeypatch):
    for backend in (LeavesToHost(), RunsNothingOfTanh()):
        module = types.SimpleNamespace(__name__=f"tests_{backend.name}_backend", BACKEND=backend)
        monkeypatch.setitem(sys.modules, module.__name__, module)
        monkeypatch.setitem(backends.BACKENDS, backend.name, module.__name__)
    monkeypatch.setattr(backends, "_loaded", dict(backends._loaded))
    return sg.CompileOptions(verify=True)


def _both(fetches, feeds, options):
    """(results, source) of the run in a NumPy session, then in a partitioned one."""
    out = []
    for backend in ("numpy", "leaves"):
        with sg.Session(backend=backend, options=options) as sess:
            out.append((sess.run(fetches, feeds), sess.source(fetches, feeds)))
    return out


@pytest.mark.parametrize("size", [3, N])  # N: fused groups on both sides of the transfers
def test_a_partitioned_plan_computes_what_the_numpy_backend_does(leaves, size):
    rng = np.random.default_rng(0)
    xv = rng.standard_normal(size).astype(np.float32)
    x = sg.placeholder(sg.float32, [size], name="x")
    y = sg.tanh(sg.sin(x) * 1.5 + 0.25) * sg.exp(x * 0.5)
    loss = sg.reduce_sum(y * y)
    (gx,) = sg.gradients(loss, [x])
    (want, _), (got, source) = _both([y, loss, gx], {x: xv}, leaves)
    s = np.sin(xv)
    ref_y = np.tanh(s * np.float32(1.5) + np.float32(0.25)) * np.exp(xv * np.float32(0.5))
    np.testing.assert_allclose(got[0], ref_y, rtol=1e-6)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)  # (other groupings)
    assert "# Transfer numpy -> leaves of Placeholder 'x' at test_partition.py:" in source
    assert "# Transfer numpy -> leaves of Sin 'Sin'" in source
    assert "# Transfer leaves -> numpy of Mul" in source  # (Exp reads x * 0.5, made there)


def test_variables_and_their_updates_run_partitioned(leaves):
    w = sg.Variable(np.array([0.5, -1.0, 2.0], np.float32), name="w")
    x = sg.placeholder(sg.float32, [3], name="x")
    loss = sg.reduce_sum(sg.sin(w * x))  # Sin on the host, the rest on the device
    step = sg.train.GradientDescentOptimizer(0.1).minimize(loss)
    xv = np.array([1.0, 2.0, 3.0], np.float32)
    results = []
    for backend in ("numpy", "leaves"):
        with sg.Session(backend=backend, options=leaves) as sess:
            sess.run(sg.global_variables_initializer())
            for _ in range(3):
                sess.run(step, {x: xv})
            results.append(sess.read_variable("w"))
    want = np.array([0.5, -1.0, 2.0], np.float32)
    for _ in range(3):
        want = want - np.float32(0.1) * np.cos(want * xv) * xv
    np.testing.assert_allclose(results[1], want, rtol=1e-6)
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


def test_a_fetch_brought_home_by_a_transfer_keeps_its_tensor_name(leaves):
    w = sg.Variable(np.array([1.0, 2.0], np.float32), name="w")
    x = sg.placeholder(sg.float32, [2], name="x")
    update = sg.assign(w, w * 2.0, name="double")  # on the device, fetched on the host
    y = sg.exp(x, name="e")                        # on the host
    with sg.Session(backend="leaves", options=leaves) as sess:
        sess.run(sg.global_variables_initializer())
        source = sess.source([update, y], {x: np.zeros(2, np.float32)})
        np.testing.assert_array_equal(sess.run(update, {x: np.zeros(2, np.float32)}), [2, 4])
    assert "Fetches (what run returns): double:0, e:0." in source


def test_a_transfer_of_a_region_feed_has_a_comment_without_an_op():
    from staticgrad.codegen.walk import node_comment
    x = vector()
    inner = Body(x)
    (r,) = [inner.op("Tanh", inner.feeds[0])]
    outer = Body(x)
    (c,) = outer.call(inner.program(r), outer.op("Exp", outer.feeds[0]))
    new = partition(outer.program(c), on_host_if({"Exp", "Call"}), "host")
    into = new.nodes[-1].regions[0].nodes[0]
    assert into.type == "Transfer" and into.origin is None
    assert node_comment(into) == f"# Transfer host -> device of '{into.inputs[0].name}'"


def test_an_op_neither_side_can_run_is_refused_at_compile_naming_op_backend_and_line(leaves):
    x = sg.placeholder(sg.float32, [3], name="x")
    y = sg.tanh(x, name="the_tanh")
    with sg.Session(backend="notanh") as sess:
        with pytest.raises(UnimplementedError,
                           match=r"test_partition.py:\d+: the notanh backend cannot run Tanh"):
            sess.run(y, {x: np.zeros(3, np.float32)})


def test_no_graph_holds_a_transfer_neither_built_nor_loaded():
    x = sg.placeholder(sg.float32, [3], name="x")
    g = x.graph
    with pytest.raises(ValueError, match=r"Transfer ops are made only by the compiler's passes.*"
                                         r"test_partition.py:\d+"):
        g.create_op("Transfer", [x], {"source": "numpy", "target": "cuda"})
    doc = sg.train.export_meta_graph(graph=g)
    doc["ops"].append({"name": "t", "type": "Transfer", "inputs": ["x:0"], "control_inputs": [],
                       "attrs": {"source": {"type": "str", "value": "numpy"},
                                 "target": {"type": "str", "value": "cuda"}},
                       "outputs": [{"dtype": "float32", "shape": [3]}]})
    with sg.Graph().as_default(), pytest.raises(GraphFormatError,
                                                match="unknown op type 'Transfer'"):
        sg.train.import_meta_graph(doc)
