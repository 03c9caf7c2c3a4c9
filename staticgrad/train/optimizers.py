"""The TF1 optimizers, each update written from its published rule (TF1's training_ops).

An IndexedSlices gradient (an embedding's) is applied to its rows only by GradientDescent
(`scatter_sub`), Momentum and Adagrad (their slots' rows too, each index once, its rows
summed), as TF1's sparse kernels do; the others apply its dense tensor (for Adam, TF1's own
rule: its moments decay everywhere at each step).

With learning rate `lr` and gradient `g`, per variable `w`:

- GradientDescent: `w -= lr * g`
- Momentum:        `a = momentum * a + g`; `w -= lr * a`
                   (Nesterov: `w -= lr * g + lr * momentum * a`)
- Adam:            `lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)`;
                   `m = beta1 * m + (1 - beta1) * g`; `v = beta2 * v + (1 - beta2) * g^2`;
                   `w -= lr_t * m / (sqrt(v) + epsilon)`
                   (beta1^t and beta2^t are the variables `beta1_power`, `beta2_power`)
- RMSProp:         `ms = decay * ms + (1 - decay) * g^2` (ms starts at ones, as in TF1);
                   `mom = momentum * mom + lr * g / sqrt(ms + epsilon)`; `w -= mom`
                   (centered: `mg = decay * mg + (1 - decay) * g`, and the denominator is
                   `sqrt(ms - mg^2 + epsilon)`)
- Adagrad:         `a += g^2` (a starts at initial_accumulator_value); `w -= lr * g / sqrt(a)`
- Adadelta:        `a = rho * a + (1 - rho) * g^2`;
                   `step = sqrt(u + epsilon) / sqrt(a + epsilon) * g`;
                   `u = rho * u + (1 - rho) * step^2`; `w -= lr * step`
- Ftrl:            `n' = n + g^2` (n starts at initial_accumulator_value);
                   `z += g + 2 * l2_shrinkage * w - (n'^-p - n^-p) / lr * w` (p the
                   learning_rate_power); `w = (clip(z, -l1, l1) - z) / (n'^-p / lr + 2 * l2)`;
                   `n = n'`
"""

from __future__ import annotations

from ..ops.array_ops import fill, ones
from ..ops.conversion import convert_to_tensor
from ..ops.indexing_ops import gather
from ..ops.math_ops import cast, clip_by_value, rsqrt, sqrt, square
from ..ops.math_ops import pow as power
from ..ops.state_ops import assign, assign_sub, group, scatter_sub, scatter_update
from .optimizer import Optimizer


