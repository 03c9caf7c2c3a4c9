"""Convolutional training on the CPU against TF1 (`compat.v1`) and PyTorch eager (issue 27).

Two models at batch 128 on 28x28x1 inputs, float32, NHWC (PyTorch: NCHW, its own layout):

  lenet  conv 5x5 32 relu, max pool 2x2/2, conv 5x5 64 relu, max pool, dense 1024 relu,
         dense 10 (TF's classic "deep MNIST" network, without its dropout)
  cnn3   conv 3x3 32 relu, max pool, conv 3x3 64 relu, max pool, conv 3x3 128 relu,
         max pool, dense 10

Convolutions are stride 1 "SAME", pools 2x2 stride 2 "SAME"; the step is softmax
cross-entropy and plain gradient descent. Ways, interleaved round by round in one process
(each after a rest, so that the previous way's spinning thread pools stop):

  sg fast    staticgrad with the [fast] extra: conv_fast's numba loops around OpenBLAS
  sg numpy   staticgrad on NumPy alone: runtime_conv's kernels, no vector math
  tf1        tf.compat.v1 Session (oneDNN), intra_op_parallelism_threads=2, inter_op=2
  torch      PyTorch eager on the CPU, torch.set_num_threads(2)

**Layers**: each kernel of each layer alone, on the layer's shapes: conv forward, its input
gradient (`di`) and filter gradient (`dw`), max pooling forward and gradient, and average
pooling forward and gradient on the first pool's shape. staticgrad and TF1 run one graph per
kernel with its inputs in variables (TF1 runs the op without fetching it); PyTorch calls the
ATen kernels its autograd calls (convolution_backward with one output asked for,
max_pool2d_with_indices_backward with the indices from the forward pass).

**Steps**: one training step of each model, the same initial weights in every system; the
first step's losses are checked to agree before timing.

Reported: median milliseconds over the rounds and each way's ratio to tf1, the machine's load
average before and after. Absolute times depend on the machine and its load; compare ratios.

    python benchmarks/bench_conv.py                    # layers and steps, 5 rounds
    python benchmarks/bench_conv.py --only steps --rounds 9
"""

import _harness

_harness.limit_threads()  # before NumPy is imported

import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
import staticgrad as sg  # noqa: E402
from staticgrad.backends.numpy import conv_fast  # noqa: E402
from staticgrad.ops import conv_ops  # noqa: E402 (MaxPoolGrad, AvgPoolGrad by themselves)

DEFAULT_OUT = os.path.join(ROOT, "benchmarks", "results", "conv.json")
BATCH, SIZE = 128, 28
# per conv layer: (input height and width, in channels, out channels, kernel); a 2x2/2 max
# pool follows each; then the dense layers' widths (the last one the 10 logits)
MODELS = {"lenet": ([(28, 1, 32, 5), (14, 32, 64, 5)], [1024, 10]),
          "cnn3": ([(28, 1, 32, 3), (14, 32, 64, 3), (7, 64, 128, 3)], [10])}
WAYS = ("sg fast", "sg numpy", "tf1", "torch")


def import_peers():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    import torch

    torch.set_num_threads(2)
    return tf.compat.v1, torch


def numpy_only(call):
    """`call` with conv_fast's numba loops switched off (they are on for the whole process
    otherwise): the kernels then fall back to runtime_conv's, as where numba is missing."""
    def run(*args):
        saved = dict(conv_fast._state)
        conv_fast._state.clear()
        conv_fast._state["why"] = "switched off by bench_conv.py"
        try:
            return call(*args)
        finally:
            conv_fast._state.clear()
            conv_fast._state.update(saved)
    return run


def sg_sessions(graph):
    return {"sg fast": sg.Session(graph=graph),
            "sg numpy": sg.Session(graph=graph, options=sg.CompileOptions(vector_math=False))}


def tf_session(tf1, graph):
    config = tf1.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=2)
    return tf1.Session(graph=graph, config=config)


# -- layers --------------------------------------------------------------------------------------

