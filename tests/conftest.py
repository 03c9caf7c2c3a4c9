"""The whole suite compiles with the IR verifier on: every pass's output is checked.

Also the fixtures and helpers that several test modules share, and the recorder of the
generated-source snapshot: with STATICGRAD_RECORD_SOURCES=path, every graph the suite compiles
is written to path with the source it compiled to (tests/source_corpus.py;
tests/snapshots/README.md says when and how)."""

import inspect
import os
import warnings

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.compiler

staticgrad.compiler.DEFAULT_OPTIONS = staticgrad.compiler.CompileOptions(verify=True)

_RECORD_TO = os.environ.get("STATICGRAD_RECORD_SOURCES")
_recorder = None
if _RECORD_TO:
    from tests import source_corpus

    _recorder = source_corpus.Recorder()
    _recorder.install()


def pytest_sessionfinish(session, exitstatus):
    if _recorder is not None:
        stats = _recorder.write(_RECORD_TO)
        print(f"\nsource corpus written to {_RECORD_TO}: {stats}")


def numeric_grad(f, x, eps=1e-6):
    """d f / d x by central differences, element by element (x: an array, taken as float64;
    f: a function of such an array giving a number): the independent reference the
    gradient tests compare with."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += eps
        minus[idx] -= eps
        grad[idx] = (f(plus) - f(minus)) / (2 * eps)
    return grad


def growing_loop(x):
    """A while_loop named "grow" over x, with a cond nested in its body (doubling x once its
    sum passes 1, else adding 1, until the sum reaches 10): regions two deep, which graph
    files and pictures must both carry."""
    return sg.while_loop(lambda s: sg.reduce_sum(s) < 10.0,
                         lambda s: sg.cond(sg.reduce_sum(s) > 1.0, lambda: s * 2.0,
                                           lambda: s + 1.0), [x], name="grow")


def lineno():
    """The line number of the caller (where a node is being created)."""
    return inspect.currentframe().f_back.f_lineno


@pytest.fixture
def g():
    """A fresh graph, the default one for the test."""
    graph = sg.Graph()
    with graph.as_default():
        yield graph


def dense_gradients(ys, xs, **kwargs):
    """sg.gradients, each made dense (a gather's IndexedSlices too): what checks against
    finite differences and reference interpreters compare."""
    with warnings.catch_warnings():  # (TF1's warning for a dense shape not known yet)
        warnings.filterwarnings("ignore", "Converting sparse IndexedSlices", UserWarning)
        return [sg.convert_to_tensor(g) if isinstance(g, sg.IndexedSlices) else g
                for g in sg.gradients(ys, xs, **kwargs)]
