"""A dense autoencoder of MNIST digits (784 -> 256 -> 128 -> 256 -> 784), written as a TF1
program, trained with RMSProp on the squared reconstruction error.

    python autoencoder.py --fake_data --training_epochs=2

It prints the loss every `display_step` epochs, then the mean squared error on the test
images next to that of the trivial reconstruction, each pixel's training mean.
"""

import input_data
import numpy as np

import staticgrad as tf

flags = tf.app.flags
flags.DEFINE_boolean("fake_data", False, "use the stand-in digits instead of MNIST's files")
flags.DEFINE_string("data_dir", "/tmp/mnist/input_data", "where MNIST's four files are")
flags.DEFINE_integer("training_epochs", 20, "passes over the training images")
flags.DEFINE_integer("batch_size", 256, "images per step")
flags.DEFINE_float("learning_rate", 0.01, "RMSProp's learning rate")
flags.DEFINE_integer("display_step", 1, "print the loss every this many epochs")
FLAGS = flags.FLAGS

n_hidden_1 = 256
n_hidden_2 = 128
n_input = 784


def encoder(x, weights, biases):
    with tf.name_scope("encoder"):
        layer_1 = tf.nn.sigmoid(tf.add(tf.matmul(x, weights["encoder_h1"]),
                                       biases["encoder_b1"]))
        return tf.nn.sigmoid(tf.add(tf.matmul(layer_1, weights["encoder_h2"]),
                                    biases["encoder_b2"]))


def decoder(x, weights, biases):
    with tf.name_scope("decoder"):
        layer_1 = tf.nn.sigmoid(tf.add(tf.matmul(x, weights["decoder_h1"]),
                                       biases["decoder_b1"]))
        return tf.nn.sigmoid(tf.add(tf.matmul(layer_1, weights["decoder_h2"]),
                                    biases["decoder_b2"]))


def main(_):
    mnist = input_data.read_data_sets(FLAGS.data_dir, one_hot=True, fake_data=FLAGS.fake_data)
    tf.set_random_seed(0)
    X = tf.placeholder("float", [None, n_input])
    weights = {
        "encoder_h1": tf.Variable(tf.random_normal([n_input, n_hidden_1], stddev=0.1)),
        "encoder_h2": tf.Variable(tf.random_normal([n_hidden_1, n_hidden_2], stddev=0.1)),
        "decoder_h1": tf.Variable(tf.random_normal([n_hidden_2, n_hidden_1], stddev=0.1)),
        "decoder_h2": tf.Variable(tf.random_normal([n_hidden_1, n_input], stddev=0.1)),
    }
    biases = {
        "encoder_b1": tf.Variable(tf.zeros([n_hidden_1])),
        "encoder_b2": tf.Variable(tf.zeros([n_hidden_2])),
        "decoder_b1": tf.Variable(tf.zeros([n_hidden_1])),
        "decoder_b2": tf.Variable(tf.zeros([n_input])),
    }
    y_pred = decoder(encoder(X, weights, biases), weights, biases)
    y_true = X
    cost = tf.reduce_mean(tf.pow(y_true - y_pred, 2))
    optimizer = tf.train.RMSPropOptimizer(FLAGS.learning_rate).minimize(cost)
    init = tf.global_variables_initializer()

    with tf.Session() as sess:
        sess.run(init)
        total_batch = mnist.train.num_examples // FLAGS.batch_size
        for epoch in range(FLAGS.training_epochs):
            for _ in range(total_batch):
                batch_xs, _ = mnist.train.next_batch(FLAGS.batch_size)
                _, c = sess.run([optimizer, cost], feed_dict={X: batch_xs})
            if epoch % FLAGS.display_step == 0:
                print("Epoch:", "%04d" % (epoch + 1), "cost=", "{:.9f}".format(c))
        print("Optimization Finished!")
        test_cost = sess.run(cost, feed_dict={X: mnist.test.images})
        mean_image = np.mean(mnist.train.images, axis=0)
        baseline = np.mean((mnist.test.images - mean_image) ** 2)
        print("Test reconstruction error: %.6f (each pixel's mean: %.6f)" % (test_cost, baseline))


if __name__ == "__main__":
    tf.app.run()
