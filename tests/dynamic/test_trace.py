"""dy.trace: one run of a Python function on dynamic tensors, recorded into a static Graph."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy
import staticgrad.dynamic.nn.functional as F

RNG = np.random.default_rng(0)


def test_trace_round_trip_values_and_graph():
    def f(x, y):
        return (x * y + 2.0).exp().sum(dim=1)

    x, y = dy.tensor(RNG.normal(size=(2, 3))), dy.tensor(RNG.normal(size=3))
    traced = dy.trace(f, x, y)
    assert isinstance(traced.graph, sg.Graph)
    assert [p.op.type for p in traced.inputs] == ["Placeholder", "Placeholder"]
    assert traced.inputs[0].shape == (2, 3) and traced.inputs[0].dtype is sg.float64
    types = [op.type for op in traced.graph.get_operations()]
    for t in ("Mul", "Add", "Exp", "Sum", "Const"):
        assert t in types
    np.testing.assert_allclose(traced(x, y), f(x, y).numpy(), rtol=1e-12)
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=3)  # new inputs of the same shapes
    np.testing.assert_allclose(traced(a, b), f(dy.tensor(a), dy.tensor(b)).numpy(),
                               rtol=1e-12)
    assert "test_trace.py" in traced.graph.get_operations()[-1].location[0]
    assert "2 inputs" in repr(traced)


def test_parameters_become_variables_with_the_same_gradients():
    w = dy.tensor(RNG.normal(size=(3, 2)), requires_grad=True)
    b = dy.tensor(np.zeros(2), requires_grad=True)

    def model(x, labels):
        return F.cross_entropy(F.relu(x @ w + b), labels)

    x, labels = dy.tensor(RNG.normal(size=(4, 3))), dy.tensor([0, 1, 1, 0])
    loss = model(x, labels)
    loss.backward()
    traced = dy.trace(model, x, labels)
    assert len(traced.variables) == 2
    with traced.graph.as_default():
        grads = sg.gradients(traced.outputs, traced.variables)
    sess = traced.session
    feed = {traced.inputs[0]: x.numpy(), traced.inputs[1]: labels.numpy()}
    got_loss, (gw, gb) = sess.run([traced.outputs, grads], feed)
    np.testing.assert_allclose(got_loss, loss.item(), rtol=1e-12)
    np.testing.assert_allclose(gw, w.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gb, b.grad.numpy(), rtol=1e-10)


def test_python_control_flow_is_frozen_to_the_traced_path():
    def f(x):
        if x.sum() > 0:  # a Python branch on a value: traced once, one way
            return x * 2
        return -x

    positive, negative = dy.tensor([1.0, 2.0]), dy.tensor([-1.0, -2.0])
    with pytest.warns(dy.TracerWarning, match="control flow"):
        traced = dy.trace(f, positive)
    np.testing.assert_allclose(traced(positive), [2.0, 4.0])
    np.testing.assert_allclose(traced(negative), [-2.0, -4.0])  # not f(negative) = [1, 2]
    assert f(negative).tolist() == [1.0, 2.0]
    assert "Neg" not in {op.type for op in traced.graph.get_operations()}


def test_python_loops_are_unrolled():
    def f(x):
        for _ in range(3):
            x = dy.tanh(x)
        return x

    traced = dy.trace(f, dy.ones(2))
    assert [op.type for op in traced.graph.get_operations()].count("Tanh") == 3


def test_random_ops_stay_random_and_structures_are_kept():
    def f(x):
        noise = dy.rand(x.shape)
        return {"noisy": x + noise, "pair": (x * 2, noise)}

    traced = dy.trace(f, dy.zeros(1000))
    out = traced(np.zeros(1000, np.float32))
    assert set(out) == {"noisy", "pair"} and isinstance(out["pair"], tuple)
    first = out["noisy"]
    second = traced(np.zeros(1000, np.float32))["noisy"]
    assert not np.array_equal(first, second) and 0 <= first.min() and first.max() < 1


def test_in_place_updates_and_custom_functions_are_traced_through():
    class Double(dy.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    def f(x):
        y = x + 1
        y += 10  # an in-place update: later uses read the updated node
        return Double.apply(y) * y

    x = dy.tensor([1.0, 2.0])
    traced = dy.trace(f, x)
    np.testing.assert_allclose(traced(x), f(x).numpy())
    np.testing.assert_allclose(traced(np.array([0.0, 0.0], np.float32)), [242.0, 242.0])
    assert "CustomGradient" not in {op.type for op in traced.graph.get_operations()}


def test_values_read_in_python_become_constants_with_a_warning():
    def f(x):
        scale = x.max().item()
        return x / scale

    with pytest.warns(dy.TracerWarning):
        traced = dy.trace(f, dy.tensor([1.0, 4.0]))
    np.testing.assert_allclose(traced(np.array([2.0, 8.0], np.float32)), [0.5, 2.0])


def test_trace_errors():
    with pytest.raises(TypeError, match="must return tensors"):
        dy.trace(lambda x: 3, dy.ones(1))
    with pytest.raises(RuntimeError, match="inside another"):
        dy.trace(lambda x: dy.trace(lambda y: y, x).outputs, dy.ones(1))
    traced = dy.trace(lambda x: x * 2, dy.ones(1))
    with pytest.raises(TypeError, match="takes 1 inputs"):
        traced()
    w = dy.ones(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="outside the traced function"):
        dy.trace(lambda x: (w * x).sum().backward(), dy.ones(1))


def test_traced_graph_runs_through_the_compiler():
    w = dy.tensor(RNG.normal(size=(3, 3)).astype(np.float32), requires_grad=True)
    traced = dy.trace(lambda x: dy.sigmoid(x @ w).sum(), dy.ones(5, 3))
    src = traced.session.source(traced.outputs, {traced.inputs[0]: np.ones((5, 3), np.float32)})
    assert "def " in src


@pytest.mark.parametrize("cut", ["detach", "data", "detach_"])
def test_detach_and_data_are_stop_gradients_of_the_traced_value(cut):
    def f(x):
        y = x * 3
        if cut == "detach_":
            y.detach_()
        else:
            y = y.detach() if cut == "detach" else y.data
        return y * 2 + x

    x = dy.tensor([1.0, 2.0])
    traced = dy.trace(f, x)
    new = np.array([10.0, 20.0], np.float32)
    np.testing.assert_allclose(traced(new), f(dy.tensor(new)).numpy())  # not a frozen [6, 12]
    assert "StopGradient" in {op.type for op in traced.graph.get_operations()}
    with traced.graph.as_default():
        (grad,) = sg.gradients(traced.outputs, traced.inputs)
    np.testing.assert_allclose(traced.session.run(grad, {traced.inputs[0]: new}), [1.0, 1.0])


@pytest.mark.parametrize("read", [np.asarray, np.array, lambda t: t.numpy(),
                                  lambda t: t.tolist(), dy.tensor])
def test_reading_values_out_of_a_traced_tensor_warns(read):
    def f(x):
        return dy.tensor(read(x)) * 2

    with pytest.warns(dy.TracerWarning, match="constant"):
        traced = dy.trace(f, dy.tensor([1.0, 2.0]))
    np.testing.assert_allclose(traced(np.array([10.0, 20.0], np.float32)), [2.0, 4.0])


def test_an_in_place_update_of_a_parameter_warns_that_state_does_not_advance():
    p = dy.tensor([1.0, 1.0], requires_grad=True)

    def step(g):
        with dy.no_grad():
            p.sub_(g)
        return p * 1

    with pytest.warns(dy.TracerWarning, match="state does not advance") as caught:
        traced = dy.trace(step, dy.tensor([0.5, 0.5]))
    assert caught[0].filename == __file__
    g = np.array([0.5, 0.5], np.float32)
    np.testing.assert_allclose(traced(g), [0.5, 0.5])
    np.testing.assert_allclose(traced(g), [0.5, 0.5])  # eager would give [0, 0] this time

    def scale_input(x):
        x.copy_(x * 2)
        return x + 1

    with pytest.warns(dy.TracerWarning, match="state does not advance"):
        dy.trace(scale_input, dy.tensor([3.0]))
    with pytest.warns(dy.TracerWarning, match="state does not advance"):
        dy.trace(lambda x: _set_data(p, x), dy.tensor([2.0, 2.0]))


def _set_data(t, value):
    t.data = value * 1
    return t * 1


def test_in_place_updates_of_tensors_made_in_the_function_do_not_warn(recwarn):
    def f(x):
        y = x + 1
        y += 10
        y.mul_(2)
        return y

    traced = dy.trace(f, dy.tensor([1.0]))
    assert not [w for w in recwarn if issubclass(w.category, dy.TracerWarning)]
    np.testing.assert_allclose(traced(np.array([0.0], np.float32)), [22.0])


# -- modules: their state as graph variables, and training steps (issue 26) -----------------

def _mlp(seed=0, batch_norm=True):
    dy.manual_seed(seed)
    layers = [dy.nn.Linear(4, 8)] + ([dy.nn.BatchNorm1d(8)] if batch_norm else []) \
        + [dy.nn.ReLU(), dy.nn.Linear(8, 3)]
    return dy.nn.Sequential(*layers).double()


def _batches(n=4, size=16):
    rng = np.random.default_rng(1)
    return [(dy.tensor(rng.normal(size=(size, 4))), dy.tensor(rng.integers(0, 3, size)))
            for _ in range(n)]


def _assert_same_state(traced, model, tol=1e-10):
    got, want = traced.state_dict(), model.state_dict()
    assert list(got) == list(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name].numpy(), rtol=tol, atol=tol,
                                   err_msg=name)


def test_a_traced_module_has_its_state_as_named_variables():
    model = _mlp().eval()
    x = dy.tensor(RNG.normal(size=(5, 4)))
    traced = dy.trace(model, x)
    assert list(traced.state) == list(model.state_dict())
    assert traced.state["0.weight"].name == "0.weight:0"
    assert traced.variables == [traced.state[name] for name, _ in model.named_parameters()]
    assert not traced.state["1.running_mean"].trainable and not traced.updates  # (eval mode)
    new = RNG.normal(size=(5, 4))
    np.testing.assert_allclose(traced(new), model(dy.tensor(new)).detach().numpy(), rtol=1e-12)
    _assert_same_state(traced, model, tol=0)
    assert "9 module tensors" in repr(traced) and "Sequential" in repr(traced)


def test_buffer_updates_advance_the_graph_as_they_advance_the_module():
    model = _mlp()
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    traced = dy.trace(model, _batches()[0][0])
    for name, value in model.state_dict().items():  # tracing left the module as it was
        np.testing.assert_array_equal(value.numpy(), before[name], err_msg=name)
    assert [op.name for op in traced.updates] == ["update_1.num_batches_tracked",
                                                  "update_1.running_mean",
                                                  "update_1.running_var"]
    assert traced.graph.get_collection(sg.GraphKeys.UPDATE_OPS) == traced.updates
    for x, _ in _batches(3):
        np.testing.assert_allclose(traced(x), model(x).detach().numpy(), rtol=1e-12)
    _assert_same_state(traced, model, tol=1e-12)
    assert traced.state_dict()["1.num_batches_tracked"] == 3


@pytest.mark.parametrize("make_optimizer", [
    lambda params: dy.optim.SGD(params, lr=0.1),
    lambda params: dy.optim.SGD(params, lr=0.1, momentum=0.9),
    lambda params: dy.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True),
    lambda params: dy.optim.SGD([{"params": params[:2], "lr": 0.2}, {"params": params[2:]}],
                                lr=0.1),
], ids=["sgd", "momentum", "nesterov", "groups"])
def test_n_traced_training_steps_give_the_eager_loops_parameters(make_optimizer):
    criterion = dy.nn.CrossEntropyLoss()
    eager, graphed = _mlp(), _mlp()
    batches = _batches() * 3
    optimizer = make_optimizer(list(eager.parameters()))
    for x, y in batches:
        optimizer.zero_grad()
        loss = criterion(eager(x), y)
        loss.backward()
        optimizer.step()
    traced = dy.trace(lambda x, y: criterion(graphed(x), y), *batches[0], module=graphed)
    step = traced.train_step(make_optimizer(list(graphed.parameters())))
    for x, y in batches:
        graph_loss = step(x, y)
    assert graph_loss == pytest.approx(loss.item(), rel=1e-10)
    _assert_same_state(traced, eager)
    graphed.load_state_dict(traced.state_dict())  # the trained values back into the module
    for (name, a), b in zip(eager.named_parameters(), graphed.parameters()):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-10,
                                   atol=1e-10, err_msg=name)


def test_a_graph_optimizer_and_a_function_of_parameters_train_too():
    w = dy.tensor(RNG.normal(size=(4, 3)), requires_grad=True)
    batches = _batches(3)
    traced = dy.trace(lambda x, y: F.cross_entropy(x @ w, y), *batches[0])
    step = traced.train_step(sg.train.GradientDescentOptimizer(0.5))
    optimizer = dy.optim.SGD([w], lr=0.5)
    for x, y in batches:
        step(x, y)
        optimizer.zero_grad()
        F.cross_entropy(x @ w, y).backward()
        optimizer.step()
    np.testing.assert_allclose(traced.session.read_variable(traced.variables[0]),
                               w.detach().numpy(), rtol=1e-10)
    assert traced.state_dict() == {}  # no module: no module state


def test_momentum_an_eager_optimizer_holds_carries_into_the_graph():
    criterion = dy.nn.CrossEntropyLoss()
    model, twin = _mlp(batch_norm=False), _mlp(batch_norm=False)
    batches = _batches()
    optimizer = dy.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for x, y in batches[:2]:  # two eager steps: the optimizer holds momentum buffers
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    traced = dy.trace(lambda x, y: criterion(model(x), y), *batches[0], module=model)
    step = traced.train_step(optimizer)
    twin.load_state_dict(model.state_dict())
    for x, y in batches[2:]:  # then two graph steps, and the same two eagerly
        step(x, y)
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    _assert_same_state(traced, model)


def test_load_state_dict_puts_the_modules_values_into_the_graph():
    model = _mlp().eval()
    x = dy.tensor(RNG.normal(size=(5, 4)))
    traced = dy.trace(model, x)
    with dy.no_grad():
        model[0].weight.mul_(2)
    traced.load_state_dict(model.state_dict())
    np.testing.assert_allclose(traced(x), model(x).detach().numpy(), rtol=1e-12)
    with pytest.raises(KeyError, match="no variable for"):
        traced.load_state_dict({"fc9.weight": np.zeros(1)})


def test_train_step_errors():
    model = _mlp(batch_norm=False)
    x, y = _batches(1)[0]
    traced = dy.trace(lambda x, y: F.cross_entropy(model(x), y), x, y, module=model)
    with pytest.raises(ValueError, match="none of the optimizer's parameters"):
        traced.train_step(dy.optim.SGD([dy.ones(1, requires_grad=True)], lr=0.1))
    with pytest.raises(TypeError, match="sg.train optimizer or a dy.optim one"):
        traced.train_step("sgd")
    pair = dy.trace(lambda x: (model(x).sum(), model(x)), x, module=model)
    with pytest.raises(TypeError, match="loss="):
        pair.train_step(dy.optim.SGD(model.parameters(), lr=0.1))
    loss = pair.train_step(dy.optim.SGD(model.parameters(), lr=0.1), loss=pair.outputs[0])(x)
    assert np.ndim(loss) == 0


def test_tied_tensors_are_one_variable_and_a_failed_trace_leaves_the_module_as_it_was():
    linear = dy.nn.Linear(3, 3).double()
    model = dy.nn.Sequential(linear, dy.nn.BatchNorm1d(3).double(), linear)
    traced = dy.trace(model, dy.tensor(RNG.normal(size=(4, 3))))
    assert traced.state["0.weight"] is traced.state["2.weight"]
    assert len(traced.variables) == 4  # the linear's two, BatchNorm's two
    model.load_state_dict(traced.state_dict())  # every name, the tied ones too

    bn = model[1]
    mean, shared = bn.running_mean.numpy().copy(), bn.running_mean.detach()

    def fails(x):
        model(x)
        bn.running_var.data = dy.ones(3, dtype=dy.float64) * 7  # another array ...
        raise ValueError("after the buffers were written")

    with pytest.raises(ValueError, match="after the buffers"):
        dy.trace(fails, dy.tensor(RNG.normal(size=(4, 3))), module=model)
    np.testing.assert_array_equal(shared.numpy(), mean)  # ... and the module's is back
    np.testing.assert_array_equal(bn.running_var.numpy(), np.ones(3))
    assert bn.num_batches_tracked.item() == 0  # neither trace's run counted
