"""The digits examples' training loops, two commits alternately (issue 27's "digits LeNet at
least 1.5x faster").

Each commit is checked out once, detached, in a temporary git worktree; each run is a fresh
process of the example (`examples/digits_lenet.py` by default) in that checkout, with
`_digits.train` wrapped to time the training loop (every epoch, both batch sizes' compiles
included) beside the whole program's wall time, start-up included. Runs alternate (old, new,
old, new...) so that a slow spell of this shared machine falls on both; bytecode caching is
on (PYTHONDONTWRITEBYTECODE removed from the children's environment), as on a user's
machine, and one untimed run of each commit first fills the caches (bytecode, numba's).

    python benchmarks/bench_digits.py 40eac87 HEAD               # 5 runs of each
    python benchmarks/bench_digits.py 40eac87 HEAD --runs 7 --example digits_mlp

Prints each run, then per commit the median training loop and program, and the ratios of
the old commit's medians to the new's (above 1: the new one is faster).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

from compare_commits import git

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# the child: the example's main() with _digits.train timed (argv: checkout, example)
CHILD = """
import sys, time
start = time.perf_counter()
checkout, example = sys.argv[1:3]
sys.path[:0] = [checkout + "/examples", checkout]
sys.argv = [example + ".py"]
import _digits
train, timed = _digits.train, {}
def timed_train(*args, **kwargs):
    t = time.perf_counter()
    train(*args, **kwargs)
    timed["train"] = time.perf_counter() - t
_digits.train = timed_train
__import__(example).main()
print(f"RESULT {timed['train']:.4f} {time.perf_counter() - start:.4f}")
"""


def run_once(checkout: str, example: str) -> tuple[float, float, str]:
    """(training loop s, program s, the example's last line) of one fresh process."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run([sys.executable, "-c", CHILD, checkout, example], env=env,
                         cwd=checkout, check=True, capture_output=True, text=True).stdout
    lines = out.strip().splitlines()
    _, train, total = lines[-1].split()
    return float(train), float(total), lines[-2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--example", default="digits_lenet")
    args = parser.parse_args()
    sides = [("old", args.old), ("new", args.new)]  # (the same commit twice is allowed)
    with tempfile.TemporaryDirectory(prefix="sg-digits-") as tmp:
        checkouts = []
        for side, commit in sides:
            path = os.path.join(tmp, side)
            git("worktree", "add", "--detach", path, commit)
            checkouts.append(path)
        try:
            for path in checkouts:
                run_once(path, args.example)  # (the caches)
            times = {side: [] for side, _ in sides}
            for i in range(args.runs):
                for (side, commit), path in zip(sides, checkouts):
                    train, total, last = run_once(path, args.example)
                    times[side].append((train, total))
                    print(f"run {i + 1}/{args.runs} {side} ({commit}): training loop "
                          f"{train:.3f} s, program {total:.3f} s ({last})", flush=True)
        finally:
            for path in checkouts:
                git("worktree", "remove", "--force", path)
    medians = {side: [statistics.median(t[k] for t in runs) for k in (0, 1)]
               for side, runs in times.items()}
    for side, commit in sides:
        train, total = medians[side]
        print(f"{side} ({commit}): training loop {train:.3f} s, program {total:.3f} s "
              f"(medians)")
    (old_train, old_total), (new_train, new_total) = medians["old"], medians["new"]
    print(f"old / new: training loop {old_train / new_train:.2f}x, "
          f"program {old_total / new_total:.2f}x")

if __name__ == "__main__":
    main()
