"""A two-hidden-layer perceptron on scikit-learn's 8x8 digits, with dropout and Adam.

64 pixels -> 128 relu -> 64 relu -> 10 logits, built from sg.layers.dense. Dropout is active
only while training: a boolean placeholder `training` (False unless fed) switches it, so one
graph serves training and evaluation -- the TF1 idiom. AdamOptimizer.minimize adds the
gradients and Adam's update ops to the graph; each minibatch is one sess.run of them.
Seeds are fixed (sg.set_random_seed for the initial weights and the dropout masks, a NumPy
RandomState for the batch order), so every run prints the same numbers: about 97.5% of the
450 held-out images right.

    pip install ".[examples]"
    python examples/digits_mlp.py
    python examples/digits_mlp.py --epochs 10 --dropout 0
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
import _digits  # noqa: E402

import staticgrad as sg  # noqa: E402


def main():
    parser = _digits.argument_parser(__doc__, epochs=30, lr=0.001)
    parser.add_argument("--dropout", type=float, default=0.2,
                        help="fraction of hidden units dropped while training")
    args = parser.parse_args()
    data = _digits.load()
    sg.set_random_seed(args.seed)

    x = sg.placeholder(sg.float32, [None, 64], name="x")
    labels = sg.placeholder(sg.int64, [None], name="labels")
    training = sg.placeholder_with_default(False, [], name="training")

    hidden = sg.layers.dense(x, 128, activation=sg.nn.relu, name="hidden1")
    hidden = sg.layers.dropout(hidden, rate=args.dropout, training=training)
    hidden = sg.layers.dense(hidden, 64, activation=sg.nn.relu, name="hidden2")
    hidden = sg.layers.dropout(hidden, rate=args.dropout, training=training)
    logits = sg.layers.dense(hidden, 10, name="logits")

    loss = sg.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    train_op = sg.train.AdamOptimizer(args.lr).minimize(loss)
    accuracy = _digits.accuracy(logits, labels)

    with sg.Session(backend=args.backend) as sess:
        sess.run(sg.global_variables_initializer())
        _digits.train(sess, train_op, loss, x, labels, data, args, "MLP", feed={training: True})
        # `training` is not fed here: it defaults to False, so dropout is off.
        test_accuracy = sess.run(accuracy, {x: data.x_test, labels: data.y_test})
    print(f"test accuracy: {test_accuracy:.4f}")


if __name__ == "__main__":
    main()
