"""The gradient of a Scan (scan_op.py), and what the forward loop keeps for it.

The gradient of a Scan is another Scan, over the rows in the opposite order. Its body takes
one step's carried values (the forward Scan's history), its rows of elems and the gradients
arriving from the later steps; it gives the gradients of the carried values (carried back to
the earlier steps), of the elems' rows (stacked), and of the captured tensors (summed over
the steps). Being a Scan itself, it has a gradient too: second derivatives work.

That body needs the forward body's values at each step (an LSTM's gates). Made from a copy
of the forward body, it would compute them again: for an LSTM, a matrix product a step more
than a hand-written backward pass. So the body is built once whole (`trace_step`), then
split (`_kept`): its ops that depend only on the step's carried values and rows of elems
(and on the tensors the forward body captures) move to a forward loop, which gives what the
rest of the body reads of them, stacked over the steps (the *kept* values); the gradient's
Scan reads them as rows of elems, and computes only the gradient.

That forward loop is a second Scan with the same inputs as the user's, whose body (a Branch
that `extends` the user's: scan_build.scan_op) gives the same results, then the kept ones.
When a run needs both, the compiler runs the second in place of the first
(passes/scans.py): the loop runs once, keeping what its gradient reads, as a hand-written
backward pass does. Run alone (a graph file drops `extends`; or a pass is switched off),
each is right, only slower. A later gradient through the same loop (a second
sg.gradients, a second derivative) reads what the first one's loop keeps (`Branch.kept`)
when that is all it needs.

Memory: the kept values take (steps x their size), as TF1's while_loop gradients and JAX's
scan keep theirs; a body with a large intermediate that is cheap to compute keeps it all
the same (recomputing would trade that memory for time, which this does not offer).
"""

from __future__ import annotations

from ..autodiff import dense_gradients as gradients
from ..graph import Operation, Tensor, get_default_graph
from ..ops.array_ops import zeros_like
from ..ops.conversion import constant
from .branches import copy_branch, copy_ops, encloses, needed_ops
from .scan_build import Step, _split, scan_op, trace_step


def scan_grad(op: Operation, *grads):
    """The gradient of the Scan `op` (see the module's docstring). The gradient of the
    history (read by a gradient's own gradient) joins each step's carried values'
    gradient."""
    attrs, body = op.attrs, op.attrs["body"]
    c = attrs["carries"]
    inits, elems, captured = _split(attrs, list(op.inputs))
    n_ys = len(body.outputs) - c
    finals, ys, history = op.outputs[:c], op.outputs[c:c + n_ys], op.outputs[c + n_ys:]
    d_finals, d_ys, d_history = grads[:c], grads[c:c + n_ys], grads[c + n_ys:]
    diff_carries = [i for i in range(c) if inits[i].dtype.is_floating]
    diff_ys = [j for j in range(n_ys) if ys[j].dtype.is_floating and d_ys[j] is not None]
    wanted_elems = [k for k, e in enumerate(elems) if e.dtype.is_floating]
    wanted_caps = [k for k, t in enumerate(captured) if t.dtype.is_floating]
    if all(grads[i] is None for i in diff_carries) and \
            all(d_ys[j] is None for j in diff_ys) and \
            all(d_history[i] is None for i in diff_carries):
        return [None] * len(op.inputs)
    seeds = [d_finals[i] if d_finals[i] is not None else zeros_like(finals[i])
             for i in diff_carries]
    dys = [d_ys[j] for j in diff_ys]  # (outputs nobody reads: no gradient to carry back)
    with_history = any(d_history[i] is not None for i in diff_carries)
    dhs = [d_history[i] if d_history[i] is not None else zeros_like(history[i])
           for i in diff_carries] if with_history else []
    zeros = [zeros_like(captured[k]) for k in wanted_caps]
    n_c, n_e, n_dy = len(diff_carries), len(wanted_elems), len(diff_ys)
    copied: dict[Tensor, Tensor] = {}  # a tensor of the forward body -> its copy in the step

    def step(carried, rows):
        d_carry, d_caps = carried[:n_c], carried[n_c:]
        c_t, e_t = rows[:c], rows[c:c + len(elems)]
        dy_t, dh_t = rows[c + len(elems):c + len(elems) + n_dy], rows[c + len(elems) + n_dy:]
        g = get_default_graph()
        caps = [g.capture(t) for t in captured]
        again = copy_branch(body, [*c_t, *e_t, *caps], mapping=copied)
        targets = [again[i] for i in diff_carries] + [again[c + j] for j in diff_ys]
        xs = [c_t[i] for i in diff_carries] + [e_t[k] for k in wanted_elems] + \
            [caps[k] for k in wanted_caps]
        ds = gradients(targets, xs, grad_ys=[*d_carry, *dy_t])
        ds = [d if d is not None else zeros_like(x) for d, x in zip(ds, xs)]
        d_c = [d + h for d, h in zip(ds[:n_c], dh_t)] if dh_t else ds[:n_c]
        return ([*d_c, *[a + b for a, b in zip(d_caps, ds[n_c + n_e:])]], ds[n_c:n_c + n_e])

    where = f"the gradient of the {body.graph.where}"
    carried, rows = [*seeds, *zeros], [*history, *elems, *dys, *dhs]
    traced = trace_step(step, carried, rows, where)
    kept, frozen = _kept(traced, c + len(elems), [traced.graph.capture(t) for t in captured])
    if kept:
        stacked = _keeping_forward(op, traced, kept, copied)
        traced, rows = _reading_kept(traced, kept, frozen, carried, [*rows, *stacked])
    out = scan_op(traced, carried, rows, not attrs["reverse"], "ScanGrad")
    d_inits, d_caps = out[:n_c], out[n_c:n_c + len(wanted_caps)]
    d_elems = out[n_c + len(wanted_caps):n_c + len(wanted_caps) + n_e]
    full = [None] * len(op.inputs)
    for i, d in zip(diff_carries, d_inits):
        full[i] = d
    for k, d in zip(wanted_elems, d_elems):
        full[c + k] = d
    for k, d in zip(wanted_caps, d_caps):
        full[c + len(elems) + k] = d
    return full


