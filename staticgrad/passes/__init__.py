"""Graph passes. Each is a plain function over the IR (or over a `Plan`), testable alone.

The order a session compiles with is the visible list `PIPELINE` in `staticgrad.compiler`.
"""
