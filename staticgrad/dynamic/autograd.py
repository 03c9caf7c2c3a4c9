"""Reverse mode over the tape (PyTorch's `torch.autograd`): `backward`, `grad`, `Function`.

The walk (`_walk`) is the graph side's `gradients` replayed on recorded nodes:
1. seed each root's node with its gradient (ones for a scalar);
2. visit the nodes reachable from the roots, latest first (creation order is topological);
   sum each output's incoming gradients once, run the hooks registered on that output's
   tensor, and apply the op's gradient rule through `autodiff.backward_step` -- the same
   rule, the same checks and the same summing-away of broadcasting as `sg.gradients` (`_step`
   takes a rule's gradients as they are without asking backward_step where each has its
   input's exact shape and dtype);
3. hand each input's gradient to the node that made it, or to the leaf's `AccumulateGrad`;
4. run the leaves' hooks and add their gradients into `.grad` (or return them, for `grad`).

Rules run in the eager context, so they compute at once; with grad mode on only when
`create_graph=True`, in which case they are recorded too and their results can be
differentiated again. Without `retain_graph=True` each node frees what it kept once it has run.

>>> loss.backward()                                         # doctest: +SKIP
>>> dx, = dy.autograd.grad(y, x, create_graph=True)         # doctest: +SKIP
"""

from __future__ import annotations

import operator

import numpy as np