def layer_cases():
    """(name, {input name: array}, kernel) for every kernel of every layer."""
    rng = np.random.default_rng(0)
    cases = []

    def arr(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    for model, (convs, _) in MODELS.items():
        for i, (hw, c, o, k) in enumerate(convs):
            name = f"{model} conv{i + 1} {hw}x{hw}x{c}->{o} {k}x{k}"
            x, w, dy = arr(BATCH, hw, hw, c), arr(k, k, c, o) * 0.1, arr(BATCH, hw, hw, o)
            cases += [(f"{name} fwd", {"x": x, "w": w}, "conv"),
                      (f"{name} di", {"w": w, "dy": dy, "shape": x.shape}, "conv_di"),
                      (f"{name} dw", {"x": x, "dy": dy, "shape": w.shape}, "conv_dw")]
            out = -(-hw // 2)
            name = f"{model} pool{i + 1} {hw}x{hw}x{o}"
            x, dy = arr(BATCH, hw, hw, o), arr(BATCH, out, out, o)
            cases += [(f"{name} max fwd", {"x": x}, "max"),
                      (f"{name} max grad", {"x": x, "dy": dy}, "max_grad")]
            if i == 0 and model == "cnn3":
                cases += [(f"{name} avg fwd", {"x": x}, "avg"),
                          (f"{name} avg grad", {"x": x, "dy": dy}, "avg_grad")]
    return cases


def graph_kernel(api, kind, v):
    """The kernel `kind` in TF1's API (`api` is staticgrad or tf.compat.v1) on variables."""
    one, two, same = [1, 1, 1, 1], [1, 2, 2, 1], "SAME"
    if kind == "conv":
        return api.nn.conv2d(v["x"], v["w"], one, same)
    if kind == "conv_di":
        return api.nn.conv2d_backprop_input(v["shape"], v["w"], v["dy"], one, same)
    if kind == "conv_dw":
        return api.nn.conv2d_backprop_filter(v["x"], v["shape"], v["dy"], one, same)
    if kind in ("max", "avg"):
        return (api.nn.max_pool if kind == "max" else api.nn.avg_pool)(v["x"], two, two, same)
    if kind == "max_grad":
        return api.raw_ops.MaxPoolGrad(orig_input=v["x"], orig_output=v["y"], grad=v["dy"],
                                       ksize=two, strides=two, padding=same) \
            if api is not sg else conv_ops.max_pool_grad(v["x"], v["y"], v["dy"], two, two, same)
    return api.raw_ops.AvgPoolGrad(orig_input_shape=v["x"].shape, grad=v["dy"], ksize=two,
                                   strides=two, padding=same) \
        if api is not sg else conv_ops.avg_pool_grad(v["x"].shape, v["dy"], two, two, same)


def graph_ways(api, kind, arrays, make_sessions):
    """{way: callable} running the kernel in `api`'s graph mode, and its result per way."""
    graph = (sg.Graph if api is sg else api.Graph)()
    with graph.as_default():
        v = {k: a if k == "shape" else api.Variable(a, name=k) for k, a in arrays.items()}
        if kind == "max_grad":
            v["y"] = api.Variable(max_pool_nhwc(arrays["x"]), name="y")
        if kind == "avg_grad":
            v["x"] = np.zeros(arrays["x"].shape, np.float32)  # only its shape is read
        out = graph_kernel(api, kind, v)
        init = api.global_variables_initializer()
    ways, results = {}, {}
    for way, sess in make_sessions(graph).items():
        sess.run(init)
        fetch = (lambda sess=sess: sess.run(out))
        results[way] = (numpy_only(fetch) if way == "sg numpy" else fetch)()
        # TF1 runs the op without copying its result out; staticgrad's result is not copied
        call = sess.make_callable(out.op if api is not sg else out)
        ways[way] = numpy_only(call) if way == "sg numpy" else call
    return ways, results


def max_pool_nhwc(x):
    n, h, w, c = x.shape
    padded = np.full((n, h + h % 2, w + w % 2, c), -np.inf, np.float32)
    padded[:, :h, :w] = x
    return padded.reshape(n, padded.shape[1] // 2, 2, padded.shape[2] // 2, 2, c).max((2, 4))


def torch_way(torch, kind, arrays):
    """A callable running the kernel as PyTorch's eager autograd would, NCHW."""
    aten, F = torch.ops.aten, torch.nn.functional

    def nchw(a):
        return torch.from_numpy(np.ascontiguousarray(a.transpose(0, 3, 1, 2)))

    if kind.startswith("conv"):
        w = arrays.get("w", np.zeros(arrays.get("shape", (1,)), np.float32))
        k = w.shape[0]
        x = nchw(arrays["x"]) if "x" in arrays else torch.zeros(arrays["shape"]).permute(0, 3,
                                                                                       1, 2)
        wt = torch.from_numpy(np.ascontiguousarray(w.transpose(3, 2, 0, 1)))
        if kind == "conv":
            return lambda: F.conv2d(x, wt, padding=k // 2)
        dy, mask = nchw(arrays["dy"]), [kind == "conv_di", kind == "conv_dw", False]
        x = x.contiguous()
        return lambda: aten.convolution_backward(dy, x, wt, None, [1, 1], [k // 2] * 2, [1, 1],
                                                 False, [0, 0], 1, mask)
    x = nchw(arrays["x"])
    ceil = x.shape[2] % 2 == 1  # TF's SAME pads the odd row and column at the end
    if kind == "max":
        return lambda: F.max_pool2d(x, 2, 2, ceil_mode=ceil)
    if kind == "avg":
        return lambda: F.avg_pool2d(x, 2, 2, ceil_mode=ceil)
    dy = nchw(arrays["dy"])
    if kind == "max_grad":
        _, index = F.max_pool2d(x, 2, 2, ceil_mode=ceil, return_indices=True)
        return lambda: aten.max_pool2d_with_indices_backward(dy, x, [2, 2], [2, 2], [0, 0],
                                                             [1, 1], ceil, index)
    return lambda: aten.avg_pool2d_backward(dy, x, [2, 2], [2, 2], [0, 0], ceil, True, None)


def layer_ways(tf1, torch, kind, arrays):
    ways, results = graph_ways(sg, kind, arrays, sg_sessions)
    tf_ways, tf_results = graph_ways(tf1, kind, arrays, lambda g: {"tf1": tf_session(tf1, g)})
    for way, result in results.items():
        if not np.allclose(result, tf_results["tf1"], rtol=1e-3, atol=1e-3):
            raise AssertionError(f"{kind}: {way} differs from tf1")
    return {**ways, **tf_ways, "torch": torch_way(torch, kind, arrays)}


# -- training steps ------------------------------------------------------------------------------

def initial_weights(model, seed=0):
    rng = np.random.default_rng(seed)
    convs, dense = MODELS[model]
    weights = []
    for _, c, o, k in convs:
        weights += [rng.normal(0, (2 / (k * k * c)) ** 0.5, (k, k, c, o)).astype(np.float32),
                    np.zeros(o, np.float32)]
    width = (-(-SIZE // 2 ** len(convs))) ** 2 * convs[-1][2]
    for units in dense:
        weights += [rng.normal(0, (2 / width) ** 0.5, (width, units)).astype(np.float32),
                    np.zeros(units, np.float32)]
        width = units
    return weights


def graph_step(api, model, weights):
    """(graph, images, labels, loss, train_op) of one SGD step, in TF1's API."""
    graph = (sg.Graph if api is sg else api.Graph)()
    with graph.as_default():
        images = api.placeholder(np.float32, [BATCH, SIZE, SIZE, 1], name="images")
        labels = api.placeholder(np.int64, [BATCH], name="labels")
        v = [api.Variable(w) for w in weights]
        net, n_convs = images, len(MODELS[model][0])
        for i in range(n_convs):
            net = api.nn.relu(api.nn.bias_add(api.nn.conv2d(net, v[2 * i], [1, 1, 1, 1], "SAME"),
                                              v[2 * i + 1]))
            net = api.nn.max_pool(net, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        net = api.reshape(net, [BATCH, -1])
        dense = v[2 * n_convs:]
        for j in range(0, len(dense), 2):
            net = api.matmul(net, dense[j]) + dense[j + 1]
            if j + 2 < len(dense):
                net = api.nn.relu(net)
        loss = api.reduce_mean(api.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                               logits=net))
        train = api.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = api.global_variables_initializer()
    return graph, images, labels, loss, train, init


def torch_step(torch, model, weights):
    """(step function, first loss) of the same model and SGD step, NCHW."""
    convs, _ = MODELS[model]
    params = []
    for w in weights:
        w = w.transpose(3, 2, 0, 1) if w.ndim == 4 else w
        params.append(torch.tensor(np.ascontiguousarray(w), requires_grad=True))
    F = torch.nn.functional

    def loss_of(x, y):
        net = x
        for i in range(len(convs)):
            net = F.relu(F.conv2d(net, params[2 * i], params[2 * i + 1],
                                  padding=convs[i][3] // 2))
            net = F.max_pool2d(net, 2, 2, ceil_mode=net.shape[2] % 2 == 1)
        net = net.permute(0, 2, 3, 1).reshape(BATCH, -1)  # TF's (NHWC) flattening order
        dense = params[2 * len(convs):]
        for j in range(0, len(dense), 2):
            net = net @ dense[j] + dense[j + 1]
            if j + 2 < len(dense):
                net = F.relu(net)
        return F.cross_entropy(net, y)

    def step(x, y):
        # torch.optim.SGD's update, written out: the optimizer imports triton, whose LLVM
        # crashes a process that has numba's loaded
        loss = loss_of(x, y)
        loss.backward()
        with torch.no_grad():
            torch._foreach_add_(params, [p.grad for p in params], alpha=-0.01)
        for p in params:
            p.grad = None
        return loss

    return step


def step_ways(tf1, torch, model):
    rng = np.random.default_rng(1)
    x = rng.random((BATCH, SIZE, SIZE, 1), dtype=np.float32)
    y = rng.integers(0, 10, BATCH)
    weights = initial_weights(model)
    ways, first = {}, {}
    for api, sessions in ((sg, sg_sessions), (tf1, lambda g: {"tf1": tf_session(tf1, g)})):
        graph, images, labels, loss, train, init = graph_step(api, model, weights)
        for way, sess in sessions(graph).items():
            sess.run(init)
            call = sess.make_callable([loss, train], [images, labels])
            call = numpy_only(call) if way == "sg numpy" else call
            first[way] = float(call(x, y)[0])
            ways[way] = (lambda call=call: call(x, y))
    step = torch_step(torch, model, weights)
    xt, yt = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2))), torch.from_numpy(y)
    first["torch"] = float(step(xt, yt))
    ways["torch"] = lambda: step(xt, yt)
    if not np.allclose(list(first.values()), first["tf1"], rtol=1e-4):
        raise AssertionError(f"{model}: first losses differ: {first}")
    return ways


# -- main ----------------------------------------------------------------------------------------

def report(name, per_call, rows):
    median, ratio = _harness.medians_and_ratios(per_call, base="tf1")
    rows[name] = {"ms": {w: 1e3 * m for w, m in median.items()}, "vs_tf1": ratio,
                  "rounds_ms": {w: [1e3 * t for t in v] for w, v in per_call.items()}}
    cells = "  ".join(f"{w} {1e3 * median[w]:7.2f} ({ratio[w]:.2f}x)" for w in WAYS)
    print(f"{name:42s} {cells}", flush=True)


def main():
    parser = _harness.timing_arguments(__doc__, 3, "calls", DEFAULT_OUT)
    parser.add_argument("--only", choices=("layers", "steps"), help="one part only")
    parser.set_defaults(rounds=5)
    args = parser.parse_args()
    tf1, torch = import_peers()
    tf1.disable_eager_execution()
    if not conv_fast.available():
        print(f"warning: conv_fast's numba loops are off ({conv_fast.why_not()}): "
              "'sg fast' is 'sg numpy'")
    load = [os.getloadavg()]
    print(f"median ms per call (ratio to tf1); load average {load[0][0]:.2f}")
    results = {"layers": {}, "steps": {}}
    if args.only in (None, "layers"):
        for name, arrays, kind in layer_cases():
            ways = layer_ways(tf1, torch, kind, arrays)
            per_call = _harness.time_interleaved(ways, args.rounds, args.number, warmup=2,
                                                 scale=1.0, settle_s=0.05)
            report(name, per_call, results["layers"])
    if args.only in (None, "steps"):
        for model in MODELS:
            ways = step_ways(tf1, torch, model)
            per_call = _harness.time_interleaved(ways, args.rounds, args.number, warmup=2,
                                                 scale=1.0, settle_s=0.05)
            report(f"{model} training step", per_call, results["steps"])
    load.append(os.getloadavg())
    print(f"load average after: {load[1][0]:.2f}")
    env = _harness.environment(with_platform=True, threads=_harness.THREAD_VARS)
    env.update({"tensorflow": tf1.VERSION if hasattr(tf1, "VERSION") else "",
                "torch": torch.__version__, "numba_loops": conv_fast.why_not() or "on",
                "load_average_before_after": load, "cpus": os.cpu_count()})
    _harness.write_json(args.out, {"environment": env, "rounds": args.rounds,
                                   "number": args.number, **results})


if __name__ == "__main__":
    main()
