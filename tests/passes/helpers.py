"""What the tests of the compiler and its passes share: the lowered program of a run,
its node types, inputs of a size that the memory plan and fusion take, and results
with every pass on and with every pass off."""

from __future__ import annotations

import numpy as np

import staticgrad as sg
from staticgrad import compiler
from staticgrad.ir import lower
from staticgrad.passes.prune import prune
from staticgrad.passes.specialize import specialize


def program_for(fetches, feeds):
    """The lowered (not yet rewritten) Program of a session run with these feeds."""
    ops = prune(fetches, set(feeds))
    spec = specialize(ops, {t: (tuple(v.shape), t.dtype) for t, v in feeds.items()})
    return lower(ops, fetches, list(feeds), spec)


def types(program):
    return [n.type for n in program.nodes]


X = np.arange(6, dtype=np.float32).reshape(2, 3)


N = 200_003  # more than one block per thread, and not a multiple of the block


def _on_and_off(fetches, feed=None, init=()):
    out = []
    for options in (sg.CompileOptions(verify=True),
                    sg.CompileOptions(disable=set(compiler.PASS_NAMES), verify=True)):
        with sg.Session(options=options) as sess:
            for i in init:
                sess.run(i)
            out.append(sess.run(fetches, feed))
    return out
