"""The NumPy backend: generated Python that calls NumPy, run in this process.

    render.py     the renderer (one line a node), parts.py (a long run() in parts),
                  fused.py (a fused group as a block kernel), one_pass_render.py (a float32
                  group, with the [fast] extra, also as one numba kernel: one_pass.py
                  compiles it, caches it on disk and runs it, NumPy's kernel its fallback)
    runtime.py    `rt` of the generated code; blocks.py runs fused kernels block by block on
                  threads; fast.py (+ _vector_kernels.py) is the [fast] extra's vector math,
                  conv_fast.py (+ _conv_kernels.py) its convolution and pooling loops,
                  conv_blocked.py convolution in blocks of the batch on every core (a plan
                  with convolutions holds the BLAS to one thread, products.py splitting its
                  large products between staticgrad's threads)
    expand.py, epilogues.py, scalars.py, memory.py
                  its own passes: composite ops as NumPy steps, a bias add and ReLU (and
                  their gradients) in one pass each, the scalar fast path, and the memory
                  plan (free after last use, out= into dying buffers)

    policy.py     its policies for the shared passes: what fuse may group (FUSE)

Its policies: fusion of elementwise groups of at least FUSE.min_elements (policy.py), out=
reuse of buffers of at least memory.MIN_BYTES, one-element chains on NumPy scalars.
"""

from __future__ import annotations

import functools
import linecache

import numpy as np

from ...codegen.pycompile import compile_module
from ...ops.table import REGISTRY
from ..base import Backend, Rendered
from . import fast, one_pass, runtime
from .epilogues import fuse_epilogues
from .expand import expand_composites
from .lowering import REGION_FORMS
from .memory import plan_memory
from .policy import FUSE
from .render import render
from .scalars import hold_scalars


class NumpyBackend(Backend):
    name = "numpy"
    description = "generated Python calling NumPy, in this process"
    early_passes = (
        ("expand", expand_composites),  # log1p of a large array -> its steps
    )
    fuse_policy = FUSE

    def configured(self, options) -> Backend:
        """Without vector math (CompileOptions(vector_math=False): an export, the NumPy-only
        path), a float32 log1p is expanded into its NumPy steps too, none left for
        runtime_fast's log1p (expand.py), and no epilogue is fused (epilogues.py)."""
        return self if options.vector_math else _WITHOUT_VECTOR_MATH

    @property
    def late_passes(self) -> tuple:
        return (
            ("epilogues", fuse_epilogues),  # bias add + ReLU, and their gradients: one pass
            ("fuse", self.fuse),            # elementwise groups, run in blocks (FUSE)
            ("scalars", hold_scalars),      # one-element chains on NumPy scalars
            ("memory", plan_memory),        # free after last use, reuse buffers
        )

    def supports(self, op_type: str) -> bool:
        """Every op that computes nothing, has its reference kernel (which this backend
        prints), or holds regions it writes as control flow (REGION_FORMS): today every op
        of the registry (tests/backends/numpy/test_lowering.py)."""
        opdef = REGISTRY.get(op_type)
        return opdef is not None and (not opdef.computes or opdef.numpy is not None
                                      or op_type in REGION_FORMS)

    def render(self, program, title: str, options) -> Rendered:
        return render(program, title=title, vector_math=options.vector_math)

    def load(self, rendered: Rendered, filename: str, state: dict, rngs: dict,
             locks: dict):
        lines = rendered.source.splitlines(keepends=True)
        linecache.cache[filename] = (len(rendered.source), None, lines, filename)
        namespace = {"np": np, "rt": runtime, "fast": fast, "nb": one_pass, "V": state,
                     "R": rngs, "L": locks, **rendered.constants}
        for code in compile_module(rendered.source, filename):
            exec(code, namespace)  # noqa: S102
        return namespace["run"]


BACKEND = NumpyBackend()


class _WithoutVectorMath(NumpyBackend):
    early_passes = (("expand", functools.partial(expand_composites, vector_math=False)),)

    @property
    def late_passes(self) -> tuple:  # (rt's epilogue functions are not in an export's rt)
        return tuple(p for p in super().late_passes if p[0] != "epilogues")


_WITHOUT_VECTOR_MATH = _WithoutVectorMath()
