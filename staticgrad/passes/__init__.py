"""The shared passes: plain functions over the IR (or over the graph: prune, specialize),
each testable alone, used by every backend. A backend's own passes live in its folder
(backends/numpy/: expand, scalars, memory). The order a session compiles with is
`staticgrad.compiler.pipeline(backend)`.
"""