def _kept(step: Step, n_forward: int, invariant: list[Tensor]) -> tuple[list, list]:
    """The tensors of the gradient's step that the forward loop can give it: made by ops
    that read (through pure ops) the step's first `n_forward` rows (the forward Scan's
    history and elems) and otherwise only what does not change from step to step (the
    forward body's captures, constants), and read by the rest of the step. And the
    tensors known before running (a Shape of a row) that read them: the same at every step,
    the gradient's step takes them as constants."""
    known = set(step.rows[:n_forward]) | set(invariant)
    varying = set(step.rows[:n_forward])
    moved: set[Operation] = set()
    frozen: list[Tensor] = []
    ops = step.graph.get_operations()
    for op in ops:
        if op.type == "Placeholder" or op.opdef.stateful or op.control_inputs:
            continue
        if op.inputs and all(t._static is not None for t in op.outputs):
            known.update(op.outputs)  # (the same at every step)
            if any(t in varying for t in op.inputs):
                frozen += op.outputs
            continue
        if not all(t in known for t in op.inputs):
            continue
        known.update(op.outputs)
        if any(t in varying for t in op.inputs):
            varying.update(op.outputs)
            moved.add(op)
    frozen_ops = {t.op for t in frozen}
    readers = [t for op in ops if op not in moved and op not in frozen_ops for t in op.inputs]
    found = [t for t in [*readers, *step.nexts, *step.ys] if t.op in moved]
    return list(dict.fromkeys(found)), frozen


def _keeping_forward(op: Operation, traced: Step, kept: list[Tensor],
                     copied: dict) -> list[Tensor]:
    """The `kept` tensors of the gradient's step `traced`, each stacked over the steps by a
    forward Scan that extends `op` (the module's docstring)."""
    attrs, body = op.attrs, op.attrs["body"]
    c = attrs["carries"]
    inits, elems, captured = _split(attrs, list(op.inputs))
    n = len(elems)
    grad_graph = traced.graph

    def step(carried, rows):
        caps = [get_default_graph().capture(t) for t in captured]
        here: dict[Tensor, Tensor] = {}  # a tensor of the forward body -> its copy here
        outs = copy_branch(body, [*carried, *rows, *caps], mapping=here)
        mapping = {mine: here[theirs] for theirs, mine in copied.items()}
        mapping.update(zip(traced.rows[:c + n], [*carried, *rows]))
        mapping.update((grad_graph.capture(t), cap) for t, cap in zip(captured, caps))
        return outs[:c], [*outs[c:], *copy_ops(grad_graph, mapping, kept)]

    # what an earlier gradient's loop keeps already (a second sg.gradients through the loop,
    # a second derivative), read from it rather than kept again by a loop of its own
    theirs = {mine: theirs for theirs, mine in copied.items()}
    wanted = [theirs.get(t) for t in kept]
    here = get_default_graph()
    if all(w in body.kept and encloses(here, body.kept[w].graph) for w in wanted):
        return [body.kept[w] for w in wanted]
    forward = trace_step(step, inits, elems, body.graph.where)
    out = scan_op(forward, inits, elems, attrs["reverse"], "ScanForward", extends=body)
    out[0].op.location = op.location  # (it is the user's loop, keeping more)
    first = len(body.outputs)
    stacked = out[first:first + len(kept)]
    for w, t in zip(wanted, stacked):
        if w is not None:
            body.kept.setdefault(w, t)
    return stacked


def _reading_kept(traced: Step, kept: list[Tensor], frozen: list[Tensor],
                  carried: list[Tensor], rows: list[Tensor]) -> tuple[Step, list[Tensor]]:
    """The gradient's step `traced` built again without what the forward loop keeps for it,
    reading the `kept` tensors from rows of elems after its own (`rows`: the tensors it
    scans over, then the kept ones stacked); and the rows it reads (those it no longer
    reads, such as a forward input only the gradient's recomputation read, are left out).
    The `frozen` tensors (known before running) become constants."""
    grad_graph = traced.graph
    n_rows = len(traced.rows)
    needed = needed_ops(grad_graph, [*traced.nexts, *traced.ys], {*kept, *frozen})
    read = [i for i, t in enumerate(traced.rows) if t.op in needed] + \
        list(range(n_rows, len(rows)))
    placeholders = [*traced.rows, *kept]

    def step(carried_here, rows_here):
        here = get_default_graph()
        mapping = dict(zip(traced.carried, carried_here))
        mapping.update(zip([placeholders[i] for i in read], rows_here))
        mapping.update((ph, here.capture(t)) for t, ph in grad_graph.captures.items())
        mapping.update((t, constant(t._static, t.dtype)) for t in frozen)
        outs = copy_ops(grad_graph, mapping, [*traced.nexts, *traced.ys])
        return outs[:len(carried_here)], outs[len(carried_here):]

    names = [f"elem_{i}" if i < n_rows else f"kept_{kept[i - n_rows].op.name.split('/')[-1]}"
             for i in read]  # (a kept value named after the op of the forward body giving it)
    rows = [rows[i] for i in read]
    return trace_step(step, carried, rows, traced.graph.where, names), rows
