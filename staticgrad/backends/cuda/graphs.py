"""CUDA graphs: a plan's run captured once and replayed (make_callable(..., cuda_graph=True)).

A small plan spends most of a call launching its kernels, a few microseconds of host time
each; a CUDA graph launches all of them at once.

    fn = sess.make_callable([loss, train], [x, y], cuda_graph=True)
    fn(xb, yb)  # a signature's first call: a plain run (its results), then the capture
    fn(xb, yb)  # every later one: the feeds copied in, the graph launched, the fetches out

What a capture holds, and how each part stays right from one replay to the next:
- feeds: device buffers of the signature's shapes, made for the capture, which the graph
  reads. Each call copies its feeds into them on the caller's current stream (a NumPy array
  by one copy to the GPU, a CuPy array by one copy on it), where it then launches the graph.
- fetches: the arrays the captured run returned, which every replay writes again. A call
  hands back copies of them (on the host, or on the GPU with fetch_device), never the arrays.
- variables: the graph reads each at the address it had when captured. The capture's run
  works on a copy of the session's dict of them (V): a run on another thread meanwhile
  neither sees the capture's arrays, which hold no values (nothing ran), nor has its own
  taken for the capture's. The generated code gives an updated variable a new array
  (`V['w'] = V['w'] - ...`), so the capture ends with a copy of each such new value into
  the variable's array of before, which V keeps: a replay
  updates the variable in place. A variable given another array between calls (sess.run of
  an initializer, Saver.restore, Variable.load, a plain run of the same step) is copied into
  the captured array before the launch, and V given that array back; one of a new shape or
  dtype makes the runner capture again.
- intermediates: allocated during the capture from a memory pool of the runner's own, which
  nothing else allocates from and which no `free_all_blocks` of CuPy's pools empties: a value
  freed during the capture stays the graph's (PyTorch's graphs keep a private pool alike).
  CuPy captures in relaxed mode (`begin_capture`'s default), where the pool's cudaMalloc is
  allowed; the first call, a plain run, has already compiled and loaded every kernel.
- what a graph cannot hold: work the host does at each run (a NumPy op, a copy to or from
  the host, control flow, a random draw), which the renderer lists (Plan.uncapturable): the
  runner refuses such a plan, naming the first of those ops; a CuPy call that waits for
  the GPU (an index check reading its verdict back, a count read back for a result's size),
  which CuPy refuses during the capture; and a cuBLAS call (a matmul): CuPy 14's cuBLAS
  wrappers set the handle's stream at each call, and its setStream raises
  NotImplementedError for a capturing stream. The runner names the op whose line it was,
  and each later call raises that again, running nothing.

A capture computes nothing: its run's kernels are recorded, not run. Calls are serialized (the
buffers are shared); a replay holds the locks of the variables its use_locking updates. A
replay's work is queued on the caller's stream and the call returns before the GPU has done
it (with fetch_device), so a call on another stream first makes its stream wait for the
previous call's work (an event recorded after it): its feed copies and launch never overlap
a launch still running.
"""

from __future__ import annotations

import threading

import numpy as np

from ...errors import OpError, UnimplementedError


