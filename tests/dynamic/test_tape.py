"""The tape's node builders (code written out once per kind of node): every kind builds the
node the module docstring describes, checked against that description field by field."""

import functools
import itertools
import weakref

import numpy as np
import pytest

import staticgrad.dynamic as dy
from staticgrad.dynamic import tape
from staticgrad.dynamic.tensor import NO_NODE
from staticgrad.ops.table import REGISTRY


def _kinds():
    for n_in, n_out in ((1, 1), (2, 1), (3, 1), (1, 2), (2, 2)):
        for keep_in in itertools.product((False, True), repeat=n_in):
            for keep_out in itertools.product((False, True), repeat=n_out):
                yield keep_in, keep_out


def _written_out(keep_in, keep_out):
    return tape._builder(keep_in, keep_out)


def _looping(keep_in, keep_out):  # what ops of more than tape.UNROLLED values use
    return functools.partial(tape._build_any, keep_in, keep_out)


@pytest.mark.parametrize("make", [_written_out, _looping])
@pytest.mark.parametrize(("keep_in", "keep_out"), list(_kinds()))
def test_each_kind_of_node_is_built_as_described(keep_in, keep_out, make):
    leaf = dy.tensor([1.0, 2.0], requires_grad=True)         # an AccumulateGrad edge
    made = leaf * 2.0                                         # a node's output: its edge
    plain = dy.tensor([[3.0], [4.0], [5.0]])                  # requires nothing: no edge
    inputs = (leaf, made, plain)[:len(keep_in)]
    outputs = tuple(dy.tensor(np.full(2, float(j))) for j in range(len(keep_out)))
    outputs[0]._version[0] = 7  # a counter already moved is recorded as it is
    cls = tape.node_class("TestBackward0")
    node = make(keep_in, keep_out)(cls, REGISTRY["Mul"], {}, inputs, outputs)

    assert type(node) is cls and node.opdef is REGISTRY["Mul"] and node.attrs == {}
    want_edges = [(tape.accumulator(leaf), 0), (made.op, 0), (None, 0)][:len(keep_in)]
    assert node.next_functions == tuple(want_edges)
    for x, keep, kept in zip(inputs, keep_in, node._in):
        assert kept is x if keep else kept == (x._data.shape, x.dtype)
    checks = [(x._version, 0, i) for i, (x, keep) in enumerate(zip(inputs, keep_in)) if keep]
    for j, (y, keep, kept) in enumerate(zip(outputs, keep_out, node._out)):
        if keep:
            assert type(kept[0]) is weakref.ref and kept[0]() is y
            assert kept[1:] == [y._data, y.dtype, y._version]
            checks.append((y._version, y._version[0], len(inputs) + j))
        else:
            assert kept == (y._data.shape, y.dtype)
        assert y.op is node and y.value_index == j and y.requires_grad  # floating outputs
    assert [(box, v, i) for box, v, i in node._checks] == checks
    assert all(box is want for (box, _, _), (want, _, _) in zip(node._checks, checks))
    assert node._recorded_at is None and node._inputs is None  # (not in anomaly mode)
    assert node.n_outputs == len(keep_out) and node.type == "Mul"


def test_an_integer_output_does_not_join_the_tape():
    x = dy.tensor([1.0, 2.0], requires_grad=True)
    index = dy.tensor([0, 1])
    node = tape._builder((True,), (False, False))(
        tape.node_class("TestBackward0"), REGISTRY["Mul"], {}, (x,), (x * 1.0, index))
    assert index.op is NO_NODE and not index.requires_grad and node.n_outputs == 2


def test_ops_of_many_inputs_share_one_looping_builder_and_record_as_others():
    xs = [dy.tensor([float(i)], requires_grad=True) for i in range(tape.UNROLLED + 4)]
    y = dy.stack(xs)
    assert isinstance(tape._KINDS[("Pack", len(xs), 1)][1], functools.partial)
    y.sum().backward()
    assert all(x.grad.tolist() == [1.0] for x in xs)


def test_builder_source_is_made_of_arities_and_flags_only():
    source = tape.builder_source((True, False), (False,))
    assert "x0, x1, = inputs" in source and "y0, = outputs" in source
    assert "node._in = [x0, (x1._data.shape, x1.dtype)]" in source
    assert "node._checks = [(x0._version, x0._version[0], 0)]" in source
