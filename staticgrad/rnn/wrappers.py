"""Cells made of cells: `MultiRNNCell` (a stack, each layer's output the next one's input)
and `DropoutWrapper` (dropout on a cell's inputs, outputs and state), as TF1's.

A loop body may not draw random numbers here (its gradient runs it again, which would draw
again), so a DropoutWrapper inside `dynamic_rnn` gets its masks' uniform noise drawn before
the loop, one row per step (`step_noise`), and reads the row of its step; called anywhere
else (static_rnn, a step of one's own) it draws as `sg.nn.dropout` does.
"""

from __future__ import annotations

import hashlib
import numbers

from ..control_flow import structure as nest
from ..graph import Tensor
from ..ops import math_ops as M
from ..ops.conversion import convert_to_tensor, is_tensor_like
from ..ops.nn_impl import dropout
from ..variable_scope import variable_scope
from .cells import LSTMStateTuple, RNNCell, _batched, _map_sizes


class MultiRNNCell(RNNCell):
    """`cells` applied in turn at each step (scopes cell_0, cell_1... within
    multi_rnn_cell); its state is the tuple of theirs."""

    _base_name = "multi_rnn_cell"

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        cells = list(cells)
        if not cells:
            raise ValueError("MultiRNNCell needs at least one cell")
        for i, c in enumerate(cells):
            if not isinstance(c, RNNCell):
                raise TypeError(f"MultiRNNCell: cell {i} is {c!r}, not an RNN cell")
        if not state_is_tuple:
            raise ValueError("MultiRNNCell: state_is_tuple=False is deprecated in TF1 and not "
                             "supported; keep the state a tuple")
        self._cells = cells

    @property
    def state_size(self):
        return tuple(c.state_size for c in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    def zero_state(self, batch_size, dtype):
        return tuple(c.zero_state(batch_size, dtype) for c in self._cells)

    def call(self, inputs, state):
        if not isinstance(state, tuple | list) or len(state) != len(self._cells):
            raise ValueError(f"MultiRNNCell: its state must be a tuple of {len(self._cells)} "
                             f"states, one for each cell, got {state!r}")
        out, states = inputs, []
        for i, (cell, s) in enumerate(zip(self._cells, state)):
            with variable_scope(f"cell_{i}"):
                out, new = cell(out, s)
            states.append(new)
        return out, tuple(states)

    @property
    def variables(self):
        return [v for c in self._cells for v in c.variables]

    def step_noise(self, batch_size, input_depth):
        specs, depth = [], input_depth  # (each cell's, in order; their inputs' depths chained)
        for cell in self._cells:
            specs += cell.step_noise(batch_size, depth)
            depth = _flat_size(cell.output_size)
        return specs

    def _take_noise(self, noise):
        for cell in self._cells:
            k = len(cell.step_noise(None, 0))
            cell._take_noise(noise[:k])
            noise = noise[k:]


def _flat_size(size) -> int:
    if isinstance(size, numbers.Integral):
        return int(size)
    raise TypeError(f"a cell's output_size must be an int here, got {size!r}")


class DropoutWrapper(RNNCell):
    """`cell` with dropout: on its inputs (`input_keep_prob`), its outputs
    (`output_keep_prob`) and its new state (`state_keep_prob`; of an LSTM's state only `h`,
    unless `dropout_state_filter_visitor` says otherwise), with a fresh mask at each step,
    or one mask for every step with `variational_recurrent` (TF1's semantics). With a
    `seed`, each mask draws with a seed of its own made from it, as TF1's do."""

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None):
        super().__init__()
        if not isinstance(cell, RNNCell):
            raise TypeError(f"DropoutWrapper wraps an RNN cell, got {cell!r}")
        if dropout_state_filter_visitor is not None and \
                not callable(dropout_state_filter_visitor):
            raise TypeError("DropoutWrapper: dropout_state_filter_visitor must be callable, "
                            f"got {dropout_state_filter_visitor!r}")
        self._cell = cell
        self._keep = {}
        for label, p in (("input", input_keep_prob), ("output", output_keep_prob),
                         ("state", state_keep_prob)):
            if isinstance(p, numbers.Real) and not is_tensor_like(p):
                if not 0 < p <= 1:
                    raise ValueError(f"DropoutWrapper: {label}_keep_prob must be in (0, 1], "
                                     f"got {p}")
                if p == 1:
                    continue
            self._keep[label] = p
        self._variational = bool(variational_recurrent)
        self._seed = seed
        self._visitor = dropout_state_filter_visitor or default_state_filter
        self._noise = None  # this step's rows of noise, when dynamic_rnn drew them

    state_size = property(lambda self: self._cell.state_size)
    output_size = property(lambda self: self._cell.output_size)

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)

    @property
    def variables(self):
        return self._cell.variables

    def __call__(self, inputs, state, scope=None):  # (the wrapped cell names the variables)
        noise = list(self._noise) if self._noise is not None else None
        self._noise = None
        inputs = convert_to_tensor(inputs)
        if "input" in self._keep:
            inputs = self._drop(inputs, "input", 0, noise)
        output, new_state = self._cell(inputs, state, scope)
        if "state" in self._keep:
            chosen = iter(self._dropped_state(new_state))
            leaves = [self._drop(t, "state", i, noise) if next(chosen) else t
                      for i, t in enumerate(nest.flatten(new_state))]
            new_state = nest.pack(new_state, iter(leaves))
        if "output" in self._keep:
            output = self._drop(output, "output", 0, noise)
        return output, new_state

    def _dropped_state(self, state) -> list[bool]:
        """For each tensor of `state` (flat): is it dropped out? (the visitor's answer)"""
        return nest.flatten(_filtered(state, self._visitor))

    def _drop(self, x: Tensor, label: str, index: int, noise) -> Tensor:
        keep = self._keep[label]
        if noise is None:
            return dropout(x, keep_prob=keep, seed=_mask_seed(self._seed, label, index))
        uniform = noise.pop(0)
        keep_t = M.cast(convert_to_tensor(keep), x.dtype) if is_tensor_like(keep) else keep
        mask = M.floor(keep_t + M.cast(uniform, x.dtype))  # 1 with probability keep
        return x / keep_t * mask

    def step_noise(self, batch_size, input_depth):
        """(shape, one mask for all steps?, seed) of each mask a step draws, in the order
        __call__ takes them: input, the wrapped cell's, state, output."""
        specs = []
        if "input" in self._keep:
            specs.append(([batch_size, input_depth], self._variational,
                          _mask_seed(self._seed, "input", 0)))
        specs += self._cell.step_noise(batch_size, input_depth)
        if "state" in self._keep:
            sizes = []
            _map_sizes(lambda s: sizes.append(_batched(batch_size, s)), self.state_size)
            chosen = self._dropped_state(_map_sizes(lambda s: s, self.state_size))
            specs += [(s, self._variational, _mask_seed(self._seed, "state", i))
                      for i, (s, drop) in enumerate(zip(sizes, chosen)) if drop]
        if "output" in self._keep:
            specs.append((_batched(batch_size, _flat_size(self.output_size)),
                          self._variational, _mask_seed(self._seed, "output", 0)))
        return specs

    def _take_noise(self, noise):
        mine = []
        k_inner = len(self._cell.step_noise(None, 0))
        if "input" in self._keep:
            mine.append(noise.pop(0))
        inner, rest = noise[:k_inner], noise[k_inner:]
        self._cell._take_noise(inner)
        self._noise = mine + rest


