"""`rt` in the generated NumPy code: staticgrad.runtime's kernels (what the ops compute, which
constant folding and the dynamic mode call too), the block runner of fused groups, the
convolution and pooling kernels of conv_fast (runtime_conv's, with numba's loops where the
`[fast]` extra is installed), a layer's bias add and ReLU and their gradients in one pass
each (epilogues.py), and `one_blas_thread` that a plan with convolutions holds throughout
its run (conv_blocked.py), with its large products as `matmul` (products.py)."""

from ...runtime import *  # noqa: F403 (the kernels, as rt.<name>)
from .blocks import run_blocks  # noqa: F401
from .conv_blocked import one_blas_thread  # noqa: F401
from .conv_fast import (  # noqa: F401
    avg_pool,
    avg_pool_grad,
    bias_relu,
    conv2d,
    conv2d_backprop_filter,
    conv2d_backprop_input,
    max_pool,
    max_pool_grad,
    relu_grad_bias_sum,
)
from .products import matmul  # noqa: F401
