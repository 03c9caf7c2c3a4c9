"""TF1's RNN cells (`tf.nn.rnn_cell`): one step of a recurrent network, `cell(inputs, state)
-> (output, new_state)`, with TF1's variable names, shapes, gate order and defaults, so that
a TF1 user's checkpoint names line up.

A cell creates its variables on its first call, in a variable scope named after it
(`basic_lstm_cell`, `basic_lstm_cell_1`... inside the scope around the call, or `name`), and
every later call reuses them:

    cell = sg.nn.rnn_cell.BasicLSTMCell(64)
    outputs, state = sg.nn.dynamic_rnn(cell, x, dtype=sg.float32)
    # variables rnn/basic_lstm_cell/kernel [input + 64, 256] and rnn/basic_lstm_cell/bias [256]

A cell's kernel is Glorot-uniform unless the variable scope or an `initializer` says
otherwise (get_variable's default, as in TF1), its biases zeros (a GRU's gates: ones).
"""

from __future__ import annotations

import collections
import numbers

from .. import dtypes as _dt
from .. import initializers
from ..errors import format_location, user_location
from ..graph import name_scope
from ..ops import math_ops as M
from ..ops.array_ops import zeros
from ..ops.conversion import convert_to_tensor
from ..ops.join_ops import concat, split
from ..variable_scope import get_variable, variable_scope


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """An LSTM's state: the cell state `c` and the output `h` (TF1's order)."""

    __slots__ = ()

    @property
    def dtype(self):
        if self.c.dtype is not self.h.dtype:
            raise TypeError(f"the c and h of an LSTMStateTuple have different dtypes: "
                            f"{self.c.dtype.name} and {self.h.dtype.name}")
        return self.c.dtype


class RNNCell:
    """The base of the cells: `state_size`, `output_size`, `zero_state`, and `__call__`,
    which opens the cell's variable scope, builds its variables on the first call (`build`)
    and runs one step (`call`)."""

    _base_name = "rnn_cell"

    def __init__(self, reuse=None, name=None, dtype=None):
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"{type(self).__name__}: name must be a non-empty str, got "
                             f"{name!r}")
        self._reuse, self._name = reuse, name
        self._dtype = _dt.as_dtype(dtype) if dtype is not None else None
        self._scope = None  # the VariableScope of its variables, once built
        self.built = False

    @property
    def state_size(self):
        raise NotImplementedError

    @property
    def output_size(self):
        raise NotImplementedError

    @property
    def name(self):
        return self._scope.name if self._scope is not None else self._name or self._base_name

    def zero_state(self, batch_size, dtype):
        """Zeros of the cell's state structure, each `[batch_size, size]`."""
        with name_scope(None, f"{type(self).__name__}ZeroState"):
            return _map_sizes(lambda size: zeros(_batched(batch_size, size), dtype),
                              self.state_size)

    def __call__(self, inputs, state, scope=None):
        inputs = convert_to_tensor(inputs)
        if inputs.graph.eager:
            raise TypeError(f"{type(self).__name__} at {format_location(user_location())}: "
                            "the RNN cells build graph ops and variables; in the dynamic mode "
                            "write the step with dynamic tensors")
        if not self.built:
            self._dtype = self._dtype or inputs.dtype
            with variable_scope(scope or self._name, default_name=self._base_name,
                                reuse=self._reuse) as vs:
                self._scope = vs
                depth = inputs.shape.dims[-1] if inputs.shape.dims else None
                if depth is None:
                    raise ValueError(f"{type(self).__name__} at "
                                     f"{format_location(user_location())}: the last dimension "
                                     f"of its inputs ({inputs.name}) must be known, got shape "
                                     f"{inputs.shape}")
                self.build(depth)
                self.built = True
                return self.call(inputs, state)
        with variable_scope(self._scope):
            return self.call(inputs, state)

    def build(self, input_depth: int) -> None:
        """Create the variables (get_variable, in the cell's scope)."""

    def call(self, inputs, state):
        raise NotImplementedError

    def _variable(self, name, shape, initializer=None):
        return get_variable(name, shape, dtype=self._dtype, initializer=initializer)

    @property
    def variables(self) -> list:
        return list(self._weights) if self.built else []

    # TF1's other names for them (a cell's variables are all trainable), whichever cell's
    # `variables` it is
    trainable_variables = weights = trainable_weights = property(lambda self: self.variables)

    def step_noise(self, batch_size, input_depth: int) -> list:
        """The random numbers one step draws (a DropoutWrapper's masks), as (shape, per
        step?) pairs: dynamic_rnn draws them before its loop, whose body may not draw."""
        return []

    def _take_noise(self, noise: list) -> None:
        """Hand the cell the noise `step_noise` asked for (this step's rows), in order."""


