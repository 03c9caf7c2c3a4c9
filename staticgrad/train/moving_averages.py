"""TF1's `tf.train.ExponentialMovingAverage`: shadow variables that follow others slowly,
`shadow -= (1 - decay) * (shadow - variable)` at each run of the op `apply` returns.

    ema = sg.train.ExponentialMovingAverage(0.999, num_updates=step)
    with sg.control_dependencies([train]):
        train_and_average = ema.apply(sg.trainable_variables())
    ...
    saver = sg.train.Saver(ema.variables_to_restore())   # evaluate with the averages

With `num_updates` the decay is min(decay, (1 + num_updates) / (10 + num_updates)), so that
the averages move fast at first, as TF1's. A shadow starts at its variable's initial value,
is named `<variable>/ExponentialMovingAverage` (the EMA's name), is not trainable, and is in
the MOVING_AVERAGE_VARIABLES collection.
"""

from __future__ import annotations

from .. import dtypes as _dt
from ..graph import GraphKeys, get_default_graph, name_scope
from ..ops import math_ops as M
from ..ops.conversion import convert_to_tensor
from ..ops.state_ops import assign_sub, group
from ..variables import Variable, global_variables


class ExponentialMovingAverage:
    """Moving averages of variables (see the module's docstring)."""

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        if zero_debias:
            raise ValueError("ExponentialMovingAverage: zero_debias is not offered")
        self._decay, self._num_updates, self._name = decay, num_updates, name
        self._averages: dict = {}  # the variable -> its shadow

    @property
    def name(self) -> str:
        return self._name

    def apply(self, var_list=None):
        """Make the shadows of `var_list` (default: the trainable variables) the first time,
        and return the op updating all of them."""
        if var_list is None:
            var_list = get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES)
        var_list = list(var_list)
        for v in var_list:
            if not isinstance(v, Variable) or not v.dtype.is_floating:
                raise TypeError(f"ExponentialMovingAverage.apply: {v!r} is not a float "
                                "variable")
            if v not in self._averages:
                self._averages[v] = Variable(v.initialized_value(), trainable=False,
                                             name=f"{v.op.name}/{self._name}",
                                             collections=[GraphKeys.GLOBAL_VARIABLES,
                                                          GraphKeys.MOVING_AVERAGE_VARIABLES])
        with name_scope(self._name):
            decay = convert_to_tensor(self._decay, dtype=_dt.float32)
            if self._num_updates is not None:
                steps = M.cast(convert_to_tensor(self._num_updates), _dt.float32)
                decay = M.minimum(decay, (1.0 + steps) / (10.0 + steps))
            updates = []
            for v in var_list:
                shadow = self._averages[v]
                rate = M.cast(1.0 - decay, v.dtype)
                updates.append(assign_sub(shadow, (shadow - v) * rate).op)
            return group(*updates, name=self._name)

    def average(self, var):
        """The shadow of `var` (None if apply never saw it)."""
        return self._averages.get(var)

    def average_name(self, var) -> str:
        """The name the shadow of `var` has (or would have), without ':0'."""
        return f"{var.op.name}/{self._name}"

    def variables_to_restore(self, moving_avg_variables=None) -> dict:
        """{name to restore from: variable}: the averaged variables read their shadows'
        values, every other global variable its own (a Saver of this restores averages)."""
        averaged = set(map(id, self._averages if moving_avg_variables is None
                           else moving_avg_variables))
        out = {}
        for v in global_variables():
            if v in self._averages.values():
                continue
            out[self.average_name(v) if id(v) in averaged else v.op.name] = v
        return out
