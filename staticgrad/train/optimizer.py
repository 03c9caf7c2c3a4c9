"""The `Optimizer` base class: gradients in, one training op out (TF1's `tf.train.Optimizer`).

    train_op = sg.train.AdamOptimizer(1e-3).minimize(loss, global_step=step)
    sess.run(train_op, feed_dict)     # forward, backward, and every update: one compiled call

`minimize` = `compute_gradients` (the symbolic reverse pass, `sg.gradients`) followed by
`apply_gradients`, which builds each variable's update out of ordinary graph ops (so the
generated code shows the update formula line by line) and groups them into one op.

A subclass says what state it keeps per variable (`_create_slots`: slot variables such as
Adam's `m` and `v`, named `<var>/Adam`, `<var>/Adam_1` as in TF1) and how one variable is
updated (`_apply_dense`). Slots are global variables, so `global_variables_initializer`
covers them and a `Saver` saves them.
"""

from __future__ import annotations

from .. import dtypes as _dt
from ..autodiff import gradients
from ..errors import format_location
from ..graph import GraphKeys, Tensor, get_default_graph
from ..ops.array_ops import shape, zeros
from ..ops.conversion import convert_to_tensor, is_tensor_like
from ..ops.creation import apply1
from ..ops.indexed_slices import IndexedSlices, to_dense
from ..ops.join_ops import concat
from ..ops.math_ops import cast
from ..ops.sort_ops import unique
from ..ops.state_ops import assign_add, group
from ..variables import Variable, trainable_variables

GATE_NONE, GATE_OP, GATE_GRAPH = 0, 1, 2