from .. import _namespace
from ..autodiff import _checked, _is_own, _sum, backward_step
from ..graph import _default
from ..ops.creation import run_rule
from . import tape
from .dispatch import run_operation
from .mode import (
    ANOMALY,
    EAGER,
    STATE,
    detect_anomaly,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from .tensor import NO_NODE, Tensor

# dy.autograd, as torch.autograd: the walk's helpers and imports are not part of it
__all__ = ["Function", "FunctionCtx", "Variable", "backward", "detect_anomaly", "grad", "no_grad",
           "set_detect_anomaly", "set_grad_enabled"]
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.dynamic.autograd", "torch.autograd", globals())


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Add the gradient of `tensors` (weighted by `grad_tensors`) into the `.grad` of every
    leaf that requires grad (only of `inputs`, if given).

    >>> dy.autograd.backward(loss)                # loss.backward()   # doctest: +SKIP
    """
    roots = _as_tuple(tensors)
    seeds = _seeds(roots, grad_tensors)
    retain_graph = create_graph if retain_graph is None else retain_graph
    if inputs is None:
        _walk(roots, seeds, retain_graph, create_graph)
        return
    inputs = _as_tuple(inputs)
    for t, g in zip(inputs, _walk(roots, seeds, retain_graph, create_graph, inputs)):
        if g is not None:
            _accumulate(t, g, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False, materialize_grads=False):
    """The gradients of `outputs` (weighted by `grad_outputs`) with respect to each of
    `inputs`, as a tuple; nothing is added into any `.grad`. An input that the outputs do not
    depend on is an error, or None with `allow_unused=True` (zeros with
    `materialize_grads=True`).

    >>> dz_dy, = dy.autograd.grad(z, y)            # doctest: +SKIP
    """
    roots = _as_tuple(outputs)
    targets = _as_tuple(inputs)
    for t in targets:
        if not isinstance(t, Tensor):
            raise TypeError(f"inputs must be dynamic tensors, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    seeds = _seeds(roots, grad_outputs)
    retain_graph = create_graph if retain_graph is None else retain_graph
    found = _walk(roots, seeds, retain_graph, create_graph, targets)
    result = []
    for t, g in zip(targets, found):
        if g is None:
            if not (allow_unused or materialize_grads):
                raise RuntimeError("One of the differentiated Tensors appears to not have been "
                                   "used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
            if materialize_grads:
                g = Tensor._make(np.zeros_like(t._data), t.dtype)
        result.append(g)
    return tuple(result)


def _as_tuple(values) -> tuple:
    return tuple(values) if isinstance(values, list | tuple) else (values,)


def _seeds(roots, grads) -> list:
    """The gradient each root starts with: ones for a scalar root given None."""
    if grads is None:
        grads = [None] * len(roots)
    elif not isinstance(grads, list | tuple) or (len(roots) == 1 and len(grads) != 1):
        grads = [grads]
    if len(grads) != len(roots):
        raise RuntimeError(f"got {len(roots)} tensors and {len(grads)} gradients")
    seeds = []
    for i, (t, g) in enumerate(zip(roots, grads)):
        if not isinstance(t, Tensor):
            raise TypeError(f"can only differentiate dynamic tensors, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        if g is None:
            if t._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            ones = np.empty(t._data.shape, t.dtype.np)
            ones.fill(1)  # (np.ones's Python wrapper costs more than the two calls)
            g = Tensor._make(ones, t.dtype)
        else:
            if not isinstance(g, Tensor):
                g = Tensor._make(np.asarray(g, dtype=t.dtype.np), t.dtype)
            elif g.dtype is not t.dtype:
                g = Tensor._make(g._data.astype(t.dtype.np), t.dtype)
            if g.shape != t.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{g.shape} and output[{i}] has a shape of {t.shape}.")
        seeds.append(g)
    return seeds


def _edge_of(t: Tensor) -> tuple:
    return (tape.accumulator(t), 0) if t.op is NO_NODE else (t.op, t.value_index)


def _add(pending: dict, key: tuple, g) -> None:
    """Note gradient g for `key`, a (node or AccumulateGrad, output index)."""
    parts = pending.get(key)
    if parts is None:
        pending[key] = [g]
    else:
        parts.append(g)


def _walk(roots, seeds, retain_graph, create_graph, targets=None) -> list | None:
    """The reverse pass (see the module docstring). With `targets`, return the gradient of
    each target instead of accumulating into leaves."""
    if STATE.tracer is not None:
        raise RuntimeError("dy.trace records a forward computation: call backward() or grad() "
                           "outside the traced function, or take sg.gradients of the traced "
                           "graph's outputs")
    pending = {}  # (node or AccumulateGrad, output index) -> the gradients that reach it
    for t, g in zip(roots, seeds):
        _add(pending, _edge_of(t), g)
    nodes = _reachable([fn for fn, _ in pending if isinstance(fn, tape.Node)])
    found = capture = needed = None
    if targets is not None:
        found = [None] * len(targets)
        capture = {}  # node or AccumulateGrad -> [(output index, position in targets)]
        for pos, t in enumerate(targets):
            fn = t.op if t.op is not NO_NODE else (t._acc() if t._acc is not None else None)
            if fn is not None:
                capture.setdefault(fn, []).append((t.value_index, pos))
        needed = _needed(nodes, capture)
    state = STATE
    grad_was = state.grad_enabled
    state.grad_enabled = bool(create_graph)  # (set_grad_enabled's work, without its calls)
    _default.stack.append(EAGER)  # rules make dynamic tensors, constants included
    try:
        for node in nodes:
            n_out = len(node._out)
            if n_out == 1:
                parts = pending.pop((node, 0), None)
                if parts is None:
                    continue
                grads = [_sum(parts)]
            else:
                grads = [_sum(pending.pop((node, i), None)) for i in range(n_out)]
                if all(g is None for g in grads):
                    continue
            if node._hooks is not None or node._retained is not None:
                grads = _output_hooks(node, grads, retain=targets is None,
                                      create_graph=create_graph)
            if targets is not None:
                for index, pos in capture.get(node, ()):
                    found[pos] = grads[index]
                if node not in needed:
                    continue
            if node._checks != []:  # (a node that keeps nothing has nothing to check)
                node.check_saved()
            in_grads = _step(node, grads, node.wanted)
            if ANOMALY[0] and ANOMALY[1] and in_grads:
                _check_nan(node, in_grads)
            if not retain_graph and (node._checks or node._ctx is not None):
                node.release()
            if in_grads is None:
                continue
            for edge, g in zip(node.next_functions, in_grads):
                if g is not None and edge[0] is not None:
                    parts = pending.get(edge)  # (_add's work, without its call)
                    if parts is None:
                        pending[edge] = [g]
                    else:
                        parts.append(g)
        for (fn, _), parts in pending.items():
            if type(fn) is not tape.AccumulateGrad:
                continue
            if targets is not None and fn not in capture:
                continue  # grad(z, a): the hooks of leaves not asked for do not run
            leaf = fn.variable
            g = _sum(parts)
            if leaf._hooks:
                g = _run_hooks(leaf._hooks, g)
            if targets is None:
                _accumulate(leaf, g, create_graph)
            for _, pos in capture.get(fn, ()) if capture else ():
                found[pos] = g
    finally:
        _default.stack.pop()
        state.grad_enabled = grad_was
    return found


def _step(node, grads: list, wanted: list) -> list | None:
    """`autodiff.backward_step(node, grads, wanted=wanted)`, with less to decide per node.

    A node of one output whose rule is staticgrad's own and not overridden (nearly every
    node) runs its rule as backward_step would, and the result is taken as it is where each
    gradient has exactly its input's shape and dtype (`_exact`), as `_checked` would take it;
    otherwise, and for every other node, backward_step's own path decides.
    """
    opdef, attrs = node.opdef, node.attrs
    rule = opdef.grad
    if len(grads) != 1 or rule is None or not opdef.differentiable or \
            (attrs and "_gradient_op_type" in attrs) or not _is_own(opdef, rule):
        return backward_step(node, grads, wanted=wanted)
    in_grads = run_rule(rule, node, grads, wanted)
    return _exact(node._in, in_grads, wanted) or _checked(node, in_grads, wanted)


def _exact(kept: list, in_grads: list, wanted: list) -> list | None:
    """`in_grads` as `autodiff._checked` returns them, if each one wanted is a dynamic tensor
    with exactly its input's shape and dtype (what node._in kept of the input: the tensor or
    its (shape, dtype)): then nothing is broadcast and nothing is wrong. Else None, leaving
    the summing and the errors to _checked. The check reads no stand-in (`node.inputs`)."""
    if len(in_grads) != len(kept):
        return None
    for i, g in enumerate(in_grads):
        if g is None:
            continue
        if not wanted[i]:
            in_grads[i] = None
            continue
        x = kept[i]
        shape, dtype = x if type(x) is tuple else (x._data.shape, x.dtype)
        if not dtype.is_floating:
            in_grads[i] = None  # (as _checked drops it)
        elif type(g) is not Tensor or g.dtype is not dtype or g._data.shape != shape:
            return None
    return in_grads


def _check_nan(node, in_grads) -> None:
    """Anomaly mode's check: raise if the node's rule returned NaN (PyTorch's message)."""
    for i, g in enumerate(in_grads):
        if isinstance(g, Tensor) and g.dtype.is_floating and np.isnan(g._data).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               f"output (the {node.type} op{node.made()})")


