"""Word embeddings by skip-gram with noise-contrastive estimation, written as a TF1 program.

    python word2vec_skipgram.py --train_data=text8.txt --max_steps=100001
    python word2vec_skipgram.py --fake_data --max_steps=2001     # a made-up corpus, no files

Each word of the corpus is paired with its neighbours within `skip_window`; the model learns
an embedding per word from which `nce_loss` tells the true neighbour of a word from
`num_sampled` words drawn at random. At the end it prints, for a few words, the words whose
embeddings are nearest by cosine similarity.

The made-up corpus (--fake_data) has five topics of eight words; a sentence picks one topic
and strings its words together with a few common words ("the", "and"...) in between, so
that words of one topic share their neighbours and should end up near each other.
"""

import collections
import math
import random

import numpy as np

import staticgrad as tf

flags = tf.app.flags
flags.DEFINE_string("train_data", None, "a text file of words separated by spaces")
flags.DEFINE_boolean("fake_data", False, "train on the made-up corpus")
flags.DEFINE_integer("max_steps", 20001, "training steps")
flags.DEFINE_integer("vocabulary_size", 50000, "the most common words kept; the rest are UNK")
flags.DEFINE_integer("seed", 1, "the seed of the batches and of the graph's draws")
FLAGS = flags.FLAGS

TOPICS = {
    "animals": "cat dog horse cow sheep goat pig mouse",
    "colours": "red green blue yellow purple orange white black",
    "numbers": "one two three four five six seven eight",
    "food": "bread cheese apple rice soup butter honey salad",
    "weather": "rain snow wind storm cloud sun fog frost",
}
COMMON = "the and a of in to".split()


def made_up_corpus(num_sentences=2000, seed=0):
    """Sentences of one topic's words, with common words sprinkled in."""
    rng = random.Random(seed)
    topics = [words.split() for words in TOPICS.values()]
    words = []
    for _ in range(num_sentences):
        topic = rng.choice(topics)
        for _ in range(8):
            words.append(rng.choice(topic))
            if rng.random() < 0.4:
                words.append(rng.choice(COMMON))
    return words


def read_data(filename):
    with open(filename) as f:
        return f.read().split()


def build_dataset(words, n_words):
    """Words as indices into the `n_words - 1` most common words, 0 standing for the rest."""
    count = [["UNK", -1]]
    count.extend(collections.Counter(words).most_common(n_words - 1))
    dictionary = {word: i for i, (word, _) in enumerate(count)}
    data = [dictionary.get(word, 0) for word in words]
    count[0][1] = data.count(0)
    reversed_dictionary = dict(zip(dictionary.values(), dictionary.keys()))
    return data, count, dictionary, reversed_dictionary


data_index = 0


def generate_batch(data, batch_size, num_skips, skip_window):
    """`batch_size` (word, neighbour) pairs: `num_skips` neighbours of each word in turn."""
    global data_index
    assert batch_size % num_skips == 0 and num_skips <= 2 * skip_window
    batch = np.ndarray(shape=(batch_size,), dtype=np.int32)
    labels = np.ndarray(shape=(batch_size, 1), dtype=np.int32)
    span = 2 * skip_window + 1
    buffer = collections.deque(maxlen=span)
    if data_index + span > len(data):
        data_index = 0
    buffer.extend(data[data_index:data_index + span])
    data_index += span
    for i in range(batch_size // num_skips):
        context_words = [w for w in range(span) if w != skip_window]
        for j, context_word in enumerate(random.sample(context_words, num_skips)):
            batch[i * num_skips + j] = buffer[skip_window]
            labels[i * num_skips + j, 0] = buffer[context_word]
        if data_index == len(data):
            buffer.extend(data[:span])
            data_index = span
        else:
            buffer.append(data[data_index])
            data_index += 1
    data_index = (data_index + len(data) - span) % len(data)
    return batch, labels


def main(_):
    random.seed(FLAGS.seed)
    if FLAGS.fake_data:
        vocabulary = made_up_corpus()
    elif FLAGS.train_data:
        vocabulary = read_data(FLAGS.train_data)
    else:
        raise SystemExit("give --train_data=FILE, or --fake_data for the made-up corpus")
    print("Data size", len(vocabulary))
    data, count, dictionary, reverse_dictionary = build_dataset(vocabulary,
                                                                FLAGS.vocabulary_size)
    vocabulary_size = len(dictionary)
    print("Most common words (+UNK)", count[:5])

    batch_size = 128
    embedding_size = 32
    skip_window = 2
    num_skips = 4
    num_sampled = 16
    # words to show the neighbours of: with --fake_data, the first two of each topic
    if FLAGS.fake_data:
        valid_words = [word for words in TOPICS.values() for word in words.split()[:2]]
        valid_examples = np.array([dictionary[w] for w in valid_words], dtype=np.int32)
    else:
        valid_examples = np.random.RandomState(0).choice(100, 16, replace=False)

    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(FLAGS.seed)
        with tf.name_scope("inputs"):
            train_inputs = tf.placeholder(tf.int32, shape=[batch_size])
            train_labels = tf.placeholder(tf.int32, shape=[batch_size, 1])
            valid_dataset = tf.constant(valid_examples, dtype=tf.int32)

        with tf.device("/cpu:0"):
            with tf.name_scope("embeddings"):
                embeddings = tf.Variable(
                    tf.random_uniform([vocabulary_size, embedding_size], -1.0, 1.0))
                embed = tf.nn.embedding_lookup(embeddings, train_inputs)
            with tf.name_scope("weights"):
                nce_weights = tf.Variable(
                    tf.truncated_normal([vocabulary_size, embedding_size],
                                        stddev=1.0 / math.sqrt(embedding_size)))
            with tf.name_scope("biases"):
                nce_biases = tf.Variable(tf.zeros([vocabulary_size]))

        with tf.name_scope("loss"):
            loss = tf.reduce_mean(
                tf.nn.nce_loss(weights=nce_weights, biases=nce_biases, labels=train_labels,
                               inputs=embed, num_sampled=num_sampled,
                               num_classes=vocabulary_size))
        with tf.name_scope("optimizer"):
            optimizer = tf.train.GradientDescentOptimizer(1.0).minimize(loss)

        # cosine similarity between the words shown and every word
        normalized_embeddings = tf.nn.l2_normalize(embeddings, 1)
        valid_embeddings = tf.nn.embedding_lookup(normalized_embeddings, valid_dataset)
        similarity = tf.matmul(valid_embeddings, normalized_embeddings, transpose_b=True)
        top_k = 8
        _, nearest_ids = tf.nn.top_k(similarity, k=top_k + 1)
        init = tf.global_variables_initializer()

    with tf.Session(graph=graph) as session:
        init.run()
        print("Initialized")
        average_loss = 0
        for step in range(FLAGS.max_steps):
            batch_inputs, batch_labels = generate_batch(data, batch_size, num_skips,
                                                        skip_window)
            feed_dict = {train_inputs: batch_inputs, train_labels: batch_labels}
            _, loss_val = session.run([optimizer, loss], feed_dict=feed_dict)
            average_loss += loss_val
            if step % 200 == 0:
                if step > 0:
                    average_loss /= 200
                print("Average loss at step", step, ":", average_loss)
                average_loss = 0
        nearest = nearest_ids.eval()
        for i, word_id in enumerate(valid_examples):
            # the nearest is the word itself
            neighbours = [reverse_dictionary[k] for k in nearest[i, 1:top_k + 1]]
            print("Nearest to %s: %s" % (reverse_dictionary[word_id], ", ".join(neighbours)))


if __name__ == "__main__":
    tf.app.run()