class GraphRunner:
    """The function make_callable(..., cuda_graph=True) calls for one feed signature."""

    def __init__(self, plan, state: dict, locks: list, fetch_device: bool, cp):
        if plan.uncapturable:
            op, why = plan.uncapturable[0]
            raise UnimplementedError(None, op, f"{_where(op)} cannot be captured in a CUDA "
                                               f"graph (make_callable(..., cuda_graph=True)): "
                                               f"{why}")
        for t in plan.feeds:  # (a graph reads its feeds from device buffers, of no strings)
            if t.dtype.is_string:
                raise UnimplementedError(None, t.op, f"the feed {t.name} ({t.op.where()}) "
                                                     f"cannot be captured in a CUDA graph "
                                                     f"(make_callable(..., cuda_graph=True)): "
                                                     f"a string stays on the host")
        self.plan, self.state, self.locks, self.fetch_device, self.cp = \
            plan, state, locks, fetch_device, cp
        self.graph = None
        self.kept = ()       # what the graph writes or reads: buffers, pool, stream, outputs
        self.feeds = []      # the device buffers the graph reads its feeds from
        self.outputs = ()    # the arrays the graph writes its fetches into
        self.variables = {}  # name -> the array the graph reads and updates
        self.refused = None  # (op, message) of a capture refused: what later calls raise
        self.done = None     # (stream, event recorded on it after the last replay's work)
        self.lock = threading.Lock()

    def __call__(self, *feeds):
        with self.lock:
            if self.refused is not None:  # (before running: a call that raises runs nothing)
                raise UnimplementedError(None, *self.refused)
            stream = self.cp.cuda.get_current_stream()
            if self.done is not None and self.done[0] is not stream:
                stream.wait_event(self.done[1])
            if self.graph is None or not self._variables_in_place():
                results = self.plan.fn(*feeds)  # a plain run: this call's results
                self._capture(feeds)
                results = self._hand_back(results, fresh=True)
                self.done = (stream, stream.record())
                return results
            for buffer, value in zip(self.feeds, feeds):
                if isinstance(value, self.cp.ndarray):
                    buffer[...] = value
                else:  # (dense: np.ascontiguousarray would make a 0-d feed 1-d)
                    buffer.set(np.asarray(value, order="C"))
            for lock in self.locks:
                lock.acquire()
            try:
                self.graph.launch(stream=stream)
            finally:
                for lock in reversed(self.locks):
                    lock.release()
            results = self._hand_back(self.outputs, fresh=False)
            self.done = (stream, stream.record())
            return results

    def _variables_in_place(self) -> bool:
        """Is every variable the graph reads in its captured array? A variable given a new
        array of the same shape and dtype is copied back into it; False for another."""
        state = self.state
        for name, array in self.variables.items():
            current = state.get(name)
            if current is array:
                continue
            if current is None or current.shape != array.shape or current.dtype != array.dtype:
                return False
            array[...] = current
            state[name] = array
        return True

    def _capture(self, feeds) -> None:
        cp, state = self.cp, self.state
        self.graph, self.kept = None, ()  # (a capture again: the old graph goes first)
        buffers = [cp.empty(f.shape, dtype=f.dtype) for f in feeds]
        # the capture's run works on a copy of the variables' dict, never the session's: a
        # run on another thread meanwhile sees none of its arrays (of no value: nothing ran),
        # and the capture takes none of that run's for its own
        before = dict(state)
        private = dict(before)
        pool = cp.cuda.MemoryPool()
        stream = cp.cuda.Stream(non_blocking=True)
        with cp.cuda.using_allocator(pool.malloc), stream:
            stream.begin_capture()
            try:
                outputs = self.plan.fn.on_state(private)(*buffers)
                updated = _update_in_place(before, private)
            except BaseException as e:
                _abandon(stream)
                raise self._refusal(e) from e
            graph = stream.end_capture()
        for name in updated:  # (a variable the run made: the session's too, as a run's)
            if name not in before:
                state.setdefault(name, private[name])
        self.variables = {n: private[n] for n in (*self.plan.var_reads, *updated)
                          if n in private}
        self.feeds, self.outputs = buffers, outputs
        self.kept = (pool, stream, buffers, outputs)
        self.graph = graph

    def _refusal(self, e: BaseException) -> BaseException:
        """The error of a failed capture: UnimplementedError naming the op that a graph cannot
        hold, which every later call raises at once (a run out of memory is not that)."""
        if isinstance(e, OpError | MemoryError) or not isinstance(e, Exception):
            return e
        op = self.plan.failing_op(e)
        self.refused = (op, f"{_where(op)} cannot be captured in a CUDA graph "
                            f"(make_callable(..., cuda_graph=True)): it waits for the GPU or "
                            f"works on the host: {type(e).__name__}: {e}")
        return UnimplementedError(None, *self.refused)

    def _hand_back(self, results, fresh: bool) -> tuple:
        """The run's fetches as a call returns them: on the host (a rank-0 one as a NumPy
        scalar), or on the GPU (copies, where the graph writes them again)."""
        if self.fetch_device:
            return results if fresh else tuple(r if r is None else r.copy() for r in results)
        out = []
        for r in results:
            if r is None:
                out.append(None)
                continue
            host = self.cp.asnumpy(r)
            out.append(host[()] if host.ndim == 0 else host)
        return tuple(out)


def _update_in_place(before: dict, state: dict) -> list[str]:
    """In the capture: each variable the run gave a new array (`state` against `before`)
    copied back into its array of before, which `state` gets back; their names. A variable
    the run made (an initializer's) keeps its new array."""
    updated = [name for name, value in state.items() if before.get(name) is not value]
    olds = {id(before[n]) for n in updated if n in before}
    copies = {}
    for name in updated:
        old, new = before.get(name), state[name]
        if old is None:
            continue
        if old.shape != new.shape or old.dtype != new.dtype:
            raise ValueError(f"variable {name!r} is given a value of another shape or dtype "
                             f"({new.dtype}{list(new.shape)} for {old.dtype}{list(old.shape)})")
        # (another variable's array of before, which a copy below writes over: copied first)
        copies[name] = (old, new.copy() if id(new) in olds else new)
    for name, (old, new) in copies.items():
        old[...] = new
        state[name] = old
    return updated


def _abandon(stream) -> None:
    """End a capture that failed (its graph, if CuPy still makes one, is dropped)."""
    try:
        stream.end_capture()
    except Exception:  # noqa: BLE001 - an invalidated capture: CuPy says so, nothing to keep
        pass


def _where(op) -> str:
    return op.where() if op is not None else "the generated code"
