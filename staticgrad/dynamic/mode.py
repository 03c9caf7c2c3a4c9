"""The dynamic mode's state: the eager context that ops dispatch to, and per thread whether
ops are recorded for gradients (PyTorch's `no_grad`, `enable_grad`, `set_grad_enabled`) and
the tracer (while `trace` runs a function).

>>> with no_grad():               # doctest: +SKIP
...     w -= lr * w.grad          # an update that is not recorded
"""

from __future__ import annotations

import contextlib
import functools
import threading

from ..graph import Graph, _default


class _State(threading.local):
    def __init__(self):
        self.grad_enabled = True
        self.tracer = None  # a trace.Tracer while `trace` runs a function


STATE = _State()


def is_grad_enabled() -> bool:
    """Whether ops on tensors that require grad are recorded (False inside `no_grad()`)."""
    return STATE.grad_enabled


class _GradMode:
    """A context manager setting grad mode for its block; also a decorator (with or without
    parentheses), as in PyTorch."""

    enabled = True

    def __new__(cls, fn=None):
        self = super().__new__(cls)
        return self if fn is None else self(fn)

    def __enter__(self):
        self._previous = STATE.grad_enabled
        STATE.grad_enabled = self.enabled

    def __exit__(self, *exc):
        STATE.grad_enabled = self._previous

    def __call__(self, fn):
        cls = type(self)

        @functools.wraps(fn)
        def run(*args, **kwargs):
            with cls():
                return fn(*args, **kwargs)
        return run


class no_grad(_GradMode):  # noqa: N801 - PyTorch's name
    """Within the block, ops record nothing: results do not require grad, no graph is kept.

    >>> with no_grad():               # doctest: +SKIP
    ...     y = x * 2                 # y.requires_grad is False
    """

    enabled = False


class enable_grad(_GradMode):  # noqa: N801 - PyTorch's name
    """Within the block, ops are recorded again (e.g. inside a `no_grad()` block)."""

    enabled = True


class set_grad_enabled:  # noqa: N801 - PyTorch's name
    """Turn recording on or off: at once when called, and back when used as a context manager
    or decorator leaves its block.

    >>> set_grad_enabled(False)       # doctest: +SKIP
    >>> with set_grad_enabled(is_training): ...   # doctest: +SKIP
    """

    def __init__(self, mode: bool):
        self._previous = STATE.grad_enabled
        self.enabled = bool(mode)
        STATE.grad_enabled = self.enabled

    def __enter__(self):
        STATE.grad_enabled = self.enabled

    def __exit__(self, *exc):
        STATE.grad_enabled = self._previous

    def __call__(self, fn):
        STATE.grad_enabled = self._previous  # as a decorator it acts only around calls
        enabled = self.enabled

        @functools.wraps(fn)
        def run(*args, **kwargs):
            with set_grad_enabled(enabled):
                return fn(*args, **kwargs)
        return run


# -- anomaly detection ---------------------------------------------------------------------------
# On (PyTorch's torch.autograd.detect_anomaly, global as PyTorch's is): each node records the
# user's line that made it, which the errors of a backward through it name (a freed graph, a
# NaN gradient), and (unless check_nan=False) backward raises at the first rule that returns
# NaN. Off, recording costs no walk over the caller's frames.
ANOMALY = [False, True]  # on?, and then: check for NaN?


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on (`detect_anomaly`, `set_detect_anomaly`)."""
    return ANOMALY[0]


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection, when on, raises at a rule that returns NaN."""
    return ANOMALY[1]


class set_detect_anomaly:  # noqa: N801 - PyTorch's name
    """Turn anomaly detection on or off: at once when called, and back when used as a
    context manager leaves its block.

    >>> dy.autograd.set_detect_anomaly(True)       # doctest: +SKIP
    """

    def __init__(self, mode: bool, check_nan: bool = True):
        self._previous = list(ANOMALY)
        ANOMALY[:] = [bool(mode), bool(check_nan)]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        ANOMALY[:] = self._previous


class detect_anomaly:  # noqa: N801 - PyTorch's name
    """Within the block (or around calls of a function it decorates), anomaly detection is
    on: errors of backward name the line of the user's program that recorded the op at fault,
    and a rule that returns NaN raises at once.

    >>> with dy.autograd.detect_anomaly():         # doctest: +SKIP
    ...     loss = model(x).sum()
    ...     loss.backward()
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = bool(check_nan)
        self._previous = None

    def __enter__(self):
        self._previous = list(ANOMALY)
        ANOMALY[:] = [True, self.check_nan]
        return self

    def __exit__(self, *exc):
        ANOMALY[:] = self._previous

    def __call__(self, fn):
        check_nan = self.check_nan

        @functools.wraps(fn)
        def run(*args, **kwargs):
            with detect_anomaly(check_nan):
                return fn(*args, **kwargs)
        return run


# -- the eager context ---------------------------------------------------------------------------
class EagerGraph(Graph):
    """The "graph" of every dynamic tensor. Creating an op on it (`ops.creation.create_operation`
    checks `graph.eager`) runs the op at once (`dispatch.run_operation`): the same shape rule
    and kernel as in a graph, on NumPy values. It keeps no nodes, names or collections.
    """

    eager = True

    def run_operation(self, op_type, inputs, attrs, name=None):
        return dispatch.run_operation(op_type, inputs, attrs)

    @contextlib.contextmanager
    def name_scope(self, name):
        yield ""

    def unique_name(self, name, mark_as_used=True):
        return name

    def add_to_collection(self, name, value):
        pass

    def __repr__(self):
        return "<staticgrad.dynamic eager context>"


EAGER = EagerGraph()


def eager_mode():
    """Within the block, graph-API calls that make tensors from Python values (`sg.constant`,
    `sg.zeros`, a list of labels...) make dynamic tensors, so graph-API functions run eagerly
    on dynamic tensors; gradient rules run this way on the tape.

    >>> with dy.eager_mode():                                   # doctest: +SKIP
    ...     loss = sg.nn.sparse_softmax_cross_entropy_with_logits(labels=[2, 0], logits=x)
    """
    return EAGER.as_default()


def in_eager_mode(fn, *args, **kwargs):
    """fn(*args, **kwargs) with the eager context as the default graph (cheaper than a `with`)."""
    stack = _default.stack
    stack.append(EAGER)
    try:
        return fn(*args, **kwargs)
    finally:
        stack.pop()


from . import dispatch  # noqa: E402 - needs EAGER and STATE, defined above