def _reachable(starts: list) -> list:
    """The nodes reachable from `starts` through next_functions, latest first."""
    seen, stack = set(starts), list(starts)
    while stack:
        for fn, _ in stack.pop().next_functions:
            # (an edge leads to a node, an AccumulateGrad, or nowhere: None)
            if fn is not None and fn not in seen and type(fn) is not tape.AccumulateGrad:
                seen.add(fn)
                stack.append(fn)
    return sorted(seen, key=_SEQ, reverse=True)


_SEQ = operator.attrgetter("seq")


def _needed(nodes: list, targets: dict) -> set:
    """The nodes whose rule must run for some target to get its gradient."""
    needed = set()
    for node in reversed(nodes):  # oldest first: the producers of a node's inputs come first
        for fn, _ in node.next_functions:
            if fn is not None and (fn in targets or fn in needed):
                needed.add(node)
                break
    return needed


def _run_hooks(hooks, g):
    """Call each hook on the gradient g; a hook's non-None result replaces it."""
    for hook in list(hooks.values()) if hooks else ():
        new = hook(g)
        if new is not None:
            if not isinstance(new, Tensor) or new.shape != g.shape or new.dtype is not g.dtype:
                raise RuntimeError(f"hook {getattr(hook, '__name__', hook)!r} returned "
                                   f"{new!r}: a hook may only return None or a gradient of the "
                                   f"same shape {g.shape} and dtype {g.dtype.name}")
            g = new
    return g


def _output_hooks(node, grads, retain: bool, create_graph: bool) -> list:
    if node._hooks:
        for index, hooks in node._hooks.items():
            if grads[index] is not None:
                grads[index] = _run_hooks(hooks, grads[index])
    if retain and node._retained:
        for index, ref in node._retained.items():
            t = ref()
            if t is not None and grads[index] is not None:
                _accumulate(t, grads[index], create_graph)
    return grads


