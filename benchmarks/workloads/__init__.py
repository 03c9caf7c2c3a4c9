"""The workloads of the benchmark suite (`benchmarks/suite.py`), W1-W5 of issue 5.

One module per workload. W1-W3 each define `WORKLOAD`, a `common.Workload` whose ways are
timed side by side in one process; W4 (compile time) and W5 (peak memory) measure every way
in a fresh child process (`w4.measure`, `w5.measure`) and share W3's definitions where they
can. `peers.py` finds the optional peer systems; `charts.py` draws the PNGs.
"""
