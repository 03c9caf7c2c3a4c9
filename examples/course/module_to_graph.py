"""From module to static graph: an `nn.Module` MLP trained define-by-run, then traced once into
a define-then-run graph and trained there, with the speed-up measured.

The model is written once, as a PyTorch-style module (16-64-64-4, ReLU) on a synthetic
dataset (points labelled by a linear teacher, in mini-batches from dy.utils.data). Two copies
start from the same weights:

- eager: each step records a tape (forward), walks it (`loss.backward()`) and updates the
  parameters (`dy.optim.SGD`'s `step()`);
- graph: `dy.trace` runs the loss of the module once and records it into a graph, whose
  variables are the module's parameters (named by `state_dict`); `traced.train_step` adds the
  gradients and SGD's update (its rule written as graph ops, the same arithmetic; Adam,
  RMSprop and Adagrad go the same way) and compiles the step once; each step is then one run
  of the compiled code.

Both train on the same batches in the same order, and the rounds alternate (an epoch eager,
then the same epoch in the graph), so that the two are timed under the same conditions and
stay in step: each round prints both losses, and at the end the graph's trained values go
back into the module (`model.load_state_dict(traced.state_dict())`) and are compared with
the eager ones. The first round is a warm-up (the graph compiles in it) and is not timed;
steps per second is the median over the other rounds. NumPy's threads are limited to 2, as
in benchmarks/.

    python examples/course/module_to_graph.py
    python examples/course/module_to_graph.py --rounds 3
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "2")  # before NumPy is imported

import argparse  # noqa: E402
import time  # noqa: E402

import _course  # noqa: E402, F401  (puts the checkout on sys.path)
import numpy as np  # noqa: E402

import staticgrad.dynamic as dy  # noqa: E402
from staticgrad.dynamic import nn  # noqa: E402
from staticgrad.dynamic.utils.data import DataLoader, TensorDataset  # noqa: E402


class MLP(nn.Module):
    def __init__(self, sizes=(16, 64, 64, 4)):
        super().__init__()
        self.fc1 = nn.Linear(sizes[0], sizes[1])
        self.fc2 = nn.Linear(sizes[1], sizes[2])
        self.out = nn.Linear(sizes[2], sizes[3])

    def forward(self, x):
        h = nn.functional.relu(self.fc1(x))
        h = nn.functional.relu(self.fc2(h))
        return self.out(h)


def synthetic_batches(points=1024, features=16, classes=4, batch_size=64):
    """Points from a normal distribution, labelled by the argmax of a random linear map, in
    fixed mini-batches (the same for both ways)."""
    rng = np.random.RandomState(0)
    x = rng.randn(points, features).astype(np.float32)
    labels = np.argmax(x @ rng.randn(features, classes), axis=1)
    dataset = TensorDataset(dy.tensor(x), dy.tensor(labels))
    return list(DataLoader(dataset, batch_size=batch_size)), (x, labels)


def accuracy(model, x, labels):
    with dy.no_grad():
        return float((model(dy.tensor(x)).argmax(dim=1).numpy() == labels).mean())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=8,
                        help="epochs, each way in turn (the first is a warm-up)")
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()

    batches, (x_all, labels_all) = synthetic_batches()
    criterion = nn.CrossEntropyLoss()
    dy.manual_seed(0)
    eager = MLP()
    model = MLP()
    model.load_state_dict(eager.state_dict())  # the same start
    print(f"model: {eager}")
    print(f"data: {len(x_all)} points in {len(batches)} batches of {len(batches[0][0])}")

    optimizer = dy.optim.SGD(eager.parameters(), lr=args.lr)

    def eager_epoch():
        for x, y in batches:
            optimizer.zero_grad()
            loss = criterion(eager(x), y)
            loss.backward()
            optimizer.step()
        return loss.item()

    start = time.perf_counter()
    traced = dy.trace(lambda x, y: criterion(model(x), y), *batches[0], module=model)
    step = traced.train_step(dy.optim.SGD(model.parameters(), lr=args.lr))
    print(f"traced: {traced}, variables {list(traced.state)}")
    print(f"trace and build the training step: {(time.perf_counter() - start) * 1e3:.1f} ms")

    def graph_epoch():
        for x, y in batches:
            loss = step(x, y)
        return float(loss)

    times = {"eager": [], "graph": []}
    for epoch in range(1, args.rounds + 1):
        losses = {}
        for way, run in (("eager", eager_epoch), ("graph", graph_epoch)):
            begin = time.perf_counter()
            losses[way] = run()
            times[way].append(time.perf_counter() - begin)
        print(f"epoch {epoch:2d}: last batch loss eager {losses['eager']:.6f}, "
              f"graph {losses['graph']:.6f}")
    warm_up = {way: t.pop(0) for way, t in times.items()}  # the graph compiled in epoch 1
    print(f"epoch 1 (warm-up, not in the rates; the graph compiles in it): eager "
          f"{warm_up['eager'] * 1e3:.1f} ms, graph {warm_up['graph'] * 1e3:.1f} ms")

    model.load_state_dict(traced.state_dict())  # the graph's trained values, into the module
    difference = max(float(np.abs(a.detach().numpy() - b.detach().numpy()).max())
                     for a, b in zip(eager.parameters(), model.parameters()))
    steps = args.rounds * len(batches)
    print(f"after {steps} steps: max |eager - graph| over the parameters = {difference:.3g}")
    print(f"accuracy: eager {accuracy(eager, x_all, labels_all):.4f}, "
          f"graph {accuracy(model, x_all, labels_all):.4f}")
    if times["eager"]:
        rate = {way: len(batches) / float(np.median(t)) for way, t in times.items()}
        print(f"steps per second (median of {len(times['eager'])} epochs, interleaved): "
              f"eager {rate['eager']:.1f}, graph {rate['graph']:.1f}; "
              f"speed-up graph / eager = {rate['graph'] / rate['eager']:.2f}x")


if __name__ == "__main__":
    main()
