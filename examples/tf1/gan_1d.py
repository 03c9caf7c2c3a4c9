"""A generative adversarial network on one dimension, written as a TF1 program: the generator
learns to turn uniform noise into draws that look like they come from N(4, 0.5).

    python gan_1d.py --max_steps=3000

The generator and the discriminator are small MLPs, each in a variable scope; each one's
optimizer updates only its own variables (`var_list`), and the discriminator is built twice,
on real and on generated draws, sharing its weights (`reuse=True`). Every `log_every` steps it
prints both losses and the mean and standard deviation of the generated draws.
"""

import numpy as np

import staticgrad as tf

flags = tf.app.flags
flags.DEFINE_integer("max_steps", 3000, "training steps (each one of D, then one of G)")
flags.DEFINE_integer("batch_size", 64, "draws per step")
flags.DEFINE_integer("hidden", 16, "units of each hidden layer")
flags.DEFINE_float("learning_rate", 0.005, "Adam's learning rate, for both networks")
flags.DEFINE_integer("log_every", 250, "print every this many steps")
flags.DEFINE_float("data_mean", 4.0, "the mean of the data's normal distribution")
flags.DEFINE_float("data_stddev", 0.5, "its standard deviation")
FLAGS = flags.FLAGS


def sample_data(n):
    return np.random.normal(FLAGS.data_mean, FLAGS.data_stddev, size=(n, 1))


def sample_noise(n):
    return np.random.uniform(-1.0, 1.0, size=(n, 1))


def generator(z, hidden):
    with tf.variable_scope("generator"):
        h = tf.layers.dense(z, hidden, activation=tf.nn.leaky_relu, name="h1")
        h = tf.layers.dense(h, hidden, activation=tf.nn.leaky_relu, name="h2")
        return tf.layers.dense(h, 1, name="out")


def discriminator(x, hidden, reuse=False):
    with tf.variable_scope("discriminator", reuse=reuse):
        h = tf.layers.dense(x, hidden, activation=tf.nn.leaky_relu, name="h1")
        h = tf.layers.dense(h, hidden, activation=tf.nn.leaky_relu, name="h2")
        return tf.layers.dense(h, 1, name="logit")


def main(_):
    np.random.seed(0)
    tf.set_random_seed(0)
    X = tf.placeholder(tf.float32, [None, 1], name="X")
    Z = tf.placeholder(tf.float32, [None, 1], name="Z")

    G_sample = generator(Z, FLAGS.hidden)
    D_real = discriminator(X, FLAGS.hidden)
    D_fake = discriminator(G_sample, FLAGS.hidden, reuse=True)

    with tf.name_scope("losses"):
        D_loss = tf.reduce_mean(
            tf.nn.sigmoid_cross_entropy_with_logits(logits=D_real, labels=tf.ones_like(D_real))
            + tf.nn.sigmoid_cross_entropy_with_logits(logits=D_fake,
                                                      labels=tf.zeros_like(D_fake)))
        G_loss = tf.reduce_mean(
            tf.nn.sigmoid_cross_entropy_with_logits(logits=D_fake, labels=tf.ones_like(D_fake)))

    G_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="generator")
    D_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="discriminator")
    print("generator variables:", [v.name for v in G_vars])
    print("discriminator variables:", [v.name for v in D_vars])
    D_step = tf.train.AdamOptimizer(FLAGS.learning_rate, beta1=0.5).minimize(D_loss,
                                                                             var_list=D_vars)
    G_step = tf.train.AdamOptimizer(FLAGS.learning_rate, beta1=0.5).minimize(G_loss,
                                                                             var_list=G_vars)
    sample_mean, sample_var = tf.nn.moments(G_sample, axes=[0])

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(FLAGS.max_steps + 1):
            if step % FLAGS.log_every == 0:
                mean, var = sess.run([sample_mean, sample_var],
                                     feed_dict={Z: sample_noise(10000)})
                d_loss, g_loss = sess.run([D_loss, G_loss],
                                          feed_dict={X: sample_data(FLAGS.batch_size),
                                                     Z: sample_noise(FLAGS.batch_size)})
                print("step %5d: D loss %.4f, G loss %.4f, generated mean %.4f, stddev %.4f"
                      % (step, d_loss, g_loss, mean[0], np.sqrt(var[0])))
            if step == FLAGS.max_steps:
                break
            sess.run(D_step, feed_dict={X: sample_data(FLAGS.batch_size),
                                        Z: sample_noise(FLAGS.batch_size)})
            sess.run(G_step, feed_dict={Z: sample_noise(FLAGS.batch_size)})


if __name__ == "__main__":
    tf.app.run()
