"""Render a plan for the CUDA backend: a Python host module whose run() launches generated
CUDA kernels and CuPy calls, with the kernels' CUDA C source inside it.

    CUDA_SOURCE = r\"\"\"                            <- every kernel of the plan, one
    // fused: 23 elementwise ops ...                  translation unit for NVRTC
    extern "C" __global__ void fused_1(...) { ... }
    \"\"\"
    fused_1 = crt.kernel(CUDA_SOURCE, "fused_1")    <- compiled once (cached by its hash)

    def run(x):
        # Transfer numpy -> cuda of Placeholder 'x' at model.py:3
        x_to_cuda = crt.to_device(x)
        Tanh = cp.empty((1000000,), dtype=cp.float32)
        fused_1((2048,), (256,), (x_to_cuda, Tanh, Sum_parts))
        ...

It is the NumPy backend's walk (backends/numpy/render.py), whose node and group hooks it
takes over for what runs on the GPU (the partition pass says which nodes those are):

- an elementwise node, or a fused group of them: a generated kernel (elementwise.py);
- any other op the device runs: its reference kernel's NumPy text on CuPy (`np.` becomes
  `cp.`, `rt.` the CUDA runtime's library `crt.`: library.py), CuPy mirroring NumPy's API;
  matmul goes to cuBLAS that way;
- a Transfer: `crt.to_device(x)` / `crt.to_host(x)`, the copies between the memories;
- a constant a device op reads: a module global on the GPU, copied there once, at load;
- a variable's update (AssignAdd, AssignSub) that the memory plan writes in place: into the
  variable's own array, and, where the elementwise kernel of its delta is read by the update
  alone (an optimizer's `lr * g`), by one kernel computing the delta and applying it, the
  delta never written to memory (`V['w'] = crt.updated(update_w, ...)`).

What runs on the host (host-only ops: strings, summaries, Print, py_func) is the NumPy
backend's own code, in the same run().
"""

from __future__ import annotations

import numpy as np

from ...codegen.c_expr import preamble
from ...codegen.templates import render_template
from ...codegen.walk import comment, node_comment, printable
from ...ir import Node, Program, Value, variable_of
from ...passes.liveness import liveness
from ...passes.rewrite import assigns_variables, reads_variable
from ..numpy.render import RESERVED, _NumpyWalk
from . import library
from .elementwise import element_function, kernel_ok, render_elementwise, render_update
from .templates import REDUCTIONS, has_template, template_plan

CUDA_RESERVED = RESERVED | {"cp", "crt", "CUDA_SOURCE"}
HOST_WORK = "it runs on the host (NumPy), outside the GPU's stream"


def render(program: Program, place, device: str, title: str = "", fetch_on: str | None = None):
    """The Rendered host module of `program`; `place(node)` names the backend running a
    node, `device` is this backend's name (the nodes it runs); `fetch_on` is `device` where
    the fetches stay in its memory (make_callable's fetch_device)."""
    walk = _CudaWalk(program, False, place=place, device=device)
    walk.fetch_on_device = fetch_on == device
    return walk.render(title)


_UPDATE_OPS = ("AssignAdd", "AssignSub")


def _aliases(v: Value, var: str) -> bool:
    """May the input v of a kernel that writes variable `var`'s array be that array (whose
    pointers the kernel declares `__restrict__`, apart)? Yes for a read of `var` or the
    result of an assignment to it (Assign, an earlier update in place), maybe for a view of
    any variable's array (a transpose, a slice) or what a region gives back; a read or
    assignment of another variable is not (no write to it comes before the kernel has run)."""
    producer = v.producer
    if producer is None:
        return False
    if variable_of(producer) is not None:
        return variable_of(producer) == var
    return bool(producer.regions) or (producer.opdef.view and any(
        _may_be_a_variable(u) for u in producer.runtime_inputs()))