def _batched(batch_size, size):
    if isinstance(size, numbers.Integral):
        return [batch_size, int(size)]
    return [batch_size, *size]


def _map_sizes(fn, sizes):
    """fn over each int (or shape) of a nested state-size structure, keeping it."""
    if isinstance(sizes, numbers.Integral) or (isinstance(sizes, list) and sizes and all(
            isinstance(d, numbers.Integral) for d in sizes)):
        return fn(sizes)
    if isinstance(sizes, tuple):
        items = [_map_sizes(fn, s) for s in sizes]
        return type(sizes)(*items) if hasattr(sizes, "_fields") else tuple(items)
    raise TypeError(f"a state size must be an int or a tuple of them, got {sizes!r}")


def _activation(activation):
    if activation is None:
        return M.tanh
    if not callable(activation):
        raise TypeError(f"activation must be callable, got {activation!r}")
    return activation


def _units(num_units, cls: str) -> int:
    if not isinstance(num_units, numbers.Integral) or isinstance(num_units, bool) or \
            num_units < 1:
        raise ValueError(f"{cls}: num_units must be a positive int, got {num_units!r}")
    return int(num_units)


class BasicRNNCell(RNNCell):
    """output = new_state = activation(concat([inputs, state]) @ kernel + bias)."""

    _base_name = "basic_rnn_cell"

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None):
        super().__init__(reuse, name, dtype)
        self._num_units = _units(num_units, "BasicRNNCell")
        self._activation = _activation(activation)

    state_size = output_size = property(lambda self: self._num_units)

    def build(self, input_depth):
        n = self._num_units
        self._kernel = self._variable("kernel", [input_depth + n, n])
        self._bias = self._variable("bias", [n], initializers.zeros_initializer())
        self._weights = [self._kernel, self._bias]

    def call(self, inputs, state):
        out = self._activation(M.matmul(concat([inputs, state], 1), self._kernel) + self._bias)
        return out, out


class BasicLSTMCell(RNNCell):
    """An LSTM without peepholes or projection: gates i, j, f, o from one matmul of
    concat([inputs, h]), c' = c * sigmoid(f + forget_bias) + sigmoid(i) * activation(j),
    h' = activation(c') * sigmoid(o)."""

    _base_name = "basic_lstm_cell"

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None):
        super().__init__(reuse, name, dtype)
        self._num_units = _units(num_units, "BasicLSTMCell")
        self._forget_bias = float(forget_bias)
        self._state_is_tuple = bool(state_is_tuple)
        self._activation = _activation(activation)

    @property
    def state_size(self):
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    output_size = property(lambda self: self._num_units)

    def build(self, input_depth):
        n = self._num_units
        self._kernel = self._variable("kernel", [input_depth + n, 4 * n])
        self._bias = self._variable("bias", [4 * n], initializers.zeros_initializer())
        self._weights = [self._kernel, self._bias]

    def call(self, inputs, state):
        c, h = state if self._state_is_tuple else split(state, 2, axis=1)
        gates = M.matmul(concat([inputs, h], 1), self._kernel) + self._bias
        i, j, f, o = split(gates, 4, axis=1)
        new_c = c * M.sigmoid(f + self._forget_bias) + M.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * M.sigmoid(o)
        new_state = LSTMStateTuple(new_c, new_h) if self._state_is_tuple else \
            concat([new_c, new_h], 1)
        return new_h, new_state