class Optimizer:
    """Base class of the optimizers; use a subclass such as `GradientDescentOptimizer`."""

    GATE_NONE, GATE_OP, GATE_GRAPH = GATE_NONE, GATE_OP, GATE_GRAPH

    def __init__(self, use_locking: bool, name: str):
        if not name:
            raise ValueError("an optimizer must have a name")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict[str, dict[Variable, Variable]] = {}
        self._non_slots: dict[tuple, Variable] = {}
        self._hypers: dict = {}

    def get_name(self) -> str:
        return self._name

    # -- the public steps --------------------------------------------------------------------
    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        """Add the ops that compute the gradients of `loss` and update `var_list` (default:
        every trainable variable); returns the training op. With `global_step`, the op also
        adds one to it after the updates."""
        grads_and_vars = self.compute_gradients(loss, var_list=var_list, grad_loss=grad_loss)
        if not any(g is not None for g, _ in grads_and_vars):
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not "
                f"support gradients, between variables {[v.name for _, v in grads_and_vars]} "
                f"and loss {loss.name} (created at {format_location(loss.op.location)})")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        """[(gradient or None, variable)] for the variables in `var_list`."""
        if callable(loss):
            loss = loss()
        if not isinstance(loss, Tensor):
            raise TypeError(f"the loss must be a tensor, got {type(loss).__name__}")
        if not loss.dtype.is_floating:
            raise TypeError(f"the loss {loss.name} has dtype {loss.dtype.name}; an optimizer "
                            f"needs a floating-point loss (created at "
                            f"{format_location(loss.op.location)})")
        if var_list is None:
            with loss.graph.as_default():
                var_list = trainable_variables()
        var_list = list(var_list.values() if isinstance(var_list, dict) else var_list)
        if not var_list:
            raise ValueError(f"No variables to optimize: the graph of loss {loss.name} (made by "
                             f"{loss.op.where()}) has no trainable variables, and no var_list "
                             "was given")
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"var_list must hold variables, got {v!r}")
        grads = gradients(loss, var_list, grad_ys=grad_loss)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The op that applies each (gradient, variable) update; adds 1 to `global_step`
        after all of them when given. Pairs with a None gradient are skipped."""
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        pairs = []
        for g, v in grads_and_vars:
            if not isinstance(v, Variable):
                raise TypeError(f"apply_gradients needs (gradient, variable) pairs; {v!r} is "
                                "not a variable")
            if g is not None:
                sparse = isinstance(g, IndexedSlices)
                if not sparse:
                    g = convert_to_tensor(g)
                where = f"gradient {g.name} ({g.op.where()}), variable {v.name} ({v.op.where()})"
                if not v.dtype.is_floating:
                    raise TypeError(f"cannot optimize variable {v.name} of dtype "
                                    f"{v.dtype.name}; {where}")
                if g.dtype is not v.dtype:
                    raise TypeError(f"the gradient's dtype {g.dtype.name} does not match the "
                                    f"variable's {v.dtype.name}: {where}")
                shape = g.values.shape[1:] if sparse else g.shape
                if not shape.is_compatible_with(v.shape[1:] if sparse else v.shape):
                    raise ValueError(f"the gradient's {'rows have' if sparse else ''} shape "
                                     f"{shape} does not match the variable's {v.shape}: "
                                     f"{where}")
            pairs.append((g, v))
        var_list = [v for g, v in pairs if g is not None]
        if not var_list:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{[v.name for _, v in pairs]}.")
        graph = var_list[0].graph
        with graph.as_default():
            with graph.control_dependencies(None), graph.name_scope(None):  # TF1's init_scope
                self._create_slots(var_list)
            with graph.name_scope(name or self._name) as scope:
                self._hypers = {}
                self._prepare()
                updates = []
                for g, v in pairs:
                    if g is not None:
                        with graph.name_scope("update_" + v.op.name):
                            updates.append(self._apply_sparse(g, v)
                                           if isinstance(g, IndexedSlices)
                                           else self._apply_dense(g, v))
                if global_step is None:
                    train_op = self._finish(updates, scope[:-1] + "/")
                else:
                    with graph.control_dependencies([self._finish(updates, "update")]):
                        train_op = assign_add(global_step, 1, name=scope[:-1] + "/").op
            graph.add_to_collection(GraphKeys.TRAIN_OP, train_op)
        return train_op

    # -- what subclasses define --------------------------------------------------------------
    def _create_slots(self, var_list) -> None:
        """Make the per-variable state (slot variables); none by default."""

    def _prepare(self) -> None:
        """Convert hyperparameters to tensors, once per apply_gradients."""

    def _apply_dense(self, grad, var):
        raise NotImplementedError

    def _apply_sparse(self, grad, var):
        """The update for an IndexedSlices gradient: by default the dense update of its dense
        tensor (TF1's rule for Adam: its moments decay everywhere); a sparse rule where the
        optimizer has one, which touches only the rows (GradientDescent, Momentum, Adagrad)."""
        return self._apply_dense(to_dense(grad, warn=False), var)

    @staticmethod
    def _deduplicated(grad: IndexedSlices):
        """(rows, indices) of `grad` with each index once, its rows summed (what a rule that
        reads and writes a row, such as Momentum's, needs)."""
        found = unique(grad.indices)
        rows = apply1("GatherGrad", [grad.values, found.idx, concat(
            [shape(found.y, out_type=grad.dense_shape.dtype)[:1], grad.dense_shape[1:]], 0)],
            {"axis": 0}, name="SumRows")
        return rows, found.y

    def _finish(self, update_ops, name_scope):
        return group(*update_ops, name=name_scope)

    # -- helpers for subclasses ---------------------------------------------------------------
    def _hyper(self, name: str, value, dtype: _dt.DType):
        """A hyperparameter (number, tensor, or callable giving one) as a tensor of `dtype`."""
        key = (name, dtype)
        if key not in self._hypers:
            if callable(value) and not is_tensor_like(value):
                value = value()
            if is_tensor_like(value):
                t = convert_to_tensor(value)
                self._hypers[key] = t if t.dtype is dtype else cast(t, dtype, name=name)
            else:
                self._hypers[key] = convert_to_tensor(value, dtype=dtype, name=name)
        return self._hypers[key]

    def _zeros_slot(self, var: Variable, slot_name: str) -> Variable:
        return self._slot_with_init(var, slot_name, lambda: zeros(var.shape.dims, var.dtype))

    def _slot_with_init(self, var: Variable, slot_name: str, init) -> Variable:
        slots = self._slots.setdefault(slot_name, {})
        if var not in slots:
            g = var.graph
            full = g.unique_name(f"{var.op.name}/{self._name}")
            slots[var] = Variable(init, trainable=False, name=full + "/", dtype=var.dtype)
        return slots[var]

    def _non_slot(self, name: str, initial_value, graph) -> Variable:
        key = (name, graph)
        if key not in self._non_slots:
            self._non_slots[key] = Variable(initial_value, trainable=False, name=name)
        return self._non_slots[key]

    # -- introspection -------------------------------------------------------------------------
    def get_slot_names(self) -> list[str]:
        return sorted(self._slots)

    def get_slot(self, var, name):
        """The slot variable `name` ("m", "momentum"...) of `var`, or None."""
        return self._slots.get(name, {}).get(var)

    def variables(self) -> list[Variable]:
        """The variables this optimizer created in the default graph (slots, and others such
        as Adam's beta powers), sorted by name."""
        graph = get_default_graph()
        out = [v for slots in self._slots.values() for v in slots.values()]
        out += list(self._non_slots.values())
        return sorted((v for v in out if v.graph is graph), key=lambda v: v.name)
