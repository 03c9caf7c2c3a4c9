"""Tests of staticgrad/ops/: one module per op family, the registry-wide tables beside them."""