def _accumulate(t: Tensor, g: Tensor, create_graph: bool = False) -> None:
    """Add g into t.grad: a copy the first time, then in place (PyTorch's AccumulateGrad).
    With create_graph, out of place and recorded, so that t.grad can be differentiated."""
    old = t._grad
    if create_graph:
        t._grad = g if old is None else old + g
    elif old is None:
        t._grad = Tensor._make(np.array(g._data, copy=True), g.dtype)
    elif old._requires_grad or not old._data.flags.writeable:
        t._grad = Tensor._make(old._data + g._data, g.dtype)
    else:
        np.add(old._data, g._data, out=old._data)
        old._version[0] += 1


# -- custom functions ---------------------------------------------------------------------------
class FunctionCtx:
    """The `ctx` of a custom Function: what forward leaves for backward."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self._saved = ()
        self._saved_versions = ()
        self._non_differentiable = set()
        self._freed = None  # once backward freed the saved tensors: the node's error

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors for backward (checked there for in-place changes)."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save tensors (or None), got "
                                f"{type(t).__name__}")
        self._saved = tensors
        self._saved_versions = tuple(None if t is None else t._version[0] for t in tensors)

    def free(self, error: RuntimeError) -> None:
        """Drop the saved tensors (a backward without retain_graph ran): reading them again
        raises `error`, as PyTorch's ctx does."""
        if self._saved:
            self._saved, self._freed = (), error

    @property
    def saved_tensors(self) -> tuple:
        if self._freed is not None:
            raise self._freed
        for t, version in zip(self._saved, self._saved_versions):
            if t is not None and t._version[0] != version:
                raise RuntimeError("one of the variables needed for gradient computation has "
                                   "been modified by an inplace operation: a tensor saved with "
                                   f"save_for_backward is at version {t._version[0]}; expected "
                                   f"version {version} instead")
        return tuple(self._saved)

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable.update(id(t) for t in tensors)


class Function:
    """A differentiable function with a hand-written backward (PyTorch's autograd.Function).

    >>> class MultiplyAdd(dy.autograd.Function):                     # doctest: +SKIP
    ...     @staticmethod
    ...     def forward(ctx, w, x, b):
    ...         ctx.save_for_backward(w, x)
    ...         return w * x + b
    ...     @staticmethod
    ...     def backward(ctx, grad_output):
    ...         w, x = ctx.saved_tensors
    ...         return grad_output * x, grad_output * w, grad_output
    >>> z = MultiplyAdd.apply(w, x, b)                                 # doctest: +SKIP

    `apply` runs forward without recording, then records one node (named after the class:
    `MultiplyAddBackward`) whose rule calls `backward`. It is the graph side's
    `CustomGradient` op, so its gradient flows through the same machinery.
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must define a static forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must define a static backward(ctx, ...)")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx(tuple(isinstance(a, Tensor) and a._requires_grad for a in args))
        with no_grad():
            result = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(result, tuple)
        outs = (result,) if single else tuple(result)
        for o in outs:
            if not isinstance(o, Tensor):
                raise TypeError(f"{cls.__name__}.forward must return dynamic tensors, got "
                                f"{type(o).__name__}")
        if not (STATE.grad_enabled and any(ctx.needs_input_grad)):
            return result
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]

        def grad_fn(*grads):
            got = cls.backward(ctx, *grads)
            got = tuple(got) if isinstance(got, tuple | list) else (got,)
            if len(got) != len(args):
                raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect "
                                   f"number of gradients (expected {len(args)}, got {len(got)})")
            return [got[i] for i in positions]

        attrs = {"n_out": len(outs), "grad_fn": grad_fn, "variables": [],
                 "function": cls.__name__}
        new = run_operation("CustomGradient", [args[i] for i in positions] + list(outs),
                            attrs).outputs
        node = new[0].op
        node.next_functions = node.next_functions[:len(positions)]  # not forward's results
        node._ctx = ctx
        for o, n in zip(outs, new):
            if id(o) in ctx._non_differentiable:
                n.op, n.value_index, n._requires_grad = NO_NODE, 0, False
        return new[0] if single else new


def Variable(data, requires_grad=False):  # noqa: N802 - PyTorch's (deprecated) name
    """`torch.autograd.Variable` of old code: a leaf tensor sharing `data`'s values."""
    from .creation import tensor
    t = data.detach() if isinstance(data, Tensor) else tensor(data)
    return t.requires_grad_(requires_grad)