class GradientDescentOptimizer(Optimizer):
    """Plain gradient descent: `w -= learning_rate * g`."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _apply_dense(self, grad, var):
        lr = self._hyper("learning_rate", self._learning_rate, var.dtype)
        return assign_sub(var, lr * grad, use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        lr = self._hyper("learning_rate", self._learning_rate, var.dtype)
        return scatter_sub(var, grad.indices, lr * grad.values,
                           use_locking=self._use_locking).op


class MomentumOptimizer(Optimizer):
    """Gradient descent with momentum (optionally Nesterov's), accumulator slot "momentum"."""

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "momentum")

    def _apply_dense(self, grad, var):
        lr = self._hyper("learning_rate", self._learning_rate, var.dtype)
        mu = self._hyper("momentum", self._momentum, var.dtype)
        accum = self.get_slot(var, "momentum")
        a = assign(accum, accum * mu + grad, use_locking=self._use_locking)
        step = grad * lr + a * mu * lr if self._use_nesterov else a * lr
        return assign_sub(var, step, use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        lr = self._hyper("learning_rate", self._learning_rate, var.dtype)
        mu = self._hyper("momentum", self._momentum, var.dtype)
        accum = self.get_slot(var, "momentum")
        g, rows = self._deduplicated(grad)
        a = gather(accum, rows) * mu + g  # (only the rows of the gradient, as TF1's)
        a_t = scatter_update(accum, rows, a, use_locking=self._use_locking)
        step = g * lr + a * mu * lr if self._use_nesterov else a * lr
        with var.graph.control_dependencies([a_t.op]):
            return scatter_sub(var, rows, step, use_locking=self._use_locking).op


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba), in TF1's form with epsilon outside the bias correction."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon

    def _create_slots(self, var_list):
        first = min(var_list, key=lambda v: v.name)
        self._non_slot("beta1_power", lambda: self._initial_power(self._beta1, first), first.graph)
        self._non_slot("beta2_power", lambda: self._initial_power(self._beta2, first), first.graph)
        for v in var_list:
            self._zeros_slot(v, "m")
            self._zeros_slot(v, "v")

    @staticmethod
    def _initial_power(beta, var):
        return convert_to_tensor(beta, dtype=var.dtype)

    def _beta_powers(self, graph):
        return self._non_slots[("beta1_power", graph)], self._non_slots[("beta2_power", graph)]

    def _apply_dense(self, grad, var):
        dt = var.dtype
        lr = self._hyper("learning_rate", self._lr, dt)
        beta1 = self._hyper("beta1", self._beta1, dt)
        beta2 = self._hyper("beta2", self._beta2, dt)
        eps = self._hyper("epsilon", self._epsilon, dt)
        lr_t = self._hypers.get(("lr_t", dt))
        if lr_t is None:  # (one for all the variables of a dtype: made with the first's update)
            b1_power, b2_power = self._beta_powers(var.graph)
            b1p, b2p = (p.value() if p.dtype is dt else cast(p.value(), dt)
                        for p in (b1_power, b2_power))
            lr_t = self._hypers["lr_t", dt] = lr * sqrt(1 - b2p) / (1 - b1p)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = assign(m, beta1 * m + (1 - beta1) * grad, use_locking=self._use_locking)
        v_t = assign(v, beta2 * v + (1 - beta2) * square(grad), use_locking=self._use_locking)
        return assign_sub(var, lr_t * m_t / (sqrt(v_t) + eps), use_locking=self._use_locking).op

    def _finish(self, update_ops, name_scope):
        graph = update_ops[0].graph
        b1_power, b2_power = self._beta_powers(graph)
        with graph.control_dependencies(update_ops):
            beta1 = self._hyper("beta1", self._beta1, b1_power.dtype)
            beta2 = self._hyper("beta2", self._beta2, b2_power.dtype)
            up1 = assign(b1_power, b1_power * beta1, use_locking=self._use_locking)
            up2 = assign(b2_power, b2_power * beta2, use_locking=self._use_locking)
        return group(*update_ops, up1, up2, name=name_scope)


