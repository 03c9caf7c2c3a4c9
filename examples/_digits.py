"""What the digits examples share: the data, their options, the training loop, accuracy.

scikit-learn's digits are 1797 grey 8x8 images of the digits 0-9 (pixel values 0..16). `load`
splits them once, with a fixed seed, into 1347 training and 450 test images and standardizes
each pixel with the training set's mean and standard deviation.
"""

import argparse
import sys
from typing import NamedTuple

import numpy as np

import staticgrad as sg

NEEDS_SKLEARN = "this example needs scikit-learn: pip install '.[examples]' in the checkout"


class Digits(NamedTuple):
    x_train: np.ndarray  # float32, [1347, 64], or [1347, 8, 8, 1] as images
    y_train: np.ndarray  # int64 labels 0..9
    x_test: np.ndarray
    y_test: np.ndarray


def load(images: bool = False, seed: int = 0) -> Digits:
    """The standardized digits split 75/25 (stratified); as [n, 8, 8, 1] images if `images`.

    Exits with a one-line message when scikit-learn is not installed.
    """
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        sys.exit(NEEDS_SKLEARN)
    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data.astype(np.float32), digits.target.astype(np.int64),
        test_size=0.25, random_state=seed, stratify=digits.target)
    mean = x_train.mean(axis=0)
    std = x_train.std(axis=0)
    std[std == 0] = 1.0  # a few border pixels are always 0
    x_train, x_test = (x_train - mean) / std, (x_test - mean) / std
    if images:
        x_train, x_test = x_train.reshape(-1, 8, 8, 1), x_test.reshape(-1, 8, 8, 1)
    return Digits(x_train, y_train, x_test, y_test)


def argument_parser(doc: str, epochs: int, lr: float) -> argparse.ArgumentParser:
    """Options every digits example takes, with its own defaults; add more, then parse."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=epochs, help="passes over the training set")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=lr, help="learning rate")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the initial weights, dropout masks and batch order")
    parser.add_argument("--backend", default="numpy",
                        help="the session's backend: numpy, or cuda (an NVIDIA GPU, through "
                             "CuPy: pip install '.[cuda]')")
    return parser


def train(sess, train_op, loss, x, labels, data: Digits, args, name: str, feed=None) -> None:
    """The training loop: one `sess.run(train_op)` per minibatch, `args.epochs` times over the
    training set in a fresh random order each time, showing the mean loss of every epoch.

    `x` and `labels` are the placeholders the batches are fed to; `feed` adds more feeds
    (such as `{training: True}`).
    """
    rng = np.random.RandomState(args.seed)
    progress = Progress(args.epochs, name)
    for epoch in progress:
        batch_losses = []
        for xb, yb in minibatches(data.x_train, data.y_train, args.batch_size, rng):
            _, batch_loss = sess.run([train_op, loss], {x: xb, labels: yb, **(feed or {})})
            batch_losses.append(batch_loss)
        progress.show(epoch, float(np.mean(batch_losses)))


def minibatches(x, y, batch_size, rng):
    """One epoch: (x, y) batches of `batch_size` rows in a fresh random order."""
    order = rng.permutation(len(x))
    for start in range(0, len(x), batch_size):
        rows = order[start:start + batch_size]
        yield x[rows], y[rows]


def accuracy(logits, labels):
    """A graph node: the fraction of rows where the largest logit is at the label."""
    correct = sg.equal(sg.argmax(logits, axis=1), labels)
    return sg.reduce_mean(sg.cast(correct, sg.float32), name="accuracy")


class Progress:
    """Iterate over epochs, showing the training loss.

    On a terminal with tqdm installed this is a progress bar; otherwise (no tqdm, or output
    to a file or a pipe as in the tests) a plain line about every fifth of the run.
    """

    def __init__(self, epochs: int, desc: str):
        self.epochs = epochs
        self.bar = None
        if sys.stdout.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                pass
            else:
                self.bar = tqdm(total=epochs, desc=desc, unit="epoch")

    def __iter__(self):
        return iter(range(1, self.epochs + 1))

    def show(self, epoch: int, loss: float) -> None:
        """Report the mean training loss of `epoch` (counted from 1)."""
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
            self.bar.update(1)
            if epoch == self.epochs:
                self.bar.close()
        elif epoch == 1 or epoch % max(1, self.epochs // 5) == 0 or epoch == self.epochs:
            print(f"epoch {epoch:3d}/{self.epochs}: training loss = {loss:.4f}")