def default_state_filter(substate):
    """TF1's default: of an LSTM's state only `h` is dropped out; everything else is."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


def _filtered(state, visitor):
    """`state`'s structure with a bool at each tensor: is it dropped out? The visitor is
    asked of each node: False keeps it all, True drops a tensor or asks again of each part
    of a structure, and a structure of answers like the node's answers part by part."""
    return _answered(state, visitor(state), visitor)


def _answered(state, answer, visitor):
    is_structure = isinstance(state, tuple | list)
    if isinstance(answer, bool):
        if not answer or not is_structure:
            return nest.pack(state, iter([answer] * len(nest.flatten(state))))
        parts = [_filtered(s, visitor) for s in state]
    elif is_structure and isinstance(answer, tuple | list) and len(answer) == len(state):
        parts = [_answered(s, a, visitor) for s, a in zip(state, answer)]
    else:
        raise ValueError(f"dropout_state_filter_visitor answered {answer!r} for {state!r}; "
                         "it answers a bool, or a structure of answers like the state's")
    return type(state)(*parts) if hasattr(state, "_fields") else type(state)(parts)


def _mask_seed(seed, label: str, index: int):
    """TF1's seed for one mask of a DropoutWrapper seeded `seed` (its _gen_seed)."""
    if seed is None:
        return None
    text = f"{seed}{label}_{index}".encode()
    return int(hashlib.md5(text).hexdigest()[:8], 16) & 0x7FFFFFFF
