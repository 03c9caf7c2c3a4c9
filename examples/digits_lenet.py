"""A small LeNet-style convolutional network on scikit-learn's digits, as 8x8x1 images.

    8x8x1 --conv 3x3, 16 filters, relu--> 8x8x16 --max pool 2x2--> 4x4x16
          --conv 3x3, 32 filters, relu--> 4x4x32 --max pool 2x2--> 2x2x32
          --flatten--> 128 --dense, relu--> 64 --dense--> 10 logits

LeNet-5 read 32x32 images; these are 8x8, so the filters are 3x3 with "same" padding and
there are two pooling steps instead of LeNet's larger strides. sg.layers.conv2d creates each
layer's kernel and bias with get_variable; AdamOptimizer.minimize adds the gradients of the
convolutions and poolings (ordinary graph nodes) and the update ops. About 97-98% of the 450
held-out images come out right.

    pip install ".[examples]"
    python examples/digits_lenet.py
    python examples/digits_lenet.py --epochs 5
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
import _digits  # noqa: E402

import staticgrad as sg  # noqa: E402


def lenet(images):
    """The logits for a batch of [n, 8, 8, 1] images."""
    net = sg.layers.conv2d(images, 16, 3, padding="same", activation=sg.nn.relu, name="conv1")
    net = sg.layers.max_pooling2d(net, 2, 2, name="pool1")
    net = sg.layers.conv2d(net, 32, 3, padding="same", activation=sg.nn.relu, name="conv2")
    net = sg.layers.max_pooling2d(net, 2, 2, name="pool2")
    net = sg.layers.flatten(net)
    net = sg.layers.dense(net, 64, activation=sg.nn.relu, name="fc")
    return sg.layers.dense(net, 10, name="logits")


def main():
    args = _digits.argument_parser(__doc__, epochs=15, lr=0.002).parse_args()
    data = _digits.load(images=True)
    sg.set_random_seed(args.seed)

    images = sg.placeholder(sg.float32, [None, 8, 8, 1], name="images")
    labels = sg.placeholder(sg.int64, [None], name="labels")
    logits = lenet(images)
    loss = sg.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    train_op = sg.train.AdamOptimizer(args.lr).minimize(loss)
    accuracy = _digits.accuracy(logits, labels)

    with sg.Session(backend=args.backend) as sess:
        sess.run(sg.global_variables_initializer())
        _digits.train(sess, train_op, loss, images, labels, data, args, "LeNet")
        test_accuracy = sess.run(accuracy, {images: data.x_test, labels: data.y_test})
    print(f"test accuracy: {test_accuracy:.4f}")


if __name__ == "__main__":
    main()
