"""Speed before and after a change: the suite (suite.py) of two commits, run alternately.

A change that should not move speed (a reshaping) is judged by the suite's ratios to hand
NumPy, which each run measures side by side in one process, from runs of the old and the new
commit taken in turn (old, new, old, new...: a slow spell of this shared machine falls on
both alike). For every workload and way the note gets the old runs' median and min-max
spread, the new runs' median, and whether the new median lies within the old spread. W4 is
judged by its headline seconds too (its ratio's denominator is under a millisecond).

    python benchmarks/compare_commits.py a0119e4 HEAD                  # 3 runs of each
    python benchmarks/compare_commits.py a0119e4 HEAD --runs 5 --only W1 W3
    python benchmarks/compare_commits.py a0119e4 HEAD --suite-args="--rounds 9"

Each commit is checked out once, detached, in a temporary git worktree (removed at the end);
each run is `suite.py --no-peers --no-plots` there, in a fresh process. Output: a table on
stdout and JSON (`--out`, default benchmarks/results/compare.json).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_OUT = os.path.join(HERE, "results", "compare.json")
WORKLOADS = ("W1", "W2", "W3", "W4", "W5")


def git(*argv: str, cwd: str = ROOT) -> str:
    return subprocess.run(["git", *argv], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def run_suite(tree: str, out: str, only: list[str], extra: list[str]) -> dict:
    """One run of the suite of the checkout `tree`, its JSON."""
    cmd = [sys.executable, os.path.join(tree, "benchmarks", "suite.py"), "--no-peers",
           "--no-plots", "--out", out, "--only", *only, *extra]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # (its own checkout)
    subprocess.run(cmd, cwd=tree, check=True, env=env, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def figures(result: dict) -> dict:
    """{(workload, way, measure): number} of one suite run: each way's ratio to hand NumPy,
    and W4's headline seconds."""
    out = {}
    for key, wl in result["workloads"].items():
        for way, data in wl["ways"].items():
            if way == "hand_numpy" or data.get("ratio") is None:
                continue
            out[(key, way, "ratio")] = data["ratio"]
            if key == "W4":
                out[(key, way, "seconds")] = data["median"]
    return out


def compare(old_runs: list[dict], new_runs: list[dict]) -> list[dict]:
    rows = []
    old_figs = [figures(r) for r in old_runs]
    new_figs = [figures(r) for r in new_runs]
    for fig in sorted(set().union(*old_figs) & set().union(*new_figs)):
        old = [f[fig] for f in old_figs if fig in f]
        new = [f[fig] for f in new_figs if fig in f]
        median = statistics.median(new)
        rows.append({"workload": fig[0], "way": fig[1], "measure": fig[2], "old": old,
                     "new": new, "old_median": statistics.median(old),
                     "new_median": median,
                     "within_old_spread": min(old) <= median <= max(old)})
    return rows


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the commit before the change")
    parser.add_argument("new", help="the commit after it")
    parser.add_argument("--runs", type=int, default=3, help="suite runs of each (default 3)")
    parser.add_argument("--only", nargs="+", type=str.upper, choices=WORKLOADS,
                        default=list(WORKLOADS))
    parser.add_argument("--suite-args", default="", help="more arguments for suite.py")
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    extra = shlex.split(args.suite_args)
    commits = {"old": git("rev-parse", args.old), "new": git("rev-parse", args.new)}
    runs: dict[str, list] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory(prefix="staticgrad-compare-") as tmp:
        trees = {}
        try:
            for side, commit in commits.items():
                trees[side] = os.path.join(tmp, side)
                git("worktree", "add", "--detach", trees[side], commit)
            for i in range(args.runs):
                for side in ("old", "new") if i % 2 == 0 else ("new", "old"):
                    out = os.path.join(tmp, f"{side}_{i}.json")
                    print(f"run {i + 1}/{args.runs}: {side} ({commits[side][:8]})", flush=True)
                    runs[side].append(run_suite(trees[side], out, args.only, extra))
        finally:
            for tree in trees.values():
                git("worktree", "remove", "--force", tree)
    rows = compare(runs["old"], runs["new"])
    print(f"\nold {commits['old'][:10]}, new {commits['new'][:10]}: {args.runs} runs each, "
          "alternating")
    print(f"  {'workload':8} {'way':28} {'measure':8} {'old median':>11} "
          f"{'old min-max':>19} {'new median':>11}  within")
    for r in rows:
        spread = f"{min(r['old']):.4g}-{max(r['old']):.4g}"
        print(f"  {r['workload']:8} {r['way']:28} {r['measure']:8} {r['old_median']:>11.4g} "
              f"{spread:>19} {r['new_median']:>11.4g}  "
              f"{'yes' if r['within_old_spread'] else 'NO'}")
    result = {"commits": commits, "runs": args.runs, "only": args.only, "rows": rows}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
