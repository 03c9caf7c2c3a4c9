"""Regression tests for the failures the differential fuzzing (tests/test_fuzz.py) found, one
per failure, each named after what it protects. A test marked xfail(strict=True) is a bug not
fixed yet: the fix makes it pass, and then its mark must go.

Each bug's check is a function returning what went wrong (None once fixed): test_fuzz.py calls
them too, to keep a known bug from hiding others while it is open (a size threshold kept above
the failing case, or a narrow waiver), and to drop that by itself once the bug is fixed.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

import staticgrad as sg
from staticgrad import compiler


@contextlib.contextmanager
def _patched(module, name, value):
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, saved)


@functools.cache
def memory_plan_frees_held_scalar() -> str | None:
    from staticgrad.backends.numpy import memory
    graph = sg.Graph()
    with graph.as_default(), _patched(memory, "MIN_BYTES", 0):
        x = sg.placeholder(sg.float32, [])
        total = sg.reduce_sum(sg.negative(sg.negative(x)))
        options = compiler.CompileOptions(disable={"simplify"}, verify=True)
        with sg.Session(options=options) as sess:
            try:
                out = sess.run(total, {x: 1.5})
            except Exception as e:  # noqa: BLE001 - the bug is any error here
                return f"{type(e).__name__}: {e}"
    return None if out == np.float32(1.5) else f"got {out!r}"


@functools.cache
def large_runtime_path_fails_on_0d() -> str | None:
    """runtime.softplus and runtime.select past their size thresholds, on 0-d inputs."""
    from staticgrad import runtime
    problems = []
    with _patched(runtime, "SOFTPLUS_MIN_SIZE", 0):
        for x in (np.float32(1.0), np.array(1.0, np.float32), np.float64(-2.0)):
            try:
                np.testing.assert_allclose(runtime.softplus(x), np.logaddexp(0, x), rtol=1e-6)
            except Exception as e:  # noqa: BLE001
                problems.append(f"softplus({x!r}): {type(e).__name__}: {e}")
    with _patched(runtime, "SELECT_MIN_SIZE", 0):
        cond, a, b = np.array(True), np.array(1.5, np.float32), np.array(-1.0, np.float32)
        try:
            assert runtime.select(cond, a, b) == np.float32(1.5)
        except Exception as e:  # noqa: BLE001
            problems.append(f"select(0-d): {type(e).__name__}: {e}")
    return "; ".join(problems) or None


@functools.cache
def one_element_relu_gradient_is_float64() -> str | None:
    problems = []
    for shape in ([], [1]):
        graph = sg.Graph()
        with graph.as_default():
            x = sg.placeholder(sg.float32, shape)
            grad, = sg.gradients(sg.reduce_sum(sg.nn.relu(x) * 0.75), [x])
            with sg.Session() as sess:
                out = np.asarray(sess.run(grad, {x: np.full(shape, 1.25, np.float32)}))
        if out.dtype != np.float32:
            problems.append(f"shape {shape}: {out.dtype}")
    return ", ".join(problems) or None


def test_memory_plan_never_frees_a_value_held_as_a_scalar():
    assert memory_plan_frees_held_scalar() is None


def test_large_runtime_paths_take_zero_dimensional_inputs():
    assert large_runtime_path_fails_on_0d() is None


def test_one_element_relu_gradient_keeps_float32():
    assert one_element_relu_gradient_is_float64() is None
