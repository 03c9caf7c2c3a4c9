"""What the workloads share: ways, staticgrad's compile variants, the timing loop, the check.

A *way* is one implementation of a workload (hand-written NumPy, staticgrad with some options,
a peer system). Its `setup()` builds and compiles whatever it needs and returns
`(call, first)`: `call` is the zero-argument function that is timed, `first` the arrays its
first result gave (checked against hand NumPy's before anything is timed).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
import timeit
from collections.abc import Callable

import numpy as np

import staticgrad as sg

from . import peers

SHORT_LABELS = {"hand_numpy": "hand NumPy", "staticgrad": "staticgrad",
                "staticgrad_make_callable": "staticgrad make_callable",
                "staticgrad_no_passes": "staticgrad, every pass off",
                "staticgrad_no_fusion": "staticgrad, no fusion",
                "staticgrad_no_vector_math": "staticgrad, NumPy's exp/log", **peers.LABELS}


@dataclasses.dataclass
class Way:
    name: str                  # key in the JSON: hand_numpy, staticgrad, tf1, ...
    label: str                 # what the table prints
    setup: Callable[[], tuple]  # -> (call, first)


@dataclasses.dataclass
class Workload:
    """A workload timed in-process: hand NumPy, staticgrad's variants, the peers."""

    key: str                   # "W1"
    title: str
    unit: str                  # "us", "ms": per call
    scale: float               # seconds -> unit
    number: int                # calls per way per round
    quick_number: int
    hand: Callable             # the hand-NumPy setup
    staticgrad_way: Callable   # (options, fast) -> setup
    peer_setups: dict          # peer name -> setup
    rtol: float = 1e-5
    atol: float = 0.0
    fusion_matters: bool = False  # add "staticgrad, no fusion" once the pass exists

    def ways(self, available) -> list:
        """hand NumPy; staticgrad's variants through `sess.run(feed_dict)` (the default one
        through `make_callable` too); then each available peer."""
        out = [Way("hand_numpy", "hand NumPy", self.hand)]
        for name, (suffix, options) in staticgrad_variants(self.fusion_matters).items():
            out.append(Way(name, f"staticgrad sess.run(feed_dict){suffix}",
                           self.staticgrad_way(options, fast=False)))
            if options is None:
                out.append(Way("staticgrad_make_callable", "staticgrad make_callable",
                               self.staticgrad_way(options, fast=True)))
        out += [Way(p, peers.LABELS[p], self.peer_setups[p]) for p in available]
        return out


# ---------------------------------------------------------------------------------------------
# staticgrad's variants: default, every pass off, and (once the pass exists) no fusion; with
# the [fast] extra working here, the fused groups with NumPy's exp, log and sigmoid too.

def staticgrad_variants(fusion_matters: bool = False) -> dict:
    """{way name: (label suffix, CompileOptions or None)}, read from PASS_NAMES at run time."""
    names = tuple(sg.compiler.PASS_NAMES)
    variants = {"staticgrad": ("", None),
                "staticgrad_no_passes": (", every pass off",
                                         sg.CompileOptions(disable=set(names)))}
    if fusion_matters and "fuse" in names:
        variants["staticgrad_no_fusion"] = (", no fusion", sg.CompileOptions(disable={"fuse"}))
        if sg.runtime_fast.available():
            variants["staticgrad_no_vector_math"] = (
                ", NumPy's exp/log/sigmoid (no [fast])", sg.CompileOptions(vector_math=False))
    return variants


def session(graph, options) -> sg.Session:
    return sg.Session(graph=graph, options=options)


# ---------------------------------------------------------------------------------------------
# results

def as_numpy(value) -> np.ndarray:
    """A result of any system as a NumPy array (torch tensors, JAX arrays, NumPy scalars)."""
    if hasattr(value, "detach"):  # torch
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def as_arrays(values) -> list:
    return [as_numpy(v) for v in values]


def mismatch(got: list, want: list, rtol: float, atol: float) -> str | None:
    """None when `got` matches `want` elementwise; else what differs."""
    if len(got) != len(want):
        return f"{len(got)} results, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape and g.size != w.size:
            return f"result {i}: shape {g.shape}, expected {w.shape}"
        g = g.reshape(w.shape)
        if g.dtype != w.dtype and not (g.dtype.kind == w.dtype.kind == "f"):
            return f"result {i}: dtype {g.dtype}, expected {w.dtype}"
        if not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
            err = np.max(np.abs(g.astype(np.float64) - w) / (atol + rtol * np.abs(w) + 1e-300))
            return (f"result {i} differs (worst error {err:.3g} times the tolerance "
                    f"rtol={rtol}, atol={atol}); first values {g.ravel()[:3]} vs "
                    f"{w.ravel()[:3]}")
    return None


def error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 600 else text[:600] + " ..."


# ---------------------------------------------------------------------------------------------
# timing

def interleaved(calls: dict, rounds: int, number: int, warmup: int = 2,
                settle_s: float = 0.0, collect: bool = False) -> dict:
    """Seconds per call of each callable: `rounds` rounds, in each of which every callable is
    timed in turn for `number` calls (so drifts in load hit every way alike), in reverse
    order every other round: in a fixed order, W2's make_callable, timed right after
    sess.run, came out 2-20% slower than it in four suite runs of the same compiled code, and
    within 1% of it with the order alternating.

    Before each turn the loop sleeps `settle_s`: thread pools that busy-wait after their work
    (OpenBLAS, OpenMP, Eigen) would otherwise take cores from the way timed next -- with
    several runtimes in one process on 2 cores, that doubled some ways' times. After the
    rest, the way runs untimed for REWARM_S: on this VM, cores idle for 0.3 s run the next
    few tens of milliseconds of work slowly (W3 on 2 threads: 14-20 ms a call for its first
    3-4 calls, then 9.5 ms), which would time the machine waking, not the way. 0.1 s of
    calls was not enough for a way on two threads: W3's fused group was still 8% over its
    steady state (6.57 against 6.07 ms), and 0.3 s brings it there (6.09); single-threaded
    hand NumPy took the same time after either.

    `timeit` switches the cycle collector off while it times; `collect=True` keeps it on
    (the dynamic mode's measurements: a way that allocates many tracked objects pays for their
    collections in a user's loop too)."""
    setup = "import gc; gc.enable()" if collect else "pass"
    for call in calls.values():
        for _ in range(warmup):
            call()
    per_call = {name: [] for name in calls}
    order = list(calls.items())
    for r in range(rounds):
        for name, call in (order if r % 2 == 0 else order[::-1]):
            if settle_s:
                time.sleep(settle_s)
                _run_for(call, REWARM_S)
            per_call[name].append(timeit.timeit(call, setup, number=number) / number)
    return per_call


REWARM_S = 0.3


def _run_for(call, seconds: float) -> None:
    """call() at least once, and again until `seconds` have passed."""
    end = time.perf_counter() + seconds
    call()
    while time.perf_counter() < end:
        call()


def median(values: list) -> float:
    return statistics.median(values)

