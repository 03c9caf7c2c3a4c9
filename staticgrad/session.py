"""`Session`: holds variable values, compiles what `run` needs once per feed signature, and
runs the compiled NumPy code.

    sess.run(fetches, feed_dict)
      key = (fetches, fed tensors, their shapes and dtypes)
      hit  -> call the compiled function                                   (fast path)
      miss -> prune, specialize, render, exec (`compiler.compile_plan`), cache

>>> with Session() as sess:                     # doctest: +SKIP
...     sess.run(y, feed_dict={x: [[1.0, 2.0]]})
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import weakref

import numpy as np

from . import compiler, runtime
from . import dtypes as _dt
from .backends import BackendUnavailableError, get_backend
from .compiler import CompileOptions, Plan, compile_plan
from .config import check_config, check_run_arguments, place
from .errors import (
    CancelledError,
    FailedPreconditionError,
    InvalidArgumentError,
    OpError,
    ResourceExhaustedError,
    format_location,
    user_location,
)
from .graph import (
    Graph,
    Operation,
    Tensor,
    _interactive,
    _sessions,
    get_default_graph,
)
from .ops.indexed_slices import IndexedSlices, IndexedSlicesValue
from .passes.prune import prune
from .variables import Variable

log = logging.getLogger("staticgrad.session")


# (the default-session stacks live with the graph, as in TF1's framework/ops.py: a tensor's
# eval() finds its session there without importing this module)


class FeedKeyError(TypeError, ValueError):
    """A feed_dict key that names no tensor of the graph: TF1's TypeError ('Cannot interpret
    feed_dict key as Tensor'), and a ValueError as staticgrad raised before."""


# -- fetch structures -----------------------------------------------------------------------------
def _flatten(fetches, graph, out: list):
    """Append the leaves of a fetch structure to `out`; return a function rebuilding it."""
    if isinstance(fetches, Tensor | Operation | Variable | str):
        i = len(out)
        out.append(_resolve_fetch(fetches, graph))
        return lambda vals: vals[i]
    if isinstance(fetches, dict):
        keys = list(fetches)
        parts = [_flatten(fetches[k], graph, out) for k in keys]
        kind = type(fetches)
        return lambda vals: kind(zip(keys, (p(vals) for p in parts)))
    if isinstance(fetches, tuple) and hasattr(fetches, "_fields"):
        parts = [_flatten(v, graph, out) for v in fetches]
        kind = type(fetches)
        return lambda vals: kind(*(p(vals) for p in parts))
    if isinstance(fetches, list | tuple):
        parts = [_flatten(v, graph, out) for v in fetches]
        kind = type(fetches)
        return lambda vals: kind(p(vals) for p in parts)
    if isinstance(fetches, IndexedSlices):  # (TF1's IndexedSlicesValue of three arrays)
        parts = [_flatten(t, graph, out) for t in (fetches.values, fetches.indices)]
        shape = None if fetches.dense_shape is None else _flatten(fetches.dense_shape, graph,
                                                                   out)
        return lambda vals: IndexedSlicesValue(parts[0](vals), parts[1](vals),
                                               None if shape is None else shape(vals))
    if fetches is None:
        raise TypeError("fetch argument None is not a tensor, an operation or a name")
    raise TypeError(f"fetch argument {fetches!r} of type {type(fetches).__name__} is not a "
                    "tensor, an operation, a name, or a list/tuple/dict of those")


def _resolve_fetch(item, graph):
    if isinstance(item, Variable):
        item = item._tensor
    if isinstance(item, str):
        try:
            return graph.as_graph_element(item)
        except (KeyError, ValueError) as e:
            raise ValueError(f"fetch {item!r} does not name a tensor or an operation in the "
                             f"session's graph: {e}") from None
    if item.graph is not graph:
        op = item.op if isinstance(item, Tensor) else item
        raise ValueError(f"fetch {item.name} ({op.where()}) is from another graph than the "
                         "session's")
    return item


