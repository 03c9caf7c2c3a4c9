"""A convolutional MNIST classifier built from `tf.layers`, written as a TF1 program: two
convolutions with batch normalization and max pooling, dropout, a dense layer.

    python cnn_layers.py --fake_data --max_steps=200 --model_dir=/tmp/mnist_cnn

Batch normalization keeps moving averages of each batch's statistics, updated by the ops in
the UPDATE_OPS collection, which the training step runs through its control dependencies; the
test accuracy is measured in inference mode (`is_training` False), which reads those moving
averages. At the end the model is saved, restored into a new session, and measured again.
"""

import os

import input_data
import numpy as np

import staticgrad as tf

flags = tf.app.flags
flags.DEFINE_boolean("fake_data", False, "use the stand-in digits instead of MNIST's files")
flags.DEFINE_string("data_dir", "/tmp/mnist/input_data", "where MNIST's four files are")
flags.DEFINE_string("model_dir", "/tmp/mnist_cnn", "where the checkpoint goes")
flags.DEFINE_integer("max_steps", 2000, "training steps")
flags.DEFINE_integer("batch_size", 50, "images per step")
flags.DEFINE_float("learning_rate", 0.001, "Adam's learning rate")
FLAGS = flags.FLAGS

def cnn_model(images, is_training):
    """Logits for 28x28x1 images."""
    with tf.variable_scope("conv1"):
        net = tf.layers.conv2d(images, filters=8, kernel_size=5, padding="same", use_bias=False)
        net = tf.layers.batch_normalization(net, training=is_training)
        net = tf.nn.relu(net)
        net = tf.layers.max_pooling2d(net, pool_size=2, strides=2)
    with tf.variable_scope("conv2"):
        net = tf.layers.conv2d(net, filters=16, kernel_size=5, padding="same", use_bias=False)
        net = tf.layers.batch_normalization(net, training=is_training)
        net = tf.nn.relu(net)
        net = tf.layers.max_pooling2d(net, pool_size=2, strides=2)
    with tf.variable_scope("fc"):
        net = tf.layers.flatten(net)
        net = tf.layers.dense(net, 64, activation=tf.nn.relu)
        net = tf.layers.dropout(net, rate=0.4, training=is_training)
        return tf.layers.dense(net, 10, name="logits")

def main(_):
    mnist = input_data.read_data_sets(FLAGS.data_dir, fake_data=FLAGS.fake_data, reshape=False)
    tf.set_random_seed(0)
    x = tf.placeholder(tf.float32, [None, 28, 28, 1], name="images")
    y = tf.placeholder(tf.int64, [None], name="labels")
    is_training = tf.placeholder_with_default(False, [], name="is_training")

    logits = cnn_model(x, is_training)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    global_step = tf.train.get_or_create_global_step()
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        train_op = tf.train.AdamOptimizer(FLAGS.learning_rate).minimize(
            loss, global_step=global_step)
    correct = tf.equal(tf.argmax(logits, 1), y)
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    tf.logging.info("%d update ops: %s", len(update_ops), [op.name for op in update_ops])

    saver = tf.train.Saver()
    if not tf.gfile.Exists(FLAGS.model_dir):
        tf.gfile.MakeDirs(FLAGS.model_dir)
    test_feed = {x: mnist.test.images, y: mnist.test.labels}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        print("test accuracy before training: %.4f" % sess.run(accuracy, feed_dict=test_feed))
        for step in range(FLAGS.max_steps):
            images, labels = mnist.train.next_batch(FLAGS.batch_size)
            _, loss_value = sess.run([train_op, loss],
                                     feed_dict={x: images, y: labels, is_training: True})
            if step % 20 == 0:
                print("step %d: loss = %.4f" % (step, loss_value))
        final = sess.run(accuracy, feed_dict=test_feed)
        print("test accuracy after %d steps: %.4f" % (sess.run(global_step), final))
        moving_mean = [v for v in tf.global_variables() if "moving_mean" in v.name][0]
        print("%s: mean %.4f" % (moving_mean.name, np.mean(np.abs(sess.run(moving_mean)))))
        path = saver.save(sess, os.path.join(FLAGS.model_dir, "model.ckpt"),
                          global_step=global_step)
        print("saved to %s" % path)

    with tf.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint(FLAGS.model_dir))
        print("restored test accuracy: %.4f" % sess.run(accuracy, feed_dict=test_feed))

if __name__ == "__main__":
    tf.logging.set_verbosity(tf.logging.INFO)
    tf.app.run()
