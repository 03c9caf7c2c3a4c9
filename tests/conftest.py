"""The whole suite compiles with the IR verifier on: every pass's output is checked.

Also the fixtures and helpers that several test modules share."""

import inspect

import pytest

import staticgrad as sg
import staticgrad.compiler

staticgrad.compiler.DEFAULT_OPTIONS = staticgrad.compiler.CompileOptions(verify=True)


def lineno():
    """The line number of the caller (where a node is being created)."""
    return inspect.currentframe().f_back.f_lineno


@pytest.fixture
def g():
    """A fresh graph, the default one for the test."""
    graph = sg.Graph()
    with graph.as_default():
        yield graph
