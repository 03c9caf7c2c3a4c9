"""`sg.summary.FileWriter`: TensorBoard event files, written by tensorboardX's writer.

    writer = sg.summary.FileWriter("logs/run1", sess.graph)   # the graph tab's graph
    writer.add_summary(sess.run(merged, feed), global_step=step)
    writer.close()

As TF1's: events are queued and written by a background thread (every `flush_secs`, when
`max_queue` are waiting, on `flush()` and `close()`); each writer makes a new event file in
`logdir` (created if missing), named as TensorBoard expects (`events.out.tfevents.*`).
`add_summary` takes what a summary op fetches (bytes) or a `Summary` protocol buffer.
"""

from __future__ import annotations

import itertools
import os

import numpy as np

from .. import runtime_summary
from ..graph import Graph
from .graph_proto import graph_def_proto

_FILE_NUMBERS = itertools.count()


class FileWriter:
    """Writes summaries and graphs to an event file in `logdir` (see the module docstring)."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
                 filename_suffix=None, session=None):
        runtime_summary.require("sg.summary.FileWriter")
        if not isinstance(logdir, str | bytes | os.PathLike) or not os.fspath(logdir):
            raise TypeError(f"FileWriter takes a folder (a non-empty str or path), got "
                            f"{logdir!r:.60}")  # (str() made b"logs" the folder "b'logs'")
        self._args = (os.fsdecode(logdir), max_queue, flush_secs, filename_suffix or "")
        self._writer = self._new_writer()
        self._closed = False
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self) -> str:
        return self._writer.get_logdir()

    def add_summary(self, summary, global_step=None):
        """Write `summary` (a serialized Summary, as a summary op fetches it, or a Summary
        protocol buffer) at step `global_step`."""
        from tensorboardX.summary import Summary
        if isinstance(summary, np.ndarray) and summary.dtype.kind == "O" and summary.ndim == 0:
            summary = summary[()]
        if isinstance(summary, bytes):
            proto = Summary()
            try:
                proto.ParseFromString(summary)
            except Exception as e:  # noqa: BLE001 - protobuf's DecodeError, by implementation
                raise ValueError(f"add_summary: {summary[:40]!r} is not a serialized Summary "
                                 f"(the bytes a summary op fetches): {e}") from None
        elif isinstance(summary, Summary):
            proto = summary
        else:
            raise TypeError(f"add_summary takes a serialized Summary (the bytes a summary op "
                            f"fetches) or a Summary, got {type(summary).__name__}")
        self._open().add_summary(proto, None if global_step is None else int(global_step))

    def add_graph(self, graph, global_step=None, graph_def=None):
        """Write `graph` (an sg.Graph, or a GraphDef as graph_def=) for the graph tab."""
        from tensorboardX.proto import event_pb2

        from ..graph_def import GraphDef, as_graph_def  # (below sg.train in the import order)
        if graph_def is None:
            if not isinstance(graph, Graph | GraphDef):
                raise TypeError(f"add_graph takes an sg.Graph or a GraphDef, got "
                                f"{type(graph).__name__}")
            graph_def = graph if isinstance(graph, GraphDef) else as_graph_def(graph)
        proto = graph_def_proto(graph_def.doc)
        event = event_pb2.Event(graph_def=proto.SerializeToString())
        self._open().add_event(event, None if global_step is None else int(global_step))

    def add_run_metadata(self, run_metadata, tag, global_step=None):
        """Write `run_metadata` (an sg.RunMetadata, empty here: see config.py) under `tag`,
        which TensorBoard's graph tab lists among the session runs."""
        from tensorboardX.proto import event_pb2

        from ..config import RunMetadata
        if not isinstance(run_metadata, RunMetadata):
            raise TypeError(f"add_run_metadata takes an sg.RunMetadata, got "
                            f"{type(run_metadata).__name__}")
        tagged = event_pb2.TaggedRunMetadata(tag=str(tag),
                                             run_metadata=run_metadata.SerializeToString())
        self._open().add_event(event_pb2.Event(tagged_run_metadata=tagged),
                               None if global_step is None else int(global_step))

    def add_event(self, event):
        """Write an `Event` protocol buffer (tensorboardX's) as it is."""
        self._open().add_event(event)

    def flush(self):
        """Write every queued event to the file now."""
        self._writer.flush()

    def close(self):
        """Flush and close the event file; `reopen` starts a new one."""
        self._writer.close()
        self._closed = True

    def reopen(self):
        """Open a new event file in the same logdir after `close` (nothing if still open)."""
        if self._closed:
            self._writer = self._new_writer()  # (tensorboardX's own reopen loses its queue)
            self._closed = False

    def _new_writer(self):
        """tensorboardX's writer of a new event file. Its name has this process's id and a
        count after tensorboardX's time in seconds and host (then the user's suffix): two
        files made in one second would otherwise share a name, the later overwriting the
        earlier."""
        from tensorboardX.writer import FileWriter as EventWriter
        logdir, max_queue, flush_secs, suffix = self._args
        unique = f".{os.getpid()}.{next(_FILE_NUMBERS)}{suffix}"
        return EventWriter(logdir, max_queue, flush_secs, unique)

    def _open(self):
        if self._closed:
            raise RuntimeError(f"the FileWriter of {self.get_logdir()} is closed; reopen() it "
                               "first")
        return self._writer

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
