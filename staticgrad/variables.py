"""`Variable`: state that lives in a session and survives across `run` calls (TF1 semantics).

A variable is a `VariableV2` op whose output is read where it is used; its value lives in
each session (two sessions on one graph hold independent values) and is set by running its
`initializer` (or `global_variables_initializer()`).

>>> w = Variable([[1.0, 2.0]], name="w")      # doctest: +SKIP
>>> sess.run(w.initializer); sess.run(w * 2)  # doctest: +SKIP
"""

from __future__ import annotations

from . import dtypes as _dt
from .graph import GraphKeys, Tensor, _session_for, get_default_graph
from .ops import bind_operators, state_ops
from .ops.conversion import convert_to_tensor
from .ops.creation import apply1


class Variable:
    """A trainable (by default) value held by each session; use it like a tensor."""

    def __init__(self, initial_value=None, trainable=True, collections=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None,
                 expected_shape=None, import_scope=None, constraint=None, shape=None):
        if initial_value is None:
            raise ValueError("Variable needs an initial_value")
        g = initial_value.graph if isinstance(initial_value, Tensor) else \
            get_default_graph().variable_home  # (out of a loop or branch being built)
        # TF1's init_scope: an initial value never waits on the control dependencies around it
        with g.as_default(), g.control_dependencies(None), \
                g.name_scope(name or "Variable") as scope:
            if callable(initial_value):
                initial_value = initial_value()
            init = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
            var_shape = init.shape if shape is None else shape
            from .shapes import as_shape
            var_shape = as_shape(var_shape, what=f"variable {scope[:-1]!r}")
            if validate_shape and not var_shape.is_fully_defined():
                raise ValueError(f"variable {scope[:-1]!r}: the initial value's shape "
                                 f"{init.shape} must be fully known (or pass "
                                 "validate_shape=False)")
            self._tensor = apply1("VariableV2", [], {"shape": var_shape, "dtype": init.dtype},
                                  name=scope, graph=g)
            self._var_name = self._tensor.op.name
            self._initial_value = init
            self._initializer = state_ops.assign(self, init, validate_shape=validate_shape,
                                                 name="Assign").op
        self.trainable = bool(trainable)
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        if self.trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections = list(collections) + [GraphKeys.TRAINABLE_VARIABLES]
        g.add_to_collections(collections, self)

    # -- identity ------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._tensor.name

    @property
    def op(self):
        return self._tensor.op

    @property
    def graph(self):
        return self._tensor.graph

    @property
    def dtype(self) -> _dt.DType:
        return self._tensor.dtype

    @property
    def shape(self):
        return self._tensor.shape

    def get_shape(self):
        return self._tensor.shape

    @property
    def initializer(self):
        """The op that sets this variable to its initial value."""
        return self._initializer

    @property
    def initial_value(self) -> Tensor:
        return self._initial_value

    @property
    def device(self) -> str:
        return ""

    def value(self) -> Tensor:
        """The tensor that reads this variable."""
        return self._tensor

    read_value = value

    def initialized_value(self) -> Tensor:
        return self._initial_value

    def _as_graph_element(self) -> Tensor:
        """What the variable stands for in its graph (TF1's protocol): its value tensor."""
        return self._tensor

    # -- running -------------------------------------------------------------------------------
    def eval(self, session=None):
        return self._tensor.eval(session=session)

    def load(self, value, session=None):
        """Set this variable's value in `session` directly, without adding ops."""
        _session_for(session, self._tensor)._set_variable(self, value)

    def assign(self, value, use_locking=False, name=None, read_value=True):
        return state_ops.assign(self, value, name=name)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return state_ops.assign_add(self, delta, name=name)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return state_ops.assign_sub(self, delta, name=name)

    def __repr__(self):
        return (f"<sg.Variable '{self.name}' shape={self.shape} "
                f"dtype={self.dtype.name}>")

    # Python operators are bound in ops/__init__.py, as for Tensor.


def global_variables(scope=None) -> list[Variable]:
    """All variables of the default graph (TF1: the GLOBAL_VARIABLES collection)."""
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


all_variables = global_variables


def trainable_variables(scope=None) -> list[Variable]:
    """The variables created with trainable=True."""
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope=None) -> list[Variable]:
    """The variables in the LOCAL_VARIABLES collection (those of `scope`, if given)."""
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    """An op that runs the initializers of `var_list`."""
    return state_ops.group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer():
    """An op that initializes every global variable of the default graph."""
    return variables_initializer(global_variables(), name="init")


initialize_all_variables = global_variables_initializer


def local_variables_initializer():
    """An op that initializes every local variable of the default graph (a metric's
    counts: run it again to start counting afresh)."""
    return variables_initializer(local_variables(), name="init")


initialize_local_variables = local_variables_initializer


bind_operators(Variable)  # x + v, v[0]... as on tensors
Variable.__array_ufunc__ = None  # NumPy defers to them: np_array + v is a tensor
