"""What TF1 programs use around the graph: `sg.app.run`, `sg.flags` (command-line flags) and
`sg.logging` (TF1's tf.app, tf.flags and tf.logging)."""
