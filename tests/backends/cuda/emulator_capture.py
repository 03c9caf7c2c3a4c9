"""Streams and CUDA graphs for the emulator (emulator.py): while a stream captures, kernel
launches and cupy calls are recorded as steps, which each launch of the captured graph runs
again; a copy to or from the host, or a read of a value, is CUDA's error then.

As on a GPU, a capture computes nothing: its kernels do not run, and the cupy calls that run
(to give arrays of the right shapes) leave every device array made before the capture as it
was (`live`, whose values are put back at the end).
"""

from __future__ import annotations

import contextlib
import threading
import weakref

import numpy as np


class CUDARuntimeError(RuntimeError):
    """CuPy's error of a failed CUDA runtime call."""


class Stream:
    """A stream (the emulator's work runs at once, in order: on any stream alike). While one
    that is current captures, kernel launches and cupy calls are recorded. As on a GPU, a
    capture computes nothing: its kernels do not run, and the cupy calls that run (to give
    arrays of the right shapes) leave every array made before the capture as it was (its
    values are put back at the end). A copy to or from the host, or a read of a value, is
    CUDA's error (cudaErrorStreamCaptureUnsupported), and invalidates the capture."""

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        self.null, self.steps, self.invalid, self.saved = null, None, None, []

    def __enter__(self):
        current_streams().append(self)
        return self

    def __exit__(self, *exc):
        current_streams().pop()

    def begin_capture(self, mode=None) -> None:
        if self.null or self.steps is not None:
            raise CUDARuntimeError("cudaErrorIllegalState: cannot begin a capture here")
        self.steps, self.invalid = [], None
        self.saved = [(a, a.memory.copy()) for a in list(live.values())
                      if a.memory.flags.writeable]

    def iscapturing(self) -> bool:
        return self.steps is not None

    def end_capture(self) -> Graph:
        steps, invalid, self.steps = self.steps, self.invalid, None
        for array, values in self.saved:
            array.memory[...] = values
        self.saved = []
        if steps is None:
            raise CUDARuntimeError("cudaErrorIllegalState: the stream is not capturing")
        if invalid:
            raise CUDARuntimeError(f"cudaErrorStreamCaptureInvalidated ({invalid})")
        GRAPHS.append(Graph(steps))
        return GRAPHS[-1]

    def synchronize(self) -> None:
        no_sync("Stream.synchronize")

    def record(self, event=None) -> Event:
        """An event that completes when this stream's work so far has (at once, here)."""
        event = Event() if event is None else event
        event.recorded_on = self
        return event

    def wait_event(self, event) -> None:
        """This stream's later work waits for `event` (logged: tests read who waited)."""
        WAITS.append((self, event))


class Event:
    """An event, recorded on a stream (the emulator's work is done when it is queued)."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.recorded_on = None

    def synchronize(self) -> None:
        no_sync("Event.synchronize")


class Graph:
    """A captured graph: its steps run again, in order, at each launch (counted)."""

    def __init__(self, steps: list):
        self.steps, self.launches = steps, 0

    def launch(self, stream=None) -> None:
        if capturing() is not None:
            raise CUDARuntimeError("the emulator launches no graph inside a capture")
        for step in self.steps:
            step.run()
        self.launches += 1

    def upload(self, stream=None) -> None:
        pass


class MemoryPool:
    """A memory pool: it counts the arrays made while its malloc is the allocator."""

    def __init__(self, allocator=None):
        self.allocations = 0
        POOLS.append(self)

    def malloc(self, size):
        raise NotImplementedError("the emulator's arrays are NumPy's")


@contextlib.contextmanager
def using_allocator(allocator=None):
    allocators.append(allocator.__self__)
    try:
        yield
    finally:
        allocators.pop()


class Step:
    __slots__ = ("run", "keep")

    def __init__(self, run, keep):
        self.run, self.keep = run, keep  # (keep: what it reads and writes, alive as on a GPU)


NULL = Stream(null=True)
_threads = threading.local()  # .streams: the thread's streams entered, the current one last


def current_streams() -> list[Stream]:
    """The streams this thread entered, the current one last: as CuPy's current stream, each
    thread's own (a capture on one thread leaves another's work alone)."""
    streams = getattr(_threads, "streams", None)
    if streams is None:
        streams = _threads.streams = [NULL]
    return streams


# id -> each device array alive (what a capture leaves as it was)
live = weakref.WeakValueDictionary()
COUNTS = {"kernels": 0}  # kernels run at their launch (not a graph's)
# each of those: (kernel, bytes of the arrays it reads, of those it writes: its const
# pointer parameters' and the others'), for tests counting a plan's traffic (a test clears it)
LAUNCHES: list[tuple[str, int, int]] = []
GRAPHS: list[Graph] = []  # every graph captured (a test reads its launches)
WAITS: list[tuple[Stream, Event]] = []  # each Stream.wait_event: (the stream, the event)
POOLS: list[MemoryPool] = []  # every memory pool made (a test reads what each served)
allocators: list[MemoryPool] = []


def capturing() -> list | None:
    """The steps the current stream records, if it is capturing."""
    return current_streams()[-1].steps


def no_sync(what: str) -> None:
    """CUDA's error for `what` (work that waits for the GPU) while the stream captures."""
    stream = current_streams()[-1]
    if stream.steps is not None:
        stream.invalid = what
        raise CUDARuntimeError("cudaErrorStreamCaptureUnsupported: operation not permitted "
                               f"when stream is capturing ({what})")


def record(compute, made, keep) -> None:
    """Under a capture: a step that computes again what `compute` computed, into `made` (the
    device value it gave: an array, a tuple of them, or None where it works in place)."""
    steps = capturing()
    if steps is not None:
        steps.append(Step(lambda: refill(made, compute()), keep))


def refill(made, again) -> None:
    if hasattr(made, "memory"):  # a device array
        memory = made.memory
        if again is memory or not memory.flags.writeable or \
                (isinstance(again, np.ndarray) and np.may_share_memory(memory, again)):
            return  # in place, or a view of what it reads
        np.copyto(memory, again)
    elif type(made) in (list, tuple):
        for m, a in zip(made, again):
            refill(m, a)
