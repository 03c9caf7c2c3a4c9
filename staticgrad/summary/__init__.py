"""sg.summary: TF1's `tf.summary`, TensorBoard summaries as graph ops and the writer of
their event files (the `[tensorboard]` extra: tensorboardX).

    sg.summary.scalar("loss", loss)
    merged = sg.summary.merge_all()
    writer = sg.summary.FileWriter("logs", sess.graph)
    writer.add_summary(sess.run(merged, feed), step)
"""

from .._namespace import missing_name, public_dir
from ..ops.summary_ops import histogram, image, merge, merge_all, scalar, text
from .protos import Summary
from .writer import FileWriter

__all__ = ["FileWriter", "Summary", "histogram", "image", "merge", "merge_all", "scalar", "text"]
__dir__ = public_dir(globals())
__getattr__ = missing_name("staticgrad.summary", "tf.summary", globals())