def _may_be_a_variable(v: Value, depth: int = 0) -> bool:
    """May v be (part of) a variable's array: a read of one or an assignment's result, or a
    view of such a value (or what a region gives back), as far as 32 views back (further:
    assumed so)?"""
    producer = v.producer
    if producer is None:
        return False
    if variable_of(producer) is not None or producer.regions or depth > 32:
        return True
    return producer.opdef.view and any(_may_be_a_variable(u, depth + 1)
                                       for u in producer.runtime_inputs())


class _CudaWalk(_NumpyWalk):
    reserved = CUDA_RESERVED
    backend = "CUDA"
    template = "cuda/module.py.j2"
    one_blas_thread_ops = frozenset()  # (its products are cuBLAS's)

    def __init__(self, program: Program, vector_math: bool, module: _CudaWalk | None = None,
                 params: list[str] | None = None, place=None, device: str = "cuda"):
        super().__init__(program, vector_math, module=module, params=params)
        if module is not None:
            place, device = module.place, module.device
            self.cu, self.kernel_names, self.device_globals, self.device_expr = \
                module.cu, module.kernel_names, module.device_globals, module.device_expr
            self.host_constants = module.host_constants
            self.uncapturable = module.uncapturable
        else:
            self.cu = []               # the kernels' C texts, in order
            self.kernel_names = []     # the __global__ functions they define
            self.device_globals = []   # (name, host constant's name) copied to the GPU at load
            self.device_expr = {}      # id(constant Value) -> its name on the GPU
            self.host_constants = {}   # id(constant Value) -> its name on the host (never in
            #                            `expr`, which a device op would read it from too)
            self.uncapturable = []     # (op, why) of what a CUDA graph cannot hold
        self.folded = {}       # id(reduction) -> its input's function, arrays, their C types
        self.updates = {}      # id(update) -> the node computing its delta, in its kernel
        self._positions = None  # id(node) -> its place in the program (`_after`)
        self.place, self.device = place, device
        self.fetch_on_device = False  # its fetches stay on the GPU (render() says)

    def on_device(self, node: Node) -> bool:
        return self.place(node.members[0] if node.members else node) == self.device

    # -- values ----------------------------------------------------------------------------
    def ref(self, v: Value, consumer: Node | None) -> str:
        if v.const is None or consumer is None or not self.on_device(consumer):
            return super().ref(v, consumer)
        known = self.device_expr.get(id(v))
        if known is not None:
            return known
        text = super().ref(v, consumer)  # a literal, or the constant's host global
        if text not in self.constants:
            return text  # a Python number: CuPy takes it as NumPy does
        return self.on_gpu(v, text)

    def on_gpu(self, v: Value, host_name: str) -> str:
        """The GPU copy of the constant v (whose host global is `host_name`), made when the
        module loads: its name."""
        known = self.device_expr.get(id(v))
        if known is None:
            known = self.device_expr[id(v)] = self.names.make(f"{host_name}_gpu")
            self.device_globals.append((known, host_name))
        return known

    def constant(self, v: Value) -> str:
        """The constant v as a module global on the host (made once), kept apart from
        `expr`: each reader asks `ref`, which gives a device op the constant's GPU copy."""
        name = self.host_constants.get(id(v))
        if name is None:
            name = self.host_constants[id(v)] = self.names.make(v.name)
            self.constants[name] = np.asarray(v.const, dtype=v.dtype.np)
        return name

    def dense(self, v: Value, consumer: Node) -> str:
        """v as a C-contiguous device array for a kernel (a view made by CuPy may not be)."""
        text = self.ref(v, consumer)
        producer = v.producer
        if producer is not None and (producer.members or kernel_ok(producer)
                                     or producer.type == "Transfer"):
            return text
        return f"crt.dense({text})"

    def returned(self, v: Value, e: str) -> str:
        if v.const is not None and self.fetch_on_device and not v.dtype.is_string:
            # a constant fetched on the GPU: a copy of its GPU copy (a CUDA graph holds that)
            return f"crt.copy({self.on_gpu(v, e)})"
        return super().returned(v, e)

    def copied(self, v: Value, e: str) -> str:
        producer = v.producer
        if producer is not None and producer.type == "Transfer" \
                and producer.attrs["target"] != self.device:
            return e  # crt.to_host made a new array
        return f"crt.copy({e})"  # (a NumPy or a CuPy array, by what it is)

    # -- the hooks ---------------------------------------------------------------------------
    def group(self, node: Node) -> None:
        if not self.on_device(node):
            self._not_capturable(node, HOST_WORK)
            super().group(node)
            return
        self._kernel(node)

    def node(self, node: Node) -> None:
        producer = self.updates.pop(id(node), None)
        if producer is not None:
            self._fused_update(node, producer)
            return
        if node.opdef.draws_random:
            self._not_capturable(node, "it draws random numbers: a graph would replay the "
                                       "draws of its capture, or none")
        if node.type == "Transfer":
            self._transfer(node)
        elif not self.on_device(node):
            self._not_capturable(node, HOST_WORK)
            super().node(node)
        elif kernel_ok(node):
            self._kernel(node)
        else:
            folded = self.folded.get(id(node))
            if folded is not None:  # its input computed where it is read
                fname, args, ctypes = folded
                arrays = [(t, f"in{k}") for k, t in enumerate(ctypes)]
                load = f"{fname}(idx{''.join(f', in{k}' for k in range(len(ctypes)))})"
                plan = template_plan(node, self._reserve, load, arrays)
            else:
                plan = template_plan(node, self._reserve)
            if plan is not None:
                self._template(node, plan, folded[1] if folded else None)
            else:
                super().node(node)

    def regions(self, node: Node) -> None:
        self._not_capturable(node, "its control flow is the host's, between kernels (a "
                                   "branch or a loop's test reads a value back from the GPU)")
        self.xp = "cp" if self.on_device(node) else "np"
        try:
            super().regions(node)
        finally:
            self.xp = "np"

    def code(self, node: Node, args: list[str]) -> str:
        code = super().code(node, args)
        if not self.on_device(node):
            return code
        if isinstance(code, str):
            return library.to_device_code(code)
        in_place = code.in_place  # a variable's update (Store): both its forms
        return code._replace(value=library.to_device_code(code.value),
                             in_place=in_place and library.to_device_code(in_place))

    def _not_capturable(self, node: Node, why: str) -> None:
        self.uncapturable.append((node.origin, why, node.type == "Transfer"))

    def render(self, title: str):
        rendered = super().render(title)
        # (a copy between the memories is there for an op the host runs: that op first)
        rendered.uncapturable = [(op, why) for op, why, transfer
                                 in sorted(self.uncapturable, key=lambda r: r[2])]
        return rendered

    # -- what only this backend writes ------------------------------------------------------
    def _kernel(self, node: Node) -> None:
        """An elementwise node or a fused group: its kernel, and the lines launching it."""
        names, out_name = self.names, self.out_name
        consumer = node.members[-1] if node.members else node
        if self._fold(node, consumer) or self._fold_into_update(node):
            return
        kname = names.make("fused" if node.members else f"k_{node.type.lower()}")
        text, host, kernels = render_elementwise(node, kname, lambda v: self.dense(v, consumer),
                                                 out_name, names.make)
        self.cu.append(text)
        self.kernel_names.extend(kernels)
        self.body.append(comment(node.origin) if node.origin is not None else "# fused")
        self._lines(host, node.origin)
        for v in node.outputs:
            self.alias.discard(id(v))
        if self.free_after:
            self.free(node)

    def _fold(self, node: Node, consumer: Node) -> bool:
        """Leave `node` (elementwise, or a group) to the reduction that alone reads its one
        value: a __device__ function the reduction's kernel calls for each element it reads,
        so that the value is never written to memory. False where that cannot be."""
        reader = self._sole_reader(node)
        if reader is None or reader.type not in REDUCTIONS or reader.members \
                or not self.on_device(reader) or reader.inputs[0] is not node.outputs[0] \
                or not has_template(reader):
            return False
        (x,) = node.outputs
        members = node.members or (node,)
        if assigns_variables(self.program) and \
                any(reads_variable(v) for m in members for v in m.runtime_inputs()):
            return False  # read late, a variable could have been assigned in between
        fname = self.names.make(f"{x.name}_at")
        text, args, ctypes = element_function(node, fname, lambda v: self.dense(v, consumer))
        self.cu.append(text)
        self.folded[id(reader)] = (fname, args, ctypes)
        self._left_to(node, reader, f", where it is read: {fname}")
        return True

    def _fold_into_update(self, node: Node) -> bool:
        """Leave `node` (elementwise, or a group without sums) to the variable's update that
        alone reads its one value, in place (an optimizer's `w -= lr * g`): one kernel then
        computes the delta and applies it (`_fused_update`), where the update runs. False
        where that cannot be: the update not in place, of another shape or dtype, a state
        write between the two (the delta's inputs are read late), or an input that may be
        the variable's array itself."""
        update = self._sole_reader(node)
        if update is None:
            return False
        (x,) = node.outputs
        var = update.outputs[0] if update.type in _UPDATE_OPS else None
        if var is None or update.inputs[1] is not x or id(update) not in self.memory.in_place \
                or not self.on_device(update) or x.dtype is not var.dtype \
                or x.dtype.name not in ("float32", "float64") \
                or tuple(x.shape.dims) != tuple(var.shape.dims):
            return False
        members = node.members or (node,)
        if any(_aliases(v, update.attrs["var"]) for m in members for v in m.runtime_inputs()):
            return False
        for n in self._after(node):
            if n is update:
                break
            if n.opdef.stateful or n.regions:
                return False  # (a state write, or what may hold one, in between)
        else:
            return False
        self.updates[id(update)] = node
        self._left_to(node, update, ", which applies it")
        return True

    def _sole_reader(self, node: Node) -> Node | None:
        """The one node reading the one value of `node` (elementwise, or a group without
        sums), a value not fetched: what may compute it inside its own kernel. Else None."""
        if len(node.outputs) != 1 or any(m.type == "Sum" for m in node.members):
            return None
        (x,) = node.outputs
        readers = liveness(self.program).readers.get(id(x), [])
        if len(readers) != 1 or any(f is x for f in self.program.fetches):
            return None
        return readers[0]

    def _left_to(self, node: Node, reader: Node, how: str) -> None:
        """`node` left to `reader`'s kernel, which computes it: its lines say so, and what it
        reads lives until `reader` has run (`_live_until`)."""
        self.body.append(comment(node.origin) if node.origin is not None else "# fused")
        self.body.append(f"# (computed inside the kernel of {printable(reader.origin.name)}"
                         f"{how})")
        self.computed(node.origin)
        if self.free_after:
            self._live_until(node, reader, self._after(node))

    def _after(self, node: Node) -> list[Node]:
        """The program's nodes after `node` (positions found once a walk, not a search each
        time: a plan of many folds stays linear)."""
        if self._positions is None:
            self._positions = {id(n): i for i, n in enumerate(self.program.nodes)}
        return self.program.nodes[self._positions[id(node)] + 1:]

    def _live_until(self, node: Node, reader: Node, between: list[Node]) -> None:
        """What `node` reads, now read where `reader` runs, is freed after `reader`: what
        dies at `node`, and what of it dies at a node `between` the two (read there last)."""
        inputs = {id(v) for m in node.members or (node,) for v in m.runtime_inputs()}
        dying = self.free_after.pop(id(node), [])
        for n in between:
            if n is reader:
                break
            late = [v for v in self.free_after.get(id(n), ()) if id(v) in inputs]
            if late:
                dying += late
                self.free_after[id(n)] = [v for v in self.free_after[id(n)]
                                          if id(v) not in inputs]
        self.free_after[id(reader)] = dying + self.free_after.get(id(reader), [])

    def _fused_update(self, update: Node, producer: Node) -> None:
        """The update `update` (AssignAdd, AssignSub, in place) by one kernel that computes
        its delta as `producer` does and applies it to the variable's array."""
        # (its Store's target: the variable, by the op's own emitter; the delta is not a value)
        store = self.code(update, ["None" if i == 1 or i in update.static_uses
                                   else self.ref(v, update) for i, v in enumerate(update.inputs)])
        kname = self.names.make(f"update_{update.attrs['var']}")
        text, launch = render_update(producer, kname, lambda v: self.dense(v, update),
                                     store.target, "-" if update.type == "AssignSub" else "+")
        self.cu.append(text)
        self.kernel_names.append(kname)
        self.emit(update, store._replace(value=launch, in_place=launch))

    def _lines(self, lines: list[str], op) -> None:
        """Lines computing `op`, each of them its line in the line map (an allocation that
        runs out of memory names the op, as the launch would)."""
        for line in lines:
            self.body.append(line)
            self.computed(op)

    def _reserve(self, base: str) -> str:
        """A kernel name `p` with `p_final` unused too (a plan's second kernel), both taken."""
        while True:
            name = self.names.make(base)
            if f"{name}_final" not in self.names.used:
                self.names.used.add(f"{name}_final")
                return name

    def _template(self, node: Node, plan, inputs: list | None = None) -> None:
        """A reduction, softmax or cross-entropy: its template's kernels (reduce.py), the
        outputs and scratch arrays they write, and their launches; `inputs`, the host names
        of the arrays it reads where its input is computed inside it (`_fold`)."""
        names, expr = self.names, self.expr
        if inputs is None:
            inputs = [self.dense(v, node) for v in node.runtime_inputs()]
        refs = {f"in{k}": ref for k, ref in enumerate(inputs)}
        body = [comment(node.origin)]
        for k, (v, (shape, dtype)) in enumerate(zip(node.outputs, plan.outputs)):
            name = expr[id(v)] = names.make(v.name)
            refs[f"out{k}"] = name
            body.append(f"{name} = cp.empty({tuple(shape)!r}, dtype=cp.{dtype})")
        for k, scratch in enumerate(plan.scratch):
            refs[f"scratch{k}"] = names.make(f"{node.outputs[0].name}_scratch")
            body.append(f"{refs[f'scratch{k}']} = cp.empty({tuple(scratch.shape)!r}, "
                        f"dtype=cp.{scratch.dtype})")
        for launch in plan.launches:
            args = ", ".join(refs[a] for a in launch.args)
            shared = f", shared_mem={launch.shared}" if launch.shared else ""
            body.append(f"{launch.kernel}(({launch.grid},), ({launch.block},), ({args},){shared})")
            if launch.kernel not in self.kernel_names:
                self.kernel_names.append(launch.kernel)
        if plan.scratch:
            body.append(f"del {', '.join(refs[f'scratch{k}'] for k in range(len(plan.scratch)))}")
        self.cu.append(plan.source)
        self.body.append(body[0])
        self._lines(body[1:], node.origin)
        if self.free_after:
            self.free(node)

    def _transfer(self, node: Node) -> None:
        (v,) = node.inputs
        (out,) = node.outputs
        to_device = node.attrs["target"] == self.device
        if not to_device:
            self._not_capturable(node, "it copies a value to the host, which waits for the GPU")
        elif not any(v is f for f in self.program.feeds):
            self._not_capturable(node, "it copies a value the host computed to the GPU")
        source = self.ref(v, None)
        name = self.expr[id(out)] = self.names.make(out.name)
        self.body.append(node_comment(node))
        self.body.append(f"{name} = crt.{'to_device' if to_device else 'to_host'}({source})")
        self.computed(node.origin)
        if to_device and id(v) in self.alias:
            self.alias.add(id(out))  # (a fed CuPy array is taken as it is)
        if self.free_after:
            self.free(node)

    def module_values(self) -> dict:
        cuda = render_template("cuda/kernels.cu.j2", preamble=preamble("__device__ inline"),
                               kernels=self.cu)
        if '"""' in cuda or "\\" in cuda:  # (generated text: neither can appear)
            raise AssertionError("the CUDA source cannot be written as a raw string")
        return {"cuda_source": cuda, "kernel_names": self.kernel_names,
                "device_globals": self.device_globals}
