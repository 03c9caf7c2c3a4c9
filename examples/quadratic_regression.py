"""Fit y = w * x**2 + b to noisy data, TF1-style: declare the graph, then train it in a Session.

The regression of seed article 003 ("backward() ... update the parameters by hand"): 100
points x in [-1, 1], y = 3 x**2 + 2 + 0.2 * uniform[0, 1) noise, a model w * x**2 + b with
w ~ N(0, 1) and b = 0, the summed squared error, plain gradient descent with learning rate
0.001 for 800 steps. The article's PyTorch loop ends at w = 2.9668, b = 2.1138. This
example draws its own noise (NumPy's RandomState(100).rand, not the article's torch.rand
draw), so it ends near those numbers, not on them; examples/course/seed003_regression_*.py
use the article's exact draw and print them. The noise has mean 0.1, so b lands near 2.1
rather than 2.

Where the article calls loss.backward() and updates w and b itself, here
GradientDescentOptimizer.minimize adds the gradient and the update ops to the graph once, and
each sess.run(train_op, feed) runs them. Afterwards a Saver writes w and b to disk and a fresh
session restores them.

    python examples/quadratic_regression.py                  # also writes quadratic_regression.png
    python examples/quadratic_regression.py --steps 200 --no-plot --save-dir /tmp/quad
"""

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
import staticgrad as sg  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=800, help="gradient descent steps")
    parser.add_argument("--lr", type=float, default=0.001, help="learning rate")
    parser.add_argument("--plot", default="quadratic_regression.png",
                        help="where to write the plot (PNG)")
    parser.add_argument("--no-plot", action="store_true", help="do not draw the plot")
    parser.add_argument("--save-dir", default=None,
                        help="checkpoint directory (default: a new temporary directory)")
    return parser.parse_args()


def make_data(seed=100):
    """The article's data: x is 100 x 1, evenly spaced in [-1, 1]; y = 3 x^2 + 2 + noise."""
    rng = np.random.RandomState(seed)
    x = np.linspace(-1, 1, 100, dtype=np.float32).reshape(100, 1)
    y = 3 * x**2 + 2 + 0.2 * rng.rand(100, 1).astype(np.float32)
    return x, y


def plot(path, x_data, y_data, w, b, losses):
    """Data and fitted curve on the left, the loss per step on the right."""
    try:
        import matplotlib
    except ImportError:
        print("plot skipped: matplotlib is not installed "
              "(pip install '.[examples]' in the checkout)")
        return
    matplotlib.use("Agg")  # draw to a file; no window needed
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.scatter(x_data, y_data, s=10, label="data")
    left.plot(x_data, w * x_data**2 + b, "r-", label=f"fit: {w:.3f} x² + {b:.3f}")
    left.set_xlabel("x")
    left.set_ylabel("y")
    left.legend()
    right.plot(np.arange(1, len(losses) + 1), losses)
    right.set_xlabel("step")
    right.set_ylabel("summed squared error")
    right.set_yscale("log")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print(f"plot written to {path}")


def main():
    args = parse_args()
    x_data, y_data = make_data()

    # 1. Declare the graph. Nothing is computed yet.
    sg.set_random_seed(100)
    x = sg.placeholder(sg.float32, [None, 1], name="x")
    y = sg.placeholder(sg.float32, [None, 1], name="y")
    w = sg.Variable(sg.random_normal([1, 1]), name="w")
    b = sg.Variable(sg.zeros([1, 1]), name="b")
    y_pred = w * sg.square(x) + b
    loss = sg.reduce_sum(sg.square(y - y_pred), name="loss")
    train_op = sg.train.GradientDescentOptimizer(args.lr).minimize(loss)
    saver = sg.train.Saver([w, b])

    # 2. Train: each run of train_op computes the gradients and updates w and b.
    feed = {x: x_data, y: y_data}
    losses = []
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        print(f"initial w = {sess.run(w)[0, 0]:.4f}, b = {sess.run(b)[0, 0]:.4f}")
        for step in range(1, args.steps + 1):
            _, loss_value = sess.run([train_op, loss], feed)
            losses.append(float(loss_value))
            if step == 1 or step % 100 == 0 or step == args.steps:
                print(f"step {step:4d}: loss = {loss_value:.4f}")
        w_fit, b_fit = (float(v[0, 0]) for v in sess.run([w, b]))
        print(f"fitted w = {w_fit:.4f}, b = {b_fit:.4f}  (data: w = 3, b = 2 + mean noise 0.1)")

        save_dir = args.save_dir or tempfile.mkdtemp(prefix="quadratic_regression-")
        os.makedirs(save_dir, exist_ok=True)  # as in TF1, the Saver does not create folders
        path = saver.save(sess, os.path.join(save_dir, "model"))
        print(f"saved to {path}")

    # 3. A fresh session knows the graph but not the trained values; restore them.
    with sg.Session() as sess:
        saver.restore(sess, path)
        w_restored, b_restored = (float(v[0, 0]) for v in sess.run([w, b]))
        print(f"restored w = {w_restored:.4f}, b = {b_restored:.4f}")
        same = (w_restored, b_restored) == (w_fit, b_fit)
        print(f"restored values equal the trained ones: {same}")

    if args.no_plot:
        print("plot skipped: --no-plot")
    else:
        plot(args.plot, x_data, y_data, w_fit, b_fit, losses)


if __name__ == "__main__":
    main()
