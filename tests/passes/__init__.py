"""Tests of staticgrad/passes/: each pass alone, and its rewrites against the program without it."""
