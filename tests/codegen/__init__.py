"""Tests of staticgrad/codegen/: rendering a compiled program as source."""
