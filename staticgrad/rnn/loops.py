"""Running a cell over a sequence, as TF1 users write it: `dynamic_rnn` (a loop inside the
graph, over a sequence length fed at run time), `bidirectional_dynamic_rnn`, and
`static_rnn` (the steps unrolled into the graph while it is built).

    outputs, state = sg.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=sg.float32)

`dynamic_rnn`'s loop is a Scan over the time steps (control_flow/scan.py): TF1 writes it as
a while_loop over TensorArrays, which comes to the same loop with the same number of steps;
the Scan's gradient runs the steps backwards and has a gradient of its own (second
derivatives through an RNN work). With `sequence_length`, a row's steps past its length
leave its state as it was and give zero outputs, as TF1's do.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import dtypes as _dt
from ..control_flow import structure as nest
from ..control_flow.scan_build import make_scan
from ..errors import format_location, user_location
from ..graph import get_default_graph
from ..ops import math_ops as M
from ..ops.array_ops import expand_dims, shape, transpose
from ..ops.conversion import convert_to_tensor
from ..ops.debug_ops import Assert
from ..ops.indexing_ops import range as irange
from ..ops.join_ops import stack
from ..ops.state_ops import random_uniform
from ..variable_scope import variable_scope
from .cells import RNNCell, _map_sizes


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory=False, time_major=False, scope=None):
    """`cell` run over the time steps of `inputs` ([batch, time, depth], or [time, batch,
    depth] with `time_major`; a structure of such tensors too), starting from
    `initial_state` (else the cell's zero state of `dtype`). Returns (outputs, last state):
    outputs [batch, time, output_size] (time-major with `time_major`), the last state of
    each row (at its `sequence_length`). Variables are made in the scope `rnn`."""
    where = f"dynamic_rnn at {format_location(user_location())}"
    _check_cell(cell, where)
    with variable_scope(scope or "rnn"):
        return _run(cell, inputs, sequence_length, initial_state, dtype, time_major, False,
                    where)


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False, time_major=False,
                              scope=None):
    """A forward and a backward `dynamic_rnn` over `inputs` (the backward one from each
    row's last valid step to its first), in scopes `bidirectional_rnn/fw` and `.../bw`.
    Returns ((outputs_fw, outputs_bw), (state_fw, state_bw)), both outputs in the inputs'
    time order."""
    where = f"bidirectional_dynamic_rnn at {format_location(user_location())}"
    _check_cell(cell_fw, where)
    _check_cell(cell_bw, where)
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw"):
            out_fw, state_fw = _run(cell_fw, inputs, sequence_length, initial_state_fw, dtype,
                                    time_major, False, where)
        with variable_scope("bw"):
            out_bw, state_bw = _run(cell_bw, inputs, sequence_length, initial_state_bw, dtype,
                                    time_major, True, where)
    return (out_fw, out_bw), (state_fw, state_bw)


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """`cell` applied to each tensor of the list `inputs` ([batch, depth] each), the steps
    unrolled into the graph now. Returns (a list of outputs, the last state)."""
    where = f"static_rnn at {format_location(user_location())}"
    _check_cell(cell, where)
    if not isinstance(inputs, list | tuple) or not inputs:
        raise TypeError(f"{where}: inputs must be a non-empty list of tensors, one a step")
    inputs = [convert_to_tensor(x) for x in inputs]
    with variable_scope(scope or "rnn"):
        batch = _batch_size(inputs[0], 0, where)
        state = _first_state(cell, initial_state, batch, dtype, inputs[0].dtype, where)
        _check_state(cell, [convert_to_tensor(s) for s in nest.flatten(state)], where)
        lengths = _lengths(sequence_length, where, batch)
        outputs = []
        for t, x in enumerate(inputs):
            out, new = cell(x, state)
            if lengths is not None:
                out, new = _masked(t, lengths, out, new, state)
            outputs.append(out)
            state = new
    return outputs, state


# -- the loop -----------------------------------------------------------------------------------
def _run(cell, inputs, sequence_length, initial_state, dtype, time_major, reverse, where):
    flat = [convert_to_tensor(x) for x in nest.flatten(inputs)]
    if not flat:
        raise ValueError(f"{where}: inputs is empty")
    for x in flat:
        if x.graph.eager:
            raise TypeError(f"{where}: dynamic_rnn builds a loop into a graph; in the dynamic "
                            "mode, loop over the time steps in Python")
        if x.shape.ndims is None:
            raise ValueError(f"{where}: the rank of the inputs ({x.name}) must be known")
        if x.shape.ndims < 3:
            raise ValueError(f"{where}: inputs must be at least 3-D ([batch, time, depth]), "
                             f"got {x.name} of shape {x.shape}")
    if not time_major:  # the Scan runs over the first axis: time
        flat = [transpose(x, [1, 0, *range(2, x.shape.ndims)]) for x in flat]
    batch = _batch_size(flat[0], 1, where)
    state = _first_state(cell, initial_state, batch, dtype, flat[0].dtype, where)
    state_leaves = [convert_to_tensor(s) for s in nest.flatten(state)]
    _check_state(cell, state_leaves, where)
    lengths = _lengths(sequence_length, where, batch)
    depth = flat[0].shape.dims[-1] if flat[0].shape.dims else None
    noise_specs = cell.step_noise(batch, depth)
    steps = shape(flat[0])[0] if flat[0].shape.dims[0] is None else flat[0].shape.dims[0]
    per_step, fixed = [], []
    for dims, variational, seed in noise_specs:  # drawn now: the loop body may not draw
        if variational:
            fixed.append(_uniform(dims, flat[0].dtype, seed))
        else:
            per_step.append(_uniform([steps, *dims], flat[0].dtype, seed))
    times = [irange(steps)] if lengths is not None else []
    holder = {}

    def step(carried, rows):
        s = nest.pack(state, iter(carried))
        k = len(flat)
        x_t = nest.pack(inputs, iter(rows[:k]))
        step_rows, rest = list(rows[k:k + len(per_step)]), rows[k + len(per_step):]
        if noise_specs:
            rows_iter = iter(step_rows)
            cell._take_noise([f if v else next(rows_iter) for f, (_, v, _) in
                              zip(_fixed_iter(fixed, noise_specs), noise_specs)])
        out, new = cell(x_t, s)
        if lengths is not None:
            out, new = _masked(rest[0], lengths, out, new, s)
        holder["output"] = out
        new_leaves = [convert_to_tensor(v) for v in nest.flatten(new)]
        if len(new_leaves) != len(carried):
            raise ValueError(f"{where}: the cell's new state has {len(new_leaves)} tensors, "
                             f"its state {len(carried)}")
        return new_leaves, [convert_to_tensor(v) for v in nest.flatten(out)]

    out = make_scan(step, state_leaves, [*flat, *per_step, *times], reverse, where, "rnn")
    finals, outputs = out[:len(state_leaves)], out[len(state_leaves):]
    if not time_major:
        outputs = [transpose(o, [1, 0, *range(2, o.shape.ndims)]) for o in outputs]
    return nest.pack(holder["output"], iter(outputs)), nest.pack(state, iter(finals))


def _fixed_iter(fixed, specs):
    """For each noise spec, its drawn tensor if it is drawn once (variational), else None."""
    it = iter(fixed)
    return [next(it) if variational else None for _, variational, _ in specs]


def _uniform(dims, dtype, seed):
    """Uniform noise in [0, 1) of shape `dims` (ints and scalar tensors) for a cell's dropout,
    drawn outside the loop."""
    shape_ = dims if all(isinstance(d, numbers.Integral) for d in dims) else \
        stack([d if isinstance(d, numbers.Integral) else convert_to_tensor(d, dtype=_dt.int32)
               for d in dims])
    return random_uniform(shape_, dtype=dtype, seed=seed)


def _masked(t, lengths, out, new, old):
    """Past a row's length: its state as it was, its output zeros (TF1's dynamic_rnn),
    chosen (not blended: a NaN past the length stays there)."""
    keep = M.less(convert_to_tensor(t, dtype=_dt.int32), lengths)  # [batch]

    def choose(a, b):  # a where keep, else b
        a, b = convert_to_tensor(a), convert_to_tensor(b)
        k = keep
        for _ in range(a.shape.ndims - 1):
            k = expand_dims(k, -1)
        return M.where(k, a, b)

    out = _zip_map(lambda o, _: choose(o, M.zeros_like(o)), out, out)
    new = _zip_map(choose, new, old)
    return out, new


def _zip_map(fn, a, b):
    leaves = [fn(x, y) for x, y in zip(nest.flatten(a), nest.flatten(b))]
    return nest.pack(a, iter(leaves))


def _check_cell(cell, where: str) -> None:
    if not isinstance(cell, RNNCell):
        raise TypeError(f"{where}: cell must be an RNN cell (sg.nn.rnn_cell), got {cell!r}")


def _batch_size(x, axis: int, where: str):
    dims = x.shape.dims
    if dims is None:
        raise ValueError(f"{where}: the inputs' rank must be known")
    return dims[axis] if dims[axis] is not None else shape(x)[axis]


def _first_state(cell, initial_state, batch, dtype, input_dtype, where):
    if initial_state is not None:
        return initial_state
    if dtype is None:
        raise ValueError(f"{where}: give initial_state or dtype (the zero state's dtype)")
    dtype = _dt.as_dtype(dtype)
    if dtype is not input_dtype:
        raise TypeError(f"{where}: dtype is {dtype.name} but the inputs are "
                        f"{input_dtype.name}")
    return cell.zero_state(batch, dtype)


def _check_state(cell, leaves, where: str) -> None:
    """The state given has as many tensors as the cell's state, each as wide as its size."""
    sizes = []
    _map_sizes(lambda size: sizes.append(size), cell.state_size)
    if len(sizes) != len(leaves):
        raise ValueError(f"{where}: initial_state has {len(leaves)} tensors, but the cell's "
                         f"state has {len(sizes)} (state_size {cell.state_size})")
    for i, (t, size) in enumerate(zip(leaves, sizes)):
        width = size if isinstance(size, numbers.Integral) else None
        dims = t.shape.dims
        if width is not None and dims and dims[-1] is not None and dims[-1] != width:
            raise ValueError(f"{where}: tensor {i} of initial_state ({t.name}) has shape "
                             f"{t.shape}, but the cell's state there is {width} wide")


def _lengths(sequence_length, where, batch):
    """sequence_length as int32, checked to have one length a row of the batch (now where
    both are known, else when the session runs)."""
    if sequence_length is None:
        return None
    lengths = convert_to_tensor(np.asarray(sequence_length) if isinstance(
        sequence_length, list | tuple) else sequence_length)
    if not lengths.dtype.is_integer or (lengths.shape.ndims not in (None, 1)):
        raise ValueError(f"{where}: sequence_length must be a vector of integers (one "
                         f"length a row), got {lengths.dtype.name}{lengths.shape}")
    lengths = M.cast(lengths, _dt.int32)
    rows = lengths.shape.dims[0] if lengths.shape.dims else None
    if isinstance(batch, numbers.Integral) and rows is not None:
        if rows != batch:
            raise ValueError(f"{where}: sequence_length has {rows} lengths, but the batch has "
                             f"{batch} rows")
        return lengths
    check = Assert(M.equal(shape(lengths)[0], batch),
                   [f"{where}: sequence_length must have one length for each row of the "
                    "batch; lengths, rows:", shape(lengths)[0], batch])
    with get_default_graph().control_dependencies([check]):
        return M.identity(lengths)
