"""The first TF1 program: a string constant, arithmetic with constants and placeholders, and ops
pinned to devices, run as `python hello_world.py` (add --log_device_placement to see where
each op runs)."""

import staticgrad as tf

tf.app.flags.DEFINE_boolean("log_device_placement", False, "log the device of each op")
FLAGS = tf.app.flags.FLAGS


def main(_):
    # A constant op, added to the default graph; the session runs it and gives back bytes.
    hello = tf.constant("Hello, TensorFlow!")
    print(hello)
    sess = tf.Session()
    print(sess.run(hello))

    # Constants
    a = tf.constant(2)
    b = tf.constant(3)
    print("a=2, b=3")
    print("Addition with constants: %i" % sess.run(a + b))
    print("Multiplication with constants: %i" % sess.run(a * b))

    # Placeholders: the graph's inputs, fed when it runs
    x = tf.placeholder(tf.int16)
    y = tf.placeholder(tf.int16)
    add = tf.add(x, y)
    mul = tf.multiply(x, y)
    print("Addition with variables: %i" % sess.run(add, feed_dict={x: 2, y: 3}))
    print("Multiplication with variables: %i" % sess.run(mul, feed_dict={x: 2, y: 3}))
    sess.close()

    # Ops pinned to devices; a /gpu op runs on the CPU when soft placement allows it
    with tf.device("/cpu:0"):
        matrix1 = tf.constant([[3., 3.]])
        matrix2 = tf.constant([[2.], [2.]])
        product = tf.matmul(matrix1, matrix2)
    with tf.device("/gpu:0"):
        doubled = tf.multiply(product, 2.0, name="doubled")
    print("product is placed on %s, doubled on %s" % (product.device, doubled.device))
    config = tf.ConfigProto(allow_soft_placement=True,
                            log_device_placement=FLAGS.log_device_placement)
    with tf.Session(config=config) as sess:
        print(sess.run(product))
        print(sess.run(doubled))
        print(sess.run(tf.string_join([hello, " ", tf.as_string(product[0, 0])])))


if __name__ == "__main__":
    tf.app.run()
