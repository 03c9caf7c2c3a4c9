"""A two-layer MNIST classifier with TensorBoard summaries, written as a TF1 program.

    python mnist_summaries.py --fake_data --max_steps=200 --log_dir=/tmp/mnist_logs
    tensorboard --logdir=/tmp/mnist_logs

Every 10th step it measures the test accuracy and writes the test summaries; the other steps
train and write the training summaries (the loss, the weights' histograms, a few images).
At the end it saves a checkpoint in the log folder and prints the final test accuracy.
"""

import os

import input_data

import staticgrad as tf

flags = tf.app.flags
flags.DEFINE_boolean("fake_data", False, "use the stand-in digits instead of MNIST's files")
flags.DEFINE_integer("max_steps", 1000, "training steps")
flags.DEFINE_float("learning_rate", 0.001, "Adam's learning rate")
flags.DEFINE_float("dropout", 0.9, "probability of keeping a hidden unit while training")
flags.DEFINE_string("data_dir", "/tmp/mnist/input_data", "where MNIST's four files are")
flags.DEFINE_string("log_dir", "/tmp/mnist/logs/mnist_with_summaries", "summaries go here")
FLAGS = flags.FLAGS


def variable_summaries(var):
    """Mean, standard deviation, extremes and a histogram of a tensor."""
    with tf.name_scope("summaries"):
        mean = tf.reduce_mean(var)
        tf.summary.scalar("mean", mean)
        with tf.name_scope("stddev"):
            stddev = tf.sqrt(tf.reduce_mean(tf.square(var - mean)))
        tf.summary.scalar("stddev", stddev)
        tf.summary.scalar("max", tf.reduce_max(var))
        tf.summary.scalar("min", tf.reduce_min(var))
        tf.summary.histogram("histogram", var)


def nn_layer(input_tensor, input_dim, output_dim, layer_name, act=tf.nn.relu):
    """A fully connected layer, with summaries of its weights, biases and activations."""
    with tf.name_scope(layer_name):
        with tf.name_scope("weights"):
            weights = tf.Variable(tf.truncated_normal([input_dim, output_dim], stddev=0.1))
            variable_summaries(weights)
        with tf.name_scope("biases"):
            biases = tf.Variable(tf.constant(0.1, shape=[output_dim]))
            variable_summaries(biases)
        with tf.name_scope("Wx_plus_b"):
            preactivate = tf.matmul(input_tensor, weights) + biases
            tf.summary.histogram("pre_activations", preactivate)
        activations = act(preactivate, name="activation")
        tf.summary.histogram("activations", activations)
        return activations


def train():
    mnist = input_data.read_data_sets(FLAGS.data_dir, one_hot=True, fake_data=FLAGS.fake_data)
    sess = tf.InteractiveSession()

    with tf.name_scope("input"):
        x = tf.placeholder(tf.float32, [None, 784], name="x-input")
        y_ = tf.placeholder(tf.float32, [None, 10], name="y-input")
    with tf.name_scope("input_reshape"):
        image_shaped_input = tf.reshape(x, [-1, 28, 28, 1])
        tf.summary.image("input", image_shaped_input, 10)

    hidden1 = nn_layer(x, 784, 500, "layer1")
    with tf.name_scope("dropout"):
        keep_prob = tf.placeholder(tf.float32)
        tf.summary.scalar("dropout_keep_probability", keep_prob)
        dropped = tf.nn.dropout(hidden1, keep_prob)
    y = nn_layer(dropped, 500, 10, "layer2", act=tf.identity)

    with tf.name_scope("cross_entropy"):
        with tf.name_scope("total"):
            cross_entropy = tf.reduce_mean(
                tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
    tf.summary.scalar("cross_entropy", cross_entropy)

    with tf.name_scope("train"):
        train_step = tf.train.AdamOptimizer(FLAGS.learning_rate).minimize(cross_entropy)

    with tf.name_scope("accuracy"):
        with tf.name_scope("correct_prediction"):
            correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
        with tf.name_scope("accuracy"):
            accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    tf.summary.scalar("accuracy", accuracy)

    merged = tf.summary.merge_all()
    train_writer = tf.summary.FileWriter(FLAGS.log_dir + "/train", sess.graph)
    test_writer = tf.summary.FileWriter(FLAGS.log_dir + "/test")
    tf.global_variables_initializer().run()
    saver = tf.train.Saver()

    def feed_dict(train):
        """A training batch with dropout, or the test images without."""
        if train:
            xs, ys = mnist.train.next_batch(100)
            k = FLAGS.dropout
        else:
            xs, ys = mnist.test.images, mnist.test.labels
            k = 1.0
        return {x: xs, y_: ys, keep_prob: k}

    for i in range(FLAGS.max_steps):
        if i % 10 == 0:
            summary, acc = sess.run([merged, accuracy], feed_dict=feed_dict(False))
            test_writer.add_summary(summary, i)
            print("Accuracy at step %s: %s" % (i, acc))
        else:
            summary, _ = sess.run([merged, train_step], feed_dict=feed_dict(True))
            train_writer.add_summary(summary, i)
    acc = sess.run(accuracy, feed_dict=feed_dict(False))
    print("Final test accuracy: %s" % acc)
    print("Model saved in path: %s" % saver.save(sess, os.path.join(FLAGS.log_dir, "model.ckpt"),
                                                 global_step=FLAGS.max_steps))
    train_writer.close()
    test_writer.close()


def main(_):
    if tf.gfile.Exists(FLAGS.log_dir):
        tf.gfile.DeleteRecursively(FLAGS.log_dir)
    tf.gfile.MakeDirs(FLAGS.log_dir)
    train()


if __name__ == "__main__":
    tf.app.run(main=main)
