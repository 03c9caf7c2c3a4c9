"""Learning-rate schedules of the global step (TF1's `tf.train.exponential_decay` and kin):
graph ops, so that each run of the training op reads the rate the step has reached.

    step = sg.train.get_or_create_global_step()
    rate = sg.train.exponential_decay(0.1, step, decay_steps=1000, decay_rate=0.96)
    train = sg.train.GradientDescentOptimizer(rate).minimize(loss, global_step=step)

Each takes the formula TF1 1.15 documents; the rate has the dtype of `learning_rate` (float32
for a Python number), and the step is cast to it.
"""

from __future__ import annotations

import math

from .. import dtypes as _dt
from ..errors import here
from ..graph import name_scope
from ..ops import math_ops as M
from ..ops.conversion import convert_to_tensor


def _common(learning_rate, global_step, what: str, *numbers):
    """(the rate, the step as the rate's dtype, each of `numbers` as that dtype, scope)."""
    if global_step is None:
        raise ValueError(f"{what} {here()}: global_step is "
                         "required (TF1's schedules are functions of the global step)")
    rate = convert_to_tensor(learning_rate, dtype_hint=_dt.float32)
    if not rate.dtype.is_floating:
        raise TypeError(f"{what}: learning_rate must be a float, got {rate.dtype.name}")
    step = M.cast(convert_to_tensor(global_step), rate.dtype)
    return rate, step, [convert_to_tensor(n, dtype=rate.dtype) for n in numbers]


def _progress(step, decay_steps, staircase: bool):
    p = step / decay_steps
    return M.floor(p) if staircase else p


def _stepped(scope: str, what: str, combine):
    """A schedule of the progress global_step / decay_steps (floored with `staircase`):
    `combine(rate, decay_rate, progress)`, TF1's signature."""
    def schedule(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                 name=None):
        with name_scope(name, scope):
            rate, step, (steps, decay) = _common(learning_rate, global_step, what,
                                                 decay_steps, decay_rate)
            return combine(rate, decay, _progress(step, steps, staircase))
    schedule.__name__ = schedule.__qualname__ = what
    return schedule


exponential_decay = _stepped("ExponentialDecay", "exponential_decay",
                             lambda rate, decay, p: M.multiply(rate, M.pow(decay, p)))
exponential_decay.__doc__ = """learning_rate * decay_rate ** (global_step / decay_steps), the
exponent floored with `staircase`."""
natural_exp_decay = _stepped("NaturalExpDecay", "natural_exp_decay",
                             lambda rate, decay, p: M.multiply(rate, M.exp(-decay * p)))
natural_exp_decay.__doc__ = """learning_rate * exp(-decay_rate * global_step / decay_steps)
(floored with `staircase`)."""
inverse_time_decay = _stepped("InverseTimeDecay", "inverse_time_decay",
                              lambda rate, decay, p: M.divide(rate, 1.0 + decay * p))
inverse_time_decay.__doc__ = """learning_rate / (1 + decay_rate * global_step / decay_steps)
(floored with `staircase`)."""


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """From learning_rate to end_learning_rate over decay_steps, as (1 - step / decay_steps)
    ** power; then end_learning_rate, or with `cycle` again over the next multiple of
    decay_steps."""
    with name_scope(name, "PolynomialDecay"):
        rate, step, (steps, end, power) = _common(learning_rate, global_step,
                                                  "polynomial_decay", decay_steps,
                                                  end_learning_rate, power)
        if cycle:  # (step 0 counts as the first cycle)
            steps = steps * M.maximum(M.ceil(step / steps), 1.0)
        else:
            step = M.minimum(step, steps)
        return (rate - end) * M.pow(1.0 - step / steps, power) + end


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """learning_rate * ((1 - alpha) * (1 + cos(pi * step / decay_steps)) / 2 + alpha), the
    step capped at decay_steps."""
    with name_scope(name, "CosineDecay"):
        rate, step, (steps, alpha) = _common(learning_rate, global_step, "cosine_decay",
                                             decay_steps, alpha)
        step = M.minimum(step, steps)
        cosine = 0.5 * (1.0 + M.cos(math.pi * step / steps))
        return M.multiply(rate, (1.0 - alpha) * cosine + alpha)


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[1] while x <= boundaries[1], ... and
    values[-1] past the last boundary (one value more than boundaries)."""
    where = f"piecewise_constant {here()}"
    if len(values) != len(boundaries) + 1:
        raise ValueError(f"{where}: values must have one more item than boundaries, got "
                         f"{len(values)} values and {len(boundaries)} boundaries")
    with name_scope(name, "PiecewiseConstant"):
        x = convert_to_tensor(x)
        values = [convert_to_tensor(v) for v in values]
        if len({v.dtype for v in values}) != 1:
            raise ValueError(f"{where}: the values must have one dtype, got "
                             f"{[v.dtype.name for v in values]}")
        bounds = [convert_to_tensor(b, dtype=x.dtype) for b in boundaries]
        out = values[-1]
        for bound, value in zip(reversed(bounds), reversed(values[:-1])):
            out = M.where(x <= bound, value, out)
        return out
