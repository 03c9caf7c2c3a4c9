"""What TF1 programs use around the graph: `sg.app.run`, `sg.flags` (command-line flags),
`sg.gfile` (files and folders) and `sg.logging` (TF1's tf.app, tf.flags, tf.gfile and
tf.logging)."""
