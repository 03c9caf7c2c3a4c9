"""Tests of staticgrad/dynamic/: the define-by-run mode, its autograd, and trace to graphs."""
