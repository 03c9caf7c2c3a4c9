"""`variable_scope` and `get_variable`: variables named by scope and shared on request (TF1).

    with sg.variable_scope("layer1"):
        w = sg.get_variable("w", [3, 4])            # the variable "layer1/w"
    with sg.variable_scope("layer1", reuse=True):
        assert sg.get_variable("w") is w            # shared, not created again

Rules, as in TF1:
- Each graph keeps a store of the variables made by `get_variable`, by full name.
- Without reuse, asking for a name that exists is an error naming the variable and where it
  was first created; with `reuse=True`, asking for one that does not exist is an error;
  with `reuse=AUTO_REUSE`, the variable is created the first time and shared afterwards.
- Reuse is inherited: inside a reusing scope, every inner scope reuses.
- Entering a variable scope also opens a name scope for the ops made inside it. Entering the
  same scope twice gives the same variable names but fresh op names (`layer1_1/MatMul`).
- The initializer is the one given, else the scope's, else Glorot uniform for floats and
  zeros for integers and booleans.
"""

from __future__ import annotations

import contextlib

from . import dtypes as _dt
from .errors import format_location
from .graph import GraphKeys, get_default_graph
from .shapes import as_shape

AUTO_REUSE = "AUTO_REUSE"


class VariableScope:
    """A scope's settings: its name and the defaults `get_variable` uses inside it."""

    def __init__(self, name="", reuse=False, initializer=None, regularizer=None, dtype=None,
                 original_name_scope=""):
        self.name = name
        self.reuse = reuse
        self.initializer = initializer
        self.regularizer = regularizer
        self.dtype = dtype
        self.original_name_scope = original_name_scope

    def reuse_variables(self) -> None:
        """From now on, `get_variable` in this scope returns existing variables."""
        self.reuse = True

    def set_initializer(self, initializer) -> None:
        self.initializer = initializer

    def set_regularizer(self, regularizer) -> None:
        self.regularizer = regularizer

    def get_variable(self, name, shape=None, dtype=None, initializer=None, **kw):
        with variable_scope(self):
            return get_variable(name, shape, dtype, initializer, **kw)

    def __repr__(self):
        return f"<sg.VariableScope {self.name!r} reuse={self.reuse}>"


class _Store:
    """Per graph: the variables made by get_variable and how often each scope name was used."""

    def __init__(self):
        self.variables = {}
        self.scope_counts = {}


def _store(graph) -> _Store:
    store = getattr(graph, "_variable_store", None)
    if store is None:
        store = graph._variable_store = _Store()
    return store


def get_variable_scope() -> VariableScope:
    """The current variable scope of the default graph (the root scope has name "")."""
    g = get_default_graph()
    scope = g._thread.var_scope
    if scope is None:
        scope = g._thread.var_scope = VariableScope()
    return scope


@contextlib.contextmanager
def variable_scope(name_or_scope=None, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None,
                   custom_getter=None, reuse=None, dtype=None, use_resource=None,
                   constraint=None, auxiliary_name_scope=True):
    """Open a variable scope (and a name scope); yields the `VariableScope`.

    `name_or_scope` is a name, or a `VariableScope` to re-enter (its name scope too). With no
    name, `default_name` is made unique (`dense`, `dense_1`, ...), as layers do.
    """
    if name_or_scope is None and default_name is None:
        raise TypeError("variable_scope needs a name_or_scope or a default_name")
    if reuse not in (None, True, False, AUTO_REUSE):
        raise ValueError(f"reuse must be None, True, False or AUTO_REUSE, got {reuse!r}")
    reuse = reuse or None  # False means "inherit", as in TF1: reuse cannot be switched off
    g = get_default_graph()
    for v in values or ():
        if hasattr(v, "graph"):
            g = v.graph
            break
    with contextlib.ExitStack() as stack:
        stack.enter_context(g.as_default())
        parent = g._thread.var_scope or VariableScope()
        counts = _store(g.variable_home).scope_counts  # (one count for a loop body and outside)
        if isinstance(name_or_scope, VariableScope):
            full_name = name_or_scope.name
            name_scope_arg = name_or_scope.original_name_scope or None
            template, inherited = name_or_scope, name_or_scope.reuse
        else:
            if name_or_scope is None:
                full_name = _unique_scope_name(counts, _join(parent.name, default_name))
            else:
                full_name = _join(parent.name, str(name_or_scope))
            name_scope_arg = str(name_or_scope or full_name.rsplit("/", 1)[-1])
            template, inherited = parent, parent.reuse
        counts[full_name] = counts.get(full_name, 0) + 1
        saved_counts = dict(counts)
        if auxiliary_name_scope:
            ns = stack.enter_context(g.name_scope(name_scope_arg))
        else:
            ns = g.get_name_scope() + "/" if g.get_name_scope() else ""
        scope = VariableScope(
            full_name, reuse or inherited,
            initializer if initializer is not None else template.initializer,
            regularizer if regularizer is not None else template.regularizer,
            _dt.as_dtype(dtype) if dtype is not None else template.dtype,
            ns)
        old = g._thread.var_scope
        g._thread.var_scope = scope
        try:
            yield scope
        finally:
            g._thread.var_scope = old
            # TF1: leaving a scope forgets its inner default names, so entering it again
            # names its layers dense, dense_1... again (and AUTO_REUSE finds them);
            # leaving a re-entered scope object restores the counts from before.
            if isinstance(name_or_scope, VariableScope):
                counts.clear()
                counts.update(saved_counts)
            else:
                for key in [k for k in counts if k.startswith(full_name + "/")]:
                    counts[key] = 0


