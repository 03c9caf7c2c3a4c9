"""The whole suite compiles with the IR verifier on: every pass's output is checked."""

import staticgrad.compiler

staticgrad.compiler.DEFAULT_OPTIONS = staticgrad.compiler.CompileOptions(verify=True)