class LSTMCell(RNNCell):
    """TF1's full LSTM: BasicLSTMCell plus optional peepholes (w_f_diag, w_i_diag,
    w_o_diag), a cell-state clip, a projection of the output (projection/kernel) and its
    clip, and an initializer for its weights."""

    _base_name = "lstm_cell"

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None):
        super().__init__(reuse, name, dtype)
        if num_unit_shards is not None or num_proj_shards is not None:
            raise ValueError("LSTMCell: num_unit_shards and num_proj_shards are deprecated "
                             "in TF1 and not supported: leave them None")
        self._num_units = _units(num_units, "LSTMCell")
        self._use_peepholes = bool(use_peepholes)
        self._cell_clip = None if cell_clip is None else float(cell_clip)
        self._initializer = initializer
        self._num_proj = None if num_proj is None else _units(num_proj, "LSTMCell num_proj")
        self._proj_clip = None if proj_clip is None else float(proj_clip)
        self._forget_bias = float(forget_bias)
        self._state_is_tuple = bool(state_is_tuple)
        self._activation = _activation(activation)

    @property
    def state_size(self):
        n, out = self._num_units, self._num_proj or self._num_units
        return LSTMStateTuple(n, out) if self._state_is_tuple else n + out

    output_size = property(lambda self: self._num_proj or self._num_units)

    def build(self, input_depth):
        n, init = self._num_units, self._initializer
        h_depth = self._num_proj or n
        self._kernel = self._variable("kernel", [input_depth + h_depth, 4 * n], init)
        self._bias = self._variable("bias", [4 * n], initializers.zeros_initializer())
        self._weights = [self._kernel, self._bias]
        if self._use_peepholes:
            self._w_f, self._w_i, self._w_o = (self._variable(name, [n], init) for name in
                                               ("w_f_diag", "w_i_diag", "w_o_diag"))
            self._weights += [self._w_f, self._w_i, self._w_o]
        if self._num_proj is not None:
            with variable_scope("projection"):
                self._proj = self._variable("kernel", [n, self._num_proj], init)
            self._weights.append(self._proj)

    def call(self, inputs, state):
        n = self._num_units
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev, m_prev = split(state, [n, self._num_proj or n], axis=1)
        lstm = M.matmul(concat([inputs, m_prev], 1), self._kernel) + self._bias
        i, j, f, o = split(lstm, 4, axis=1)
        act = self._activation
        if self._use_peepholes:
            c = M.sigmoid(f + self._forget_bias + self._w_f * c_prev) * c_prev + \
                M.sigmoid(i + self._w_i * c_prev) * act(j)
        else:
            c = M.sigmoid(f + self._forget_bias) * c_prev + M.sigmoid(i) * act(j)
        if self._cell_clip is not None:
            c = M.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = M.sigmoid(o + self._w_o * c) * act(c)
        else:
            m = M.sigmoid(o) * act(c)
        if self._num_proj is not None:
            m = M.matmul(m, self._proj)
            if self._proj_clip is not None:
                m = M.clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple else concat([c, m], 1)
        return m, new_state


class GRUCell(RNNCell):
    """A gated recurrent unit: gates r, u = sigmoid(concat([inputs, h]) @ gates/kernel +
    gates/bias), candidate c = activation(concat([inputs, r * h]) @ candidate/kernel +
    candidate/bias), h' = u * h + (1 - u) * c."""

    _base_name = "gru_cell"

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None):
        super().__init__(reuse, name, dtype)
        self._num_units = _units(num_units, "GRUCell")
        self._activation = _activation(activation)
        self._kernel_initializer, self._bias_initializer = kernel_initializer, bias_initializer

    state_size = output_size = property(lambda self: self._num_units)

    def build(self, input_depth):
        n, k_init, b_init = self._num_units, self._kernel_initializer, self._bias_initializer
        with variable_scope("gates"):
            self._gate_kernel = self._variable("kernel", [input_depth + n, 2 * n], k_init)
            self._gate_bias = self._variable(
                "bias", [2 * n], b_init or initializers.constant_initializer(1.0))
        with variable_scope("candidate"):
            self._candidate_kernel = self._variable("kernel", [input_depth + n, n], k_init)
            self._candidate_bias = self._variable(
                "bias", [n], b_init or initializers.zeros_initializer())
        self._weights = [self._gate_kernel, self._gate_bias, self._candidate_kernel,
                         self._candidate_bias]

    def call(self, inputs, state):
        value = M.sigmoid(M.matmul(concat([inputs, state], 1), self._gate_kernel) +
                          self._gate_bias)
        r, u = split(value, 2, axis=1)
        candidate = M.matmul(concat([inputs, r * state], 1), self._candidate_kernel) + \
            self._candidate_bias
        c = self._activation(candidate)
        new_h = u * state + (1 - u) * c
        return new_h, new_h
