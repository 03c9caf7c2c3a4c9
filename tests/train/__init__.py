"""Tests of staticgrad/train/: optimizers, the global step, checkpoints."""
