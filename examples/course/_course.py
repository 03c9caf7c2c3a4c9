"""What the course programs share: the checkout on `sys.path` (so that they run from a
checkout without installing), and the data that both programs of a pair use, so that the
dynamic one and the static one print the same numbers."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# Seed 003's regression starts from the article's draw of torch.randn(1, 1) ...
W0 = 1.1046


def torch_rand(seed, shape):
    """What `torch.manual_seed(seed); torch.rand(*shape)` draws on the CPU, from NumPy.

    PyTorch's CPU generator is MT19937 with the reference seeding (init_genrand), which
    NumPy's legacy RandomState uses too; a float32 uniform is the low 24 bits of one 32-bit
    draw times 2**-24."""
    draws = np.random.RandomState(seed).randint(0, 2**32, size=shape, dtype=np.uint32)
    return ((draws & 0xFFFFFF) * 2.0**-24).astype(np.float32)  # exact: 24 bits fit float32


def quadratic_data(seed=100):
    """... on seed 003's data: x is 100 x 1 in [-1, 1], y = 3 x^2 + 2 + 0.2 * uniform noise,
    the noise being the article's own draw (torch.manual_seed(100); torch.rand(100, 1)), so
    the fit ends on the article's w = 2.9668, b = 2.1138."""
    x = np.linspace(-1, 1, 100, dtype=np.float32).reshape(100, 1)
    return x, 3 * x**2 + 2 + 0.2 * torch_rand(seed, (100, 1))


def rnn_data():
    """The RNN pair's data: three sequences of lengths 4, 2 and 3 (padded to 4 steps with
    zeros) of 2 features, and the weights of a 3-unit RNN cell, kernel [2 + 3, 3] and bias."""
    rng = np.random.RandomState(24)
    x = rng.uniform(-1, 1, (3, 4, 2))
    lengths = np.array([4, 2, 3])
    for row, n in enumerate(lengths):
        x[row, n:] = 0.0
    kernel = rng.uniform(-0.8, 0.8, (5, 3))
    bias = rng.uniform(-0.1, 0.1, 3)
    return x, lengths, kernel, bias
