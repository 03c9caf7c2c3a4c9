"""The numba kernels of runtime_fast (imported by it once libmvec is loaded; see there why).

Each loop runs over a 1-D float32 block eight elements at a time, each eight one call of
glibc's 8-wide expf, logf, log1pf or tanhf (`_ZGVdN8v_expf`...), written out as LLVM IR by a
numba intrinsic: numba's own math calls are not ones LLVM can vectorize. Compiled once and
cached on disk (numba's cache=True: __pycache__, or its user-wide cache where that is not
writable).
"""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

# before any kernel is compiled or loaded: a symbol LLVM cannot find aborts the process
llvm.load_library_permanently("libmvec.so.1")

_OPTIONS = dict(nogil=True, error_model="numpy", boundscheck=False, cache=True)
# x may be read-only (a constant, a feed made with np.frombuffer or a read-only memmap)
_RW, _RO = types.Array(types.float32, 1, "C"), types.Array(types.float32, 1, "C", readonly=True)
_CHECK = [types.boolean(_RW), types.boolean(_RO)]
_LOOP = [types.void(_RW, _RW, types.intp), types.void(_RO, _RW, types.intp)]
_VEC = ir.VectorType(ir.FloatType(), 8)

EXP_LO, EXP_HI = np.float32(-87.0), np.float32(88.0)  # exp(x) normal, no flag raised
TINY, BIG = np.float32(np.finfo(np.float32).tiny), np.float32(np.finfo(np.float32).max)


def _vector_op(kind: str):
    """An intrinsic v8(x, out, i): out[i:i+8] = f(x[i:i+8]), loaded as one vector before it is
    stored (so `out` may be `x`); sigmoid is 1 / (1 + expf(-x)) on the eight at once."""
    symbol = {"log": "_ZGVdN8v_logf", "tanh": "_ZGVdN8v_tanhf",
              "log1p": "_ZGVdN8v_log1pf"}.get(kind, "_ZGVdN8v_expf")

    def codegen(context, builder, sig, args):
        x = context.make_array(sig.args[0])(context, builder, args[0])
        out = context.make_array(sig.args[1])(context, builder, args[1])
        src = builder.bitcast(builder.gep(x.data, [args[2]]), _VEC.as_pointer())
        dst = builder.bitcast(builder.gep(out.data, [args[2]]), _VEC.as_pointer())
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VEC, [_VEC]),
                                            symbol)
        v = builder.load(src, align=4)
        if kind == "sigmoid":
            one = ir.Constant(_VEC, [1.0] * 8)
            r = builder.fdiv(one, builder.fadd(one, builder.call(fn, [builder.fneg(v)])))
        else:
            r = builder.call(fn, [v])
        builder.store(r, dst, align=4)
        return context.get_dummy_value()

    def v8(typingctx, x, out, i):
        return types.void(x, out, i), codegen

    v8.__name__ = f"{kind}8"
    return intrinsic(v8)


exp8, log8, log1p8, sigmoid8, tanh8 = (_vector_op(k)
                                        for k in ("exp", "log", "log1p", "sigmoid", "tanh"))
EXP, LOG, LOG1P, SIGMOID, TANH = range(5)  # `kind`, the last argument of apply


@njit(inline="always")
def _eight(x, out, i, kind):
    if kind == EXP:
        exp8(x, out, i)
    elif kind == LOG:
        log8(x, out, i)
    elif kind == LOG1P:
        log1p8(x, out, i)
    elif kind == SIGMOID:
        sigmoid8(x, out, i)
    else:
        tanh8(x, out, i)


# one loop for the five functions, its kind a number: each function's own loop would be the
# same lines five times (a loop made by a factory is a closure, which numba cannot cache)
@njit(_LOOP, **_OPTIONS)
def apply(x, out, kind):
    """out = f(x), f the function `kind` names, eight elements at a time; the last few go
    through a padded eight, so that every element takes the same libmvec code."""
    n = x.shape[0]
    i = 0
    while i + 8 <= n:
        _eight(x, out, i, kind)
        i += 8
    if i < n:
        pad = np.full(8, 1.0 if kind == LOG else 0.0, np.float32)
        pad[:n - i] = x[i:]
        _eight(pad, pad, 0, kind)
        out[i:] = pad[:n - i]


@njit(_CHECK, **_OPTIONS)
def exp_in_range(x):
    """No element where NumPy's exp would report something: none outside [-87, 88] (overflow,
    underflow), none subnormal (NumPy's SIMD exp reports underflow for those), no NaN."""
    ok = True
    for i in range(x.shape[0]):
        v = x[i]
        ok &= (v >= EXP_LO) & (v <= EXP_HI) & ((abs(v) >= TINY) | (v == 0))  # False for NaN
    return ok


@njit(_CHECK, **_OPTIONS)
def log_in_domain(x):
    """Every element normal, positive and finite (not NaN): where NumPy's log reports
    nothing."""
    ok = True
    for i in range(x.shape[0]):
        ok &= (x[i] >= TINY) & (x[i] <= BIG)
    return ok


@njit(_CHECK, **_OPTIONS)
def no_nan(x):
    """No NaN (whose payload, sign and signalling bit NumPy's code handles in its own way)."""
    ok = True
    for i in range(x.shape[0]):
        ok &= x[i] == x[i]
    return ok


@njit(_CHECK, **_OPTIONS)
def log1p_in_domain(x):
    """Every element above -1, finite, and zero or normal (not NaN): where NumPy's log1p (and
    rt.log1p's steps) report nothing."""
    ok = True
    for i in range(x.shape[0]):
        v = x[i]
        ok &= (v > -1) & (v <= BIG) & ((abs(v) >= TINY) | (v == 0))
    return ok
