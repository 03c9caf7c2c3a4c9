"""Multinomial logistic regression on scikit-learn's 8x8 digits, TF1-style.

The model is one matrix and one bias: logits = x @ W + b, 64 pixels -> 10 classes, trained
with the softmax cross-entropy and plain minibatch gradient descent. The graph is declared
once; every minibatch is one sess.run of the training op with a different feed (the loop is
`train` in examples/_digits.py). It gets about 97% of the 450 held-out images right.

    pip install ".[examples]"
    python examples/digits_logistic.py
    python examples/digits_logistic.py --epochs 10 --lr 0.05
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
import _digits  # noqa: E402

import staticgrad as sg  # noqa: E402


def main():
    args = _digits.argument_parser(__doc__, epochs=30, lr=0.1).parse_args()
    data = _digits.load()

    # The graph: placeholders for a batch, the two variables, the loss and the training op.
    x = sg.placeholder(sg.float32, [None, 64], name="x")
    labels = sg.placeholder(sg.int64, [None], name="labels")
    W = sg.Variable(sg.zeros([64, 10]), name="W")
    b = sg.Variable(sg.zeros([10]), name="b")
    logits = sg.matmul(x, W) + b
    loss = sg.reduce_mean(
        sg.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits),
        name="loss")
    train_op = sg.train.GradientDescentOptimizer(args.lr).minimize(loss)
    accuracy = _digits.accuracy(logits, labels)

    # Run it: initialize W and b, train, then measure on the held-out images.
    with sg.Session(backend=args.backend) as sess:
        sess.run(sg.global_variables_initializer())
        _digits.train(sess, train_op, loss, x, labels, data, args, "logistic regression")
        test_accuracy = sess.run(accuracy, {x: data.x_test, labels: data.y_test})
    print(f"test accuracy: {test_accuracy:.4f}")


if __name__ == "__main__":
    main()
