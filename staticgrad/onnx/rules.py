"""RULES: the ONNX rule of every op type that has one, gathered from the family files.

A rule `rule(b, op)` adds to the `Builder` b the nodes that compute `op`, reading its inputs
as `b.x(tensor)` and writing its outputs as `b.y(op, i)`. An op type with no ONNX form has
instead a reason in `no_form.NO_ONNX`."""

from __future__ import annotations

from . import rules_array, rules_indexing, rules_math, rules_nn, rules_reduce


def _gather(*families) -> dict:
    rules: dict = {}
    for family in families:
        twice = rules.keys() & family.RULES.keys()
        assert not twice, f"op types with an ONNX rule in two files: {sorted(twice)}"
        rules.update(family.RULES)
    return rules


RULES = _gather(rules_math, rules_reduce, rules_array, rules_indexing, rules_nn)
