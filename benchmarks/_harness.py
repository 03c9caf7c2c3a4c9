"""What the stand-alone benchmarks share: thread limits, their command line, interleaved timing,
medians and ratios to hand NumPy, and the results JSON with its environment block.

Used by the `bench_*.py` scripts (and, for the thread limits and the JSON file, `suite.py`).
Nothing here imports NumPy at module level: `limit_threads()` must run before NumPy is
imported.
"""

import argparse
import json
import os
import platform
import statistics

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def limit_threads(n: int = 2) -> None:
    """Limit NumPy's (and the peers') thread pools; they read these once, at import."""
    for var in THREAD_VARS:
        os.environ[var] = str(n)


def timing_arguments(doc: str, number: int, what: str, out: str) -> argparse.ArgumentParser:
    """The command line every timing script takes: --rounds, --number (`what` per round and
    way, `number` by default) and --out (the JSON file, `out` by default); a script may add
    its own before parsing."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds (default 7)")
    parser.add_argument("--number", type=int, default=number,
                        help=f"{what} per round and way (default {number})")
    parser.add_argument("--out", default=out,
                        help=f"JSON results file (default {os.path.relpath(out)})")
    return parser


def time_interleaved(ways: dict, rounds: int, number: int, warmup: int, scale: float,
                     settle_s: float = 0.0, collect: bool = False) -> dict:
    """{way: [time per call in each round, times `scale`]}: every way timed in turn within
    each round, `number` calls at a time, after `warmup` untimed calls of each (the suite's
    loop, `workloads.common.interleaved`, with its rest of `settle_s` before each turn)."""
    from workloads import common

    per_call = common.interleaved(ways, rounds, number, warmup=warmup, settle_s=settle_s,
                                  collect=collect)
    return {name: [t * scale for t in times] for name, times in per_call.items()}


def medians_and_ratios(per_call: dict, base: str = "hand_numpy") -> tuple:
    """({way: median}, {way: median / the median of `base`})."""
    median = {name: statistics.median(v) for name, v in per_call.items()}
    ratio = {name: m / median[base] for name, m in median.items()}
    return median, ratio


def environment(with_platform: bool = False, threads=("OMP_NUM_THREADS",)) -> dict:
    """The JSON's environment block: versions, the machine, the thread limits in `threads`."""
    import numpy as np

    import staticgrad as sg

    env = {"python": platform.python_version(), "numpy": np.__version__,
           "staticgrad": sg.__version__, "machine": platform.machine()}
    if with_platform:
        env["platform"] = platform.platform()
    env.update({var: os.environ[var] for var in threads})
    return env


def write_json(path: str, results: dict) -> None:
    """Write `results` to `path` (making its folder), indented, and say so."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    print(f"wrote {path}")