class RMSPropOptimizer(Optimizer):
    """RMSProp (Hinton), with optional momentum and the centered variant."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking=False,
                 centered=False, name="RMSProp"):
        super().__init__(use_locking, name)
        self._lr, self._decay, self._momentum = learning_rate, decay, momentum
        self._epsilon, self._centered = epsilon, centered

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot_with_init(v, "rms", lambda v=v: ones(v.shape.dims, v.dtype))
            if self._centered:
                self._zeros_slot(v, "mg")
            self._zeros_slot(v, "momentum")

    def _apply_dense(self, grad, var):
        dt = var.dtype
        lr = self._hyper("learning_rate", self._lr, dt)
        rho = self._hyper("decay", self._decay, dt)
        mu = self._hyper("momentum", self._momentum, dt)
        eps = self._hyper("epsilon", self._epsilon, dt)
        ms = self.get_slot(var, "rms")
        ms_t = assign(ms, rho * ms + (1 - rho) * square(grad), use_locking=self._use_locking)
        denom = ms_t + eps
        if self._centered:
            mg = self.get_slot(var, "mg")
            mg_t = assign(mg, rho * mg + (1 - rho) * grad, use_locking=self._use_locking)
            denom = ms_t - square(mg_t) + eps
        mom = self.get_slot(var, "momentum")
        mom_t = assign(mom, mu * mom + lr * grad * rsqrt(denom), use_locking=self._use_locking)
        return assign_sub(var, mom_t, use_locking=self._use_locking).op


class AdagradOptimizer(Optimizer):
    """Adagrad (Duchi et al.): per-coordinate steps shrinking with the summed squared gradients."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive, got "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._lr, self._initial = learning_rate, initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot_with_init(v, "accumulator", lambda v=v: fill(
                v.shape.dims, convert_to_tensor(self._initial, dtype=v.dtype)))

    def _apply_dense(self, grad, var):
        lr = self._hyper("learning_rate", self._lr, var.dtype)
        acc = self.get_slot(var, "accumulator")
        acc_t = assign(acc, acc + square(grad), use_locking=self._use_locking)
        return assign_sub(var, lr * grad * rsqrt(acc_t), use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        lr = self._hyper("learning_rate", self._lr, var.dtype)
        acc = self.get_slot(var, "accumulator")
        g, rows = self._deduplicated(grad)
        acc_rows = gather(acc, rows) + square(g)  # (only the rows of the gradient, as TF1's)
        acc_t = scatter_update(acc, rows, acc_rows, use_locking=self._use_locking)
        with var.graph.control_dependencies([acc_t.op]):
            return scatter_sub(var, rows, lr * g * rsqrt(acc_rows),
                               use_locking=self._use_locking).op


class AdadeltaOptimizer(Optimizer):
    """Adadelta (Zeiler): steps scaled by the running mean of past steps over that of the
    gradients, so that the learning rate matters less."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False,
                 name="Adadelta"):
        super().__init__(use_locking, name)
        self._lr, self._rho, self._epsilon = learning_rate, rho, epsilon

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "accum")
            self._zeros_slot(v, "accum_update")

    def _apply_dense(self, grad, var):
        dt = var.dtype
        lr = self._hyper("learning_rate", self._lr, dt)
        rho = self._hyper("rho", self._rho, dt)
        eps = self._hyper("epsilon", self._epsilon, dt)
        accum, accum_update = self.get_slot(var, "accum"), self.get_slot(var, "accum_update")
        accum_t = assign(accum, rho * accum + (1 - rho) * square(grad),
                         use_locking=self._use_locking)
        update = sqrt(accum_update + eps) * rsqrt(accum_t + eps) * grad
        new_update = assign(accum_update, rho * accum_update + (1 - rho) * square(update),
                            use_locking=self._use_locking)
        with var.graph.control_dependencies([new_update.op]):
            return assign_sub(var, lr * update, use_locking=self._use_locking).op


class FtrlOptimizer(Optimizer):
    """FTRL-Proximal (McMahan et al.), with L1 and L2 regularization and TF1's L2 shrinkage;
    the weights are solved from the accumulated linear term at each step."""

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="Ftrl", accum_name=None, linear_name=None,
                 l2_shrinkage_regularization_strength=0.0):
        if learning_rate_power > 0.0:
            raise ValueError(f"learning_rate_power must be <= 0, got {learning_rate_power}")
        for what, value in (("initial_accumulator_value", initial_accumulator_value),
                            ("l1_regularization_strength", l1_regularization_strength),
                            ("l2_regularization_strength", l2_regularization_strength),
                            ("l2_shrinkage_regularization_strength",
                             l2_shrinkage_regularization_strength)):
            if value < 0.0:
                raise ValueError(f"{what} must be >= 0, got {value}")
        super().__init__(use_locking, name)
        self._lr, self._power = learning_rate, learning_rate_power
        self._initial = initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength
        self._shrinkage = l2_shrinkage_regularization_strength
        self._accum_name, self._linear_name = accum_name or "accum", linear_name or "linear"

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot_with_init(v, self._accum_name, lambda v=v: fill(
                v.shape.dims, convert_to_tensor(self._initial, dtype=v.dtype)))
            self._zeros_slot(v, self._linear_name)

    def _apply_dense(self, grad, var):
        dt = var.dtype
        lr = self._hyper("learning_rate", self._lr, dt)
        exponent = self._hyper("learning_rate_power", self._power, dt)
        l1 = self._hyper("l1_regularization_strength", self._l1, dt)
        l2 = self._hyper("l2_regularization_strength", self._l2, dt)
        accum = self.get_slot(var, self._accum_name)
        linear = self.get_slot(var, self._linear_name)
        shrunk = grad + 2 * self._hyper("l2_shrinkage", self._shrinkage, dt) * var \
            if self._shrinkage else grad
        accum_new = accum + square(grad)
        sigma = (power(accum_new, -exponent) - power(accum, -exponent)) / lr
        linear_t = assign(linear, linear + shrunk - sigma * var, use_locking=self._use_locking)
        quadratic = power(accum_new, -exponent) / lr + 2 * l2
        solved = (clip_by_value(linear_t, -l1, l1) - linear_t) / quadratic
        with var.graph.control_dependencies([linear_t.op]):
            accum_t = assign(accum, accum_new, use_locking=self._use_locking)
        with var.graph.control_dependencies([accum_t.op]):
            return assign(var, solved, use_locking=self._use_locking).op
