"""The NumPy backend's lowering tables (backends/numpy/lowering.py) against the registry: it
claims every op and has a form for each; its out= and vector tables name real elementwise
ops. (What each out= form computes: test_memory.py; the vector kernels: test_fast.py.)"""

from __future__ import annotations

from staticgrad.backends import get_backend
from staticgrad.backends.numpy.epilogues import EPILOGUES
from staticgrad.backends.numpy.lowering import (
    NO_WEAK_LITERALS,
    OUT_FORMS,
    READS_AFTER_OUT,
    REGION_FORMS,
    VECTOR,
)
from staticgrad.ops.table import REGISTRY


def test_the_numpy_backend_claims_every_op_and_has_a_form_for_each():
    backend = get_backend("numpy")
    unclaimed = sorted(op for op in REGISTRY if not backend.supports(op))
    assert not unclaimed, f"ops the NumPy backend cannot compute: {unclaimed}"
    formless = sorted(op for op, d in REGISTRY.items()
                      if d.computes and d.numpy is None and op not in REGION_FORMS)
    assert not formless, f"ops that compute but have no NumPy form: {formless}"
    for op in REGION_FORMS:  # (written as control flow: they hold regions, no kernel)
        assert REGISTRY[op].region_attrs and REGISTRY[op].numpy is None, op
    assert not backend.supports("NoSuchOp")


def test_the_tables_name_elementwise_ops_of_the_registry():
    for table in (OUT_FORMS, READS_AFTER_OUT, VECTOR, NO_WEAK_LITERALS):
        for op_type in table:
            if op_type in EPILOGUES and table is OUT_FORMS:  # (epilogues.py's: no graph's)
                continue
            assert op_type in REGISTRY, f"{op_type} is in a lowering table but not registered"
            assert REGISTRY[op_type].elementwise, f"{op_type} is not elementwise"
    assert set(READS_AFTER_OUT) <= set(OUT_FORMS) and set(VECTOR) <= set(OUT_FORMS)
    for op_type, inputs in READS_AFTER_OUT.items():
        assert all(0 <= i < REGISTRY[op_type].arity for i in inputs), op_type


def test_the_activation_gradients_out_forms_make_no_temporary():
    """TanhGrad's and SigmoidGrad's out= forms compute every step in `out` (a temporary per
    step made W3's fused blocks 20% slower and W5's peak memory 25% higher), which is why
    READS_AFTER_OUT keeps out off the inputs they read afterwards."""
    import ast
    for op_type in ("TanhGrad", "SigmoidGrad"):
        text = OUT_FORMS[op_type].format("y", "dy", out="out")
        calls = [n for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Call)]
        assert calls and all(any(k.arg == "out" for k in c.keywords) for c in calls), text
        assert op_type in READS_AFTER_OUT, op_type