class _Compiled:
    __slots__ = ("plan", "fn")

    def __init__(self, plan: Plan):
        self.plan = plan
        self.fn = plan.fn


class Session:
    """Runs parts of a graph. Variable values live here; two sessions are independent.

    As a context manager it is the default session (for `tensor.eval()`, `op.run()`) and
    makes its graph the default graph. Several threads may run one session at once. As in
    TF1 (`use_locking=False`), a run that reads a variable while another thread's run
    updates it may see the update half done: a large variable's update is written into its
    array (backends/numpy/memory.py).

    `close()` (or leaving the `with` block) frees the variables and compiled code; after it
    every use (`run`, callables from `make_callable`, `source`, `plan`, `Variable.load`)
    raises TF1's `RuntimeError: Attempted to use a closed Session.`, and a run still in
    progress on another thread either finishes or raises `CancelledError`.
    """

    def __init__(self, target: str = "", graph: Graph | None = None, config=None,
                 backend: str = "numpy", options: CompileOptions | None = None):
        self._backend = get_backend(backend)  # ValueError/BackendUnavailableError: why
        self._config = check_config(config)
        if options is not None and not isinstance(options, CompileOptions):
            raise TypeError(f"options must be an sg.CompileOptions, got {options!r}")
        self.graph = graph if graph is not None else get_default_graph()
        self.backend = self._backend.name
        self.options = options or compiler.DEFAULT_OPTIONS
        self._vars = self._backend.new_variable_store()  # V of the generated code
        self._rngs: dict[str, np.random.Generator] = {}
        self._locks: dict[str, threading.Lock] = {}  # use_locking updates' variable locks
        self._cache: dict = {}
        self._structures: dict = {}
        self._last_feeds: dict = {}  # fetches -> feeds of the latest compile (for the log)
        self._compile_lock = threading.Lock()  # over compiling, caching and closing
        # make_callable's caches (by a number: they are dicts, equal when both empty), which
        # close() empties: a callable kept after close then holds no compiled code
        self._callable_plans = weakref.WeakValueDictionary()
        self._callable_numbers = itertools.count()
        self._closed = False
        self._created_at = user_location()
        self._closed_at = None

    # -- context management ---------------------------------------------------------------------
    # What `with` entered is kept per thread, not on the session: threads may each enter
    # one session, and a thread may enter it again inside its own block.
    def __enter__(self):
        context = self.graph.as_default()
        context.__enter__()
        _sessions.entered.append((self, context))
        _sessions.stack.append(self)
        return self

    def __exit__(self, *exc):
        entered = _sessions.entered
        i = _last_index(entered, lambda item: item[0] is self)
        if i is None:
            raise RuntimeError(f"leaving a `with` block of {self!r} that this thread did not "
                               "enter")
        _, context = entered.pop(i)
        _remove_last(_sessions.stack, self)
        context.__exit__(*exc)
        self.close()

    def as_default(self):
        """A context in which this is the default session (of this thread); it does not
        close the session."""
        import contextlib

        @contextlib.contextmanager
        def ctx():
            _sessions.stack.append(self)
            try:
                yield self
            finally:
                _remove_last(_sessions.stack, self)
        return ctx()

    def close(self) -> None:
        """Free the session's variables and compiled code; later uses raise RuntimeError.
        Closing again does nothing. A run in progress on another thread finishes, or raises
        CancelledError at its next read of a variable."""
        with self._compile_lock:  # after a compile in progress, which would cache its plan
            if self._closed:
                return
            self._closed_at = user_location()  # first: who sees _closed sees where
            self._closed = True
            self._cache.clear()
            self._structures.clear()
            self._last_feeds.clear()
            for plans in list(self._callable_plans.values()):
                plans.clear()
            # emptied, not replaced: the generated code holds these very dicts as V and R
            self._vars.clear()
            self._rngs.clear()
            self._backend.release()  # (a GPU backend's memory its pool still holds)

    @property
    def closed(self) -> bool:
        """Whether `close()` has been called."""
        return self._closed

    def _closed_error(self, what: str) -> RuntimeError:
        return RuntimeError(
            f"Attempted to use a closed Session. ({what}; the session was created at "
            f"{format_location(self._created_at)} and closed at "
            f"{format_location(self._closed_at)})")

    def _check_open(self, what: str) -> None:
        """RuntimeError (TF1's) naming `what` was called, if the session is closed."""
        if self._closed:
            raise self._closed_error(what)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (f"<sg.{type(self).__name__} ({state}) created at "
                f"{format_location(self._created_at)}>")

    @property
    def sess_str(self) -> str:
        return ""

    # -- running --------------------------------------------------------------------------------
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Compute `fetches` (a tensor, op, name, or nested list/tuple/dict/namedtuple of them)
        given `feed_dict` ({tensor or name: value}); results come back in the same structure.

        The cache key is (fetches, then each fed tensor with its value's shape and dtype).
        `options` (an sg.RunOptions) and `run_metadata` (an sg.RunMetadata) are checked and
        take no trace (config.py).
        """
        if self._closed:
            raise self._closed_error(f"run({_describe(fetches)})")
        if options is not None or run_metadata is not None:
            check_run_arguments(options, run_metadata)
        if type(fetches) is Tensor:
            key, rebuild = [fetches], None
        else:
            leaves, rebuild = self._structure(fetches)
            key = [leaves]
        feeds, arrays = [], []
        if feed_dict:
            for k, v in feed_dict.items():
                t = k if type(k) is Tensor else self._feed_tensor(k)
                if type(v) is not np.ndarray or v.dtype is not t.dtype.np:
                    v = _feed_array(t, v)
                feeds.append(t)
                arrays.append(v)
                key += (t, v.shape, v.dtype)
        key = tuple(key)
        compiled = self._cache.get(key)
        if compiled is None:
            fetch_list = (fetches,) if rebuild is None else key[0]
            compiled = self._compile(fetch_list, feeds, arrays, key)
        try:
            results = compiled.fn(*arrays)
        except Exception as e:  # noqa: BLE001 - re-raised naming the node at fault
            raise self._run_error(compiled, e) from e
        return results[0] if rebuild is None else rebuild(results)

    def _structure(self, fetches):
        """(leaves, rebuild) for a fetch structure, cached by its hashable key if it has one."""
        try:
            skey = _structure_key(fetches)
        except TypeError:
            skey = None
        structure = self._structures.get(skey) if skey is not None else None
        if structure is None:
            leaves = []
            rebuild = _flatten(fetches, self.graph, leaves)
            structure = (tuple(leaves), rebuild)
            if skey is not None:
                self._structures[skey] = structure
        return structure

    def _run_error(self, compiled: _Compiled, e: Exception) -> Exception:
        """The error to raise for an exception from generated code: an uninitialized variable
        (a missing `V[name]`) or a failing node, named with where the user created it."""
        if isinstance(e, OpError | BackendUnavailableError):
            return e
        plan = compiled.plan
        if self._closed and isinstance(e, KeyError):  # V or R emptied under a run
            return CancelledError(None, None, "Session has been closed (at "
                                              f"{format_location(self._closed_at)}) while a run "
                                              f"of {', '.join(f.name for f in plan.fetches)} "
                                              "was in progress")
        if isinstance(e, KeyError) and e.args and e.args[0] in plan.var_reads:
            return self._uninitialized(plan)
        op = plan.failing_op(e)
        if op is not None and op.opdef.checks_input is not None:
            checked = op.inputs[op.opdef.checks_input]  # what made the bad values, not the check
            return InvalidArgumentError(None, checked.op, f"{e}; tensor {checked.name} was made "
                                                          f"by {checked.op.where()} (checked by "
                                                          f"{op.name!r})")
        where = op.where() if op is not None else "the generated code"
        if isinstance(e, MemoryError):  # (CuPy's OutOfMemoryError is one)
            return ResourceExhaustedError(None, op, f"{where} ran out of memory on the "
                                                    f"{self.backend} backend: {e}")
        if isinstance(e, runtime.AssertionFailed):  # an Assert op: its own words
            return InvalidArgumentError(None, op, f"{e} ({where})")
        return InvalidArgumentError(None, op, f"{where} failed at run time: "
                                              f"{type(e).__name__}: {e}")

    def _uninitialized(self, plan: Plan) -> FailedPreconditionError:
        missing = [v for v in plan.var_reads if v not in self._vars]
        op = self.graph.get_operation_by_name(missing[0])
        fetch_names = ", ".join(f.name for f in plan.fetches)
        also = f" (also uninitialized: {', '.join(missing[1:])})" if len(missing) > 1 else ""
        return FailedPreconditionError(
            None, op, f"attempting to use uninitialized value {missing[0]} (variable created "
                      f"at {format_location(op.location)}), needed by fetch {fetch_names}; run "
                      f"its initializer or sg.global_variables_initializer() first{also}")

    def _feed_tensor(self, key) -> Tensor:
        if isinstance(key, Tensor):
            if key.graph is not self.graph:
                raise ValueError(f"cannot feed {key.name} (made by {key.op.where()}): it is "
                                 "from another graph than the session's")
            return key
        if isinstance(key, Variable):
            return key._tensor
        if isinstance(key, str):
            try:
                el = self.graph.as_graph_element(key, allow_operation=False)
            except (KeyError, ValueError, TypeError) as e:
                raise FeedKeyError(f"Cannot interpret feed_dict key as Tensor: cannot feed "
                                   f"{key!r}: {e}") from None
            return el
        raise TypeError(f"feed_dict keys must be tensors or tensor names, got {key!r}")

    def _compile(self, fetch_list, feeds, arrays, key, options=None) -> _Compiled:
        """Compile (under the lock), kept in the cache under `key` unless that is None."""
        return self._compile_at(fetch_list, feeds,
                                [(a.shape, _dt.as_dtype(a.dtype)) for a in arrays], key, options)

    def _plan_at(self, fetches, feeds: list[Tensor], signature: list[tuple],
                 options: CompileOptions | None = None, backend=None) -> Plan:
        """A plan (not kept) for `fetches` compiled at the feed `signature`, a (shape, dtype)
        per feed where a shape may leave dimensions unknown (None): the generated code then
        reads those sizes from its arrays. A session's own runs always compile at their
        arrays' shapes; sg.export compiles at the shapes a module is to accept, for the
        backend it exports to (`backend`: the session's own if None; the plan is not run)."""
        self._check_open(f"plan({_describe(fetches)})")
        leaves = []
        _flatten(fetches, self.graph, leaves)
        return self._compile_at(tuple(leaves), list(feeds), signature, None, options,
                                backend).plan

    def _compile_at(self, fetch_list, feeds, signature, key, options=None,
                    backend=None) -> _Compiled:
        with self._compile_lock:
            if self._closed:
                raise self._closed_error(f"compiling {', '.join(f.name for f in fetch_list)}")
            compiled = self._cache.get(key) if key is not None else None
            if compiled is not None:
                return compiled
            for f in fetch_list:
                _resolve_fetch(f, self.graph)
            for t, (shape, _) in zip(feeds, signature):
                if t.graph is not self.graph:
                    raise ValueError(f"cannot feed {t.name} (made by {t.op.where()}): it is "
                                     "from another graph than the session's")
                if not t.shape.is_compatible_with(shape):
                    raise InvalidArgumentError(
                        None, t.op, f"cannot feed a value of shape {tuple(shape)} for {t.name}, "
                                    f"which has shape {t.shape} ({t.op.where()})")
            if key is not None:
                reason = self._recompile_reason(fetch_list, feeds, signature)
                log.debug("compiling %s: %s", [f.name for f in fetch_list], reason)
            backend = backend or self._backend
            if self.graph._devices_used or self._config.log_device_placement:
                place(prune(fetch_list, set(feeds)), backend.device_types, self._config)
            plan = compile_plan(list(fetch_list), list(feeds), list(signature), self._vars,
                                self._rngs, options=options or self.options,
                                locks=self._locks, backend=backend)
            if backend is self._backend:  # (another's plan is only read: sg.export)
                self._make_generators(plan)
            compiled = _Compiled(plan)
            if key is not None:
                self._cache[key] = compiled
            return compiled

    def _recompile_reason(self, fetch_list, feeds, signature) -> str:
        new = [(t.name, tuple(shape), dtype.name) for t, (shape, dtype) in zip(feeds, signature)]
        old = self._last_feeds.get(fetch_list)
        self._last_feeds[fetch_list] = new
        if old is None:
            return "first run of these fetches"
        return f"feeds changed from {old} to {new}"

    def _make_generators(self, plan: Plan) -> None:
        for op in plan.random_ops:
            if op.name not in self._rngs:
                self._rngs[op.name] = self._backend.new_generator(generator_seed(op.attrs["seed"]))

    # -- extras ---------------------------------------------------------------------------------
    def make_callable(self, fetches, feed_list=None, accept_options=False,
                      fetch_device: bool = False, cuda_graph: bool = False):
        """A function of the values of `feed_list` (in order) returning `fetches`: the fast
        path, with no feed dict to walk and the fetch structure resolved once. Closing the
        session frees what it compiled; calling it then raises RuntimeError.

        With `fetch_device`, a GPU backend's fetches stay in the GPU's memory: the callable
        returns CuPy arrays, copying nothing to the host (on the NumPy backend, whose memory
        is the host's, it changes nothing). Feeds may be CuPy arrays already, then taken as
        they are.

        With `cuda_graph` (the cuda backend's), a feed signature's first call runs as usual
        and captures the run as a CUDA graph; each later call copies its feeds into the
        graph's buffers and replays it (backends/cuda/graphs.py): one launch for all of the
        kernels, for small graphs whose time goes to launching them. UnimplementedError,
        naming the op, where the plan holds work a graph cannot: host ops, random draws, a
        value read back (an index check, a result's size), and with CuPy 14 a matmul (its
        cuBLAS wrappers refuse a capturing stream).

            f = sess.make_callable([y, dy_dx], [x], cuda_graph=True)
            f(xb)  # run, then captured
            f(xb)  # replayed"""
        self._check_open(f"make_callable({_describe(fetches)})")
        if cuda_graph and not self._backend.captures_graphs:
            raise ValueError(f"cuda_graph=True needs a backend that captures CUDA graphs (the "
                             f"cuda backend); this session's is {self._backend.name}")
        leaves = []
        rebuild = _flatten(fetches, self.graph, leaves)
        fetch_list = tuple(leaves)
        fetch_key = _fetch_key(fetches, fetch_list)
        feeds = tuple(self._feed_tensor(k) for k in (feed_list or ()))
        np_dtypes = tuple(t.dtype.np for t in feeds)
        single = isinstance(fetches, Tensor | Operation | Variable | str)
        # converted feeds have fixed dtypes, so their shapes are the signature
        by_shapes = _Plans()
        with self._compile_lock:
            self._callable_plans[next(self._callable_numbers)] = by_shapes
        what = f"a callable made by make_callable({_describe(fetches)})"
        on_device = fetch_device or cuda_graph  # (a graph's fetches stay in its buffers)
        options = dataclasses.replace(self.options, fetch_device=True) if on_device else None

        def lookup(arrays, shapes):
            compiled = by_shapes.get(shapes)
            if compiled is None:
                key = _cache_key(fetch_key, feeds, arrays)
                if on_device:
                    key = ("fetch_device", key)
                compiled = self._cache.get(key) or self._compile(fetch_list, feeds, arrays, key,
                                                                 options)
                if cuda_graph:
                    compiled = self._captured(compiled, fetch_device)
                with self._compile_lock:  # not kept if close() came meanwhile
                    if not self._closed:
                        # (another thread's, if it came first: one graph a signature, whose
                        # runner serializes the calls; two would capture at once)
                        compiled = by_shapes.setdefault(shapes, compiled)
            return compiled

        def finish(compiled, arrays):
            try:
                results = compiled.fn(*arrays)
            except Exception as e:  # noqa: BLE001
                raise self._run_error(compiled, e) from e
            return results[0] if single else rebuild(results)

        if len(feeds) == 1:  # the common case, without loops
            (feed,), (np_dtype,) = feeds, np_dtypes

            def call_one(value):
                if self._closed:
                    raise self._closed_error(what)
                if type(value) is not np.ndarray or value.dtype is not np_dtype:
                    value = _feed_array(feed, value)
                compiled = by_shapes.get(value.shape) or lookup([value], value.shape)
                try:
                    results = compiled.fn(value)
                except Exception as e:  # noqa: BLE001
                    raise self._run_error(compiled, e) from e
                return results[0] if single else rebuild(results)
            return call_one

        def call(*values):
            if self._closed:
                raise self._closed_error(what)
            if len(values) != len(feeds):
                raise TypeError(f"this callable takes {len(feeds)} feeds "
                                f"({', '.join(t.name for t in feeds)}), got {len(values)}")
            arrays, shapes = list(values), []
            for i, np_dtype in enumerate(np_dtypes):
                v = arrays[i]
                if type(v) is not np.ndarray or v.dtype is not np_dtype:
                    v = arrays[i] = _feed_array(feeds[i], v)
                shapes.append(v.shape)
            return finish(lookup(arrays, tuple(shapes)), arrays)
        return call

    def _captured(self, compiled: _Compiled, fetch_device: bool) -> _Compiled:
        """`compiled` with its function run as a CUDA graph (make_callable's cuda_graph)."""
        plan = compiled.plan
        locks = [self._locks[name] for name in plan.locks]
        graphed = _Compiled(plan)
        graphed.fn = self._backend.captured(plan, self._vars, locks, fetch_device)
        return graphed

    def source(self, fetches, feed_dict=None) -> str:
        """The generated NumPy source that `run(fetches, feed_dict)` executes."""
        self._check_open(f"source({_describe(fetches)})")
        return self.plan(fetches, feed_dict).source

    def plan(self, fetches, feed_dict=None, options: CompileOptions | None = None) -> Plan:
        """The compiled plan (function, source, schedule) for these fetches and feeds; with
        `options` other than the session's, a plan compiled with those, not kept (export
        compiles with vector_math=False: an exported module needs nothing but NumPy)."""
        self._check_open(f"plan({_describe(fetches)})")
        leaves = []
        _flatten(fetches, self.graph, leaves)
        feeds, arrays = [], []
        for k, v in (feed_dict or {}).items():
            t = self._feed_tensor(k)
            feeds.append(t)
            arrays.append(_feed_array(t, v))
        fetch_list = tuple(leaves)
        if options is not None and options != self.options:
            return self._compile(fetch_list, feeds, arrays, None, options).plan
        key = _cache_key(_fetch_key(fetches, fetch_list), feeds, arrays)
        compiled = self._cache.get(key) or self._compile(fetch_list, feeds, arrays, key)
        return compiled.plan

    # -- variable values ------------------------------------------------------------------------
    # Wherever the backend keeps them (`self._vars`, the generated code's V), values come out
    # and go in as NumPy arrays, copied: the Saver, sg.export and ONNX export use these.
    def variable_names(self) -> list[str]:
        """The names of the variables that have a value in this session (those initialized,
        loaded or restored), in the order they got it."""
        self._check_open("variable_names()")
        return list(self._vars)

    def read_variable(self, var) -> np.ndarray:
        """A copy of the value of `var` (a Variable, or its name) in this session.
        FailedPreconditionError if it has none yet."""
        name, tensor = self._variable(var, "read_variable")
        if name not in self._vars:
            raise FailedPreconditionError(
                None, tensor.op, f"attempting to use uninitialized value {name} (variable "
                                 f"created at {format_location(tensor.op.location)}); run its "
                                 "initializer or sg.global_variables_initializer() first")
        return self._backend.read_value(self._vars, name)

    def write_variable(self, var, value) -> None:
        """Set the value of `var` (a Variable, or its name) in this session to a copy of
        `value`, which must fit the variable's shape and convert to its dtype without loss
        (as `Variable.load`)."""
        name, tensor = self._variable(var, "write_variable")
        arr = _feed_array(tensor, value)
        if not tensor.shape.is_compatible_with(arr.shape):
            raise ValueError(f"cannot load a value of shape {arr.shape} into variable "
                             f"{tensor.name} of shape {tensor.shape} (created at "
                             f"{format_location(tensor.op.location)})")
        # a copy: the variable's array is the session's alone (updates write into it)
        self._backend.write_value(self._vars, name, arr)

    def _variable(self, var, what: str) -> tuple[str, Tensor]:
        """(name, value tensor) of a Variable of this session's graph, or of one named."""
        if isinstance(var, Variable):
            self._check_open(f"{what}({var.name})")
            if var.graph is not self.graph:
                raise ValueError(f"variable {var.name} ({var.op.where()}) is from another graph "
                                 "than the session's")
            return var._var_name, var._tensor
        self._check_open(f"{what}({var!r})")
        if not isinstance(var, str):
            raise TypeError(f"{what} takes a Variable or a variable's name, got "
                            f"{type(var).__name__}")
        name = var[:-2] if var.endswith(":0") else var
        try:
            op = self.graph.get_operation_by_name(name)
        except (KeyError, ValueError):
            op = None
        if op is None or not op.opdef.reads_state:
            raise ValueError(f"{what}: the session's graph has no variable named {var!r}")
        return op.name, op.outputs[0]

    def _set_variable(self, var: Variable, value) -> None:  # (Variable.load)
        self._check_open(f"loading a value into variable {var.name}")
        self.write_variable(var, value)

    def list_devices(self):
        self._check_open("list_devices()")
        return ["/cpu:0"]


class InteractiveSession(Session):
    """A session that makes itself the default on creation (for shells and notebooks)."""

    def __init__(self, target: str = "", graph: Graph | None = None, config=None,
                 backend: str = "numpy", options: CompileOptions | None = None):
        super().__init__(target, graph, config, backend, options)
        _interactive.append(self)

    def close(self) -> None:
        super().close()
        if self in _interactive:
            _interactive.remove(self)


def generator_seed(seed) -> list[int] | None:
    """What seeds a random op's NumPy generator, from its (graph seed, op seed) attribute: None
    (fresh entropy) when neither is set. The session and the modules `export` writes both seed
    from here, so they draw the same numbers.

    Seeds may be negative, as in TF1, and NumPy takes none: each part is taken modulo 2**64,
    its 64 bits read as unsigned (so -1 and 2**64 - 1 are one seed), which leaves every
    non-negative seed as it was.

    >>> generator_seed((-3, None))
    [18446744073709551613, 0]
    """
    graph_seed, op_seed = seed
    if graph_seed is None and op_seed is None:
        return None
    return [(87654321 if graph_seed is None else graph_seed) % 2**64, (op_seed or 0) % 2**64]


def _last_index(items: list, test):
    return next((i for i in range(len(items) - 1, -1, -1) if test(items[i])), None)


def _remove_last(items: list, item) -> None:
    """Remove the innermost (last) entry that is `item` itself."""
    i = _last_index(items, lambda x: x is item)
    if i is not None:
        del items[i]


class _Plans(dict):
    """A make_callable's compiled plans by feed shapes (a dict that a weakref can hold)."""

    __slots__ = ("__weakref__",)


def _describe(fetches, most: int = 3) -> str:
    """The names of (the first few of) `fetches`, for messages."""
    names = []

    def walk(item):
        if len(names) > most:
            return
        if isinstance(item, str):
            names.append(repr(item))
        elif isinstance(item, Tensor | Operation | Variable):
            names.append(item.name)
        elif isinstance(item, dict):
            for v in item.values():
                walk(v)
        elif isinstance(item, list | tuple):
            for v in item:
                walk(v)
        else:
            names.append(type(item).__name__)
    walk(fetches)
    shown = ", ".join(names[:most]) + (", ..." if len(names) > most else "")
    return shown if isinstance(fetches, Tensor | Operation | Variable | str) else f"[{shown}]"


def _fetch_key(fetches, leaves: tuple):
    """How `run` keys its cache on fetches: a lone tensor by itself, anything else by the
    tuple of its leaves (so run, source and make_callable share compiled plans)."""
    return fetches if type(fetches) is Tensor else leaves


def _cache_key(fetch_key, feeds, arrays) -> tuple:
    """(fetches, then each fed tensor with its value's shape and dtype): as `run` builds it."""
    return (fetch_key,) + tuple(x for t, a in zip(feeds, arrays) for x in (t, a.shape, a.dtype))


def _structure_key(fetches):
    """A hashable key for a fetch structure made of graph elements (TypeError if none)."""
    if type(fetches) is list:
        for f in fetches:  # most often a flat list of tensors: the key without recursion
            if type(f) is not Tensor:
                break
        else:
            return ("L", *fetches)
    if isinstance(fetches, list):
        return ("L",) + tuple(_structure_key(f) for f in fetches)
    if isinstance(fetches, tuple):
        return (type(fetches),) + tuple(_structure_key(f) for f in fetches)
    if isinstance(fetches, dict):
        return (type(fetches),) + tuple((k, _structure_key(v)) for k, v in fetches.items())
    hash(fetches)
    return fetches


def _feed_array(t: Tensor, value) -> np.ndarray:
    """`value` as an array of t's dtype, or InvalidArgumentError naming t."""
    if isinstance(value, Tensor | Variable):
        raise TypeError(f"the value fed for {t.name} is a tensor ({value.name}); feed "
                        "NumPy arrays, lists or numbers")
    if hasattr(value, "__cuda_array_interface__"):  # an array on the GPU (CuPy's): the CUDA
        if value.dtype == t.dtype.np:               # backend takes it as it is
            return value
        if not _dt.can_cast_value(value, t.dtype):
            raise InvalidArgumentError(
                None, t.op, f"cannot feed a GPU array of dtype {value.dtype} for {t.name}, "
                            f"which has dtype {t.dtype.name}, without losing information "
                            f"({t.op.where()})")
        return value.astype(t.dtype.np)
    if t.dtype.is_string:
        try:
            return _dt.string_array(value)
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(None, t.op, f"cannot feed {value!r:.60} for {t.name}, "
                                                   f"which has dtype string: {e} "
                                                   f"({t.op.where()})") from None
    try:
        arr = np.asarray(value)
    except ValueError as e:  # e.g. a ragged nested list
        raise InvalidArgumentError(None, t.op, f"cannot feed {value!r} for {t.name}: it is not "
                                               f"a rectangular array ({e}) ({t.op.where()})"
                                   ) from None
    if arr.dtype == t.dtype.np:
        return arr
    if arr.dtype == object or not _dt.can_cast_value(arr, t.dtype):
        raise InvalidArgumentError(
            None, t.op, f"cannot feed a value of dtype {arr.dtype} for {t.name}, which has "
                        f"dtype {t.dtype.name}, without losing information ({t.op.where()})")
    return arr.astype(t.dtype.np)