def _unique_scope_name(counts: dict, name: str) -> str:
    """`name`, or `name_1`, `name_2`... : the first not yet used in this scope."""
    if counts.get(name, 0) == 0:
        return name
    i = 1
    while counts.get(f"{name}_{i}", 0) > 0:
        i += 1
    return f"{name}_{i}"


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """The variable `<scope>/<name>`: created, or shared when the scope reuses (see module doc).

    `initializer` may be an initializer (called with the shape and dtype), or a tensor or value
    (then `shape` must be left out).
    """
    from .variables import Variable
    if not isinstance(name, str) or not name:
        raise ValueError(f"get_variable needs a non-empty name, got {name!r}")
    g = get_default_graph().variable_home  # (out of a loop or branch being built)
    scope = get_variable_scope()
    full_name = _join(scope.name, name)
    store = _store(g)
    existing = store.variables.get(full_name)
    shape = as_shape(shape, what=f"get_variable {full_name!r}") if shape is not None else None
    if existing is not None:
        if scope.reuse is False or scope.reuse is None:
            raise ValueError(
                f"Variable {full_name} already exists, disallowed. Did you mean to set "
                f"reuse=True or reuse=AUTO_REUSE in variable_scope? It was created at "
                f"{format_location(existing.op.location)}")
        if shape is not None and not shape.is_compatible_with(existing.shape):
            raise ValueError(f"Trying to share variable {full_name}, but specified shape {shape}"
                             f" and found shape {existing.shape} (created at "
                             f"{format_location(existing.op.location)})")
        if dtype is not None and _dt.as_dtype(dtype) is not existing.dtype:
            raise ValueError(f"Trying to share variable {full_name}, but specified dtype "
                             f"{_dt.as_dtype(dtype).name} and found dtype {existing.dtype.name} "
                             f"(created at {format_location(existing.op.location)})")
        return existing
    if scope.reuse is True:
        raise ValueError(f"Variable {full_name} does not exist, or was not created with "
                         "get_variable(). Did you mean to set reuse=AUTO_REUSE in "
                         "variable_scope?")
    dtype = _dt.as_dtype(dtype or scope.dtype or _dt.float32)
    initializer = initializer if initializer is not None else scope.initializer
    if initializer is None:
        from . import initializers
        initializer = (initializers.glorot_uniform_initializer() if dtype.is_floating
                       else initializers.zeros_initializer())
    if isinstance(initializer, type):  # TF1 takes the class too: initializer=zeros_initializer
        initializer = initializer()
    if callable(initializer):
        if shape is None or not shape.is_fully_defined():
            raise ValueError(f"get_variable {full_name}: the shape must be fully known to "
                             f"create the variable, got {shape}")
        dims = [int(d) for d in shape.dims]
        value = lambda: initializer(dims, dtype=dtype)
        init_dtype = None  # the initializer makes the dtype asked for (or says why not)
    else:
        if shape is not None:
            raise ValueError(f"get_variable {full_name}: if the initializer is a value or "
                             "tensor, leave out the shape (it is the value's shape)")
        value, init_dtype = initializer, dtype
    if trainable is None:
        trainable = True
    # The variable's op is named `full_name`, at the root of the name scopes; if another op
    # already has that name (say an sg.Variable named "w"), the graph makes it unique ("w_1")
    # while the store still knows the variable as `full_name`, as in TF1.
    with g.name_scope(None):
        var = Variable(value, trainable=trainable, collections=collections,
                       validate_shape=validate_shape, name=full_name, dtype=init_dtype)
    store.variables[full_name] = var
    regularizer = regularizer if regularizer is not None else scope.regularizer
    if regularizer is not None:
        with g.as_default(), g.name_scope(full_name + "/Regularizer/"):
            loss = regularizer(var)
        if loss is not None:
            g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return var
