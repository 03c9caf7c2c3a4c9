"""W5: peak memory of W3 in steady state, over the baseline before the call.

Each way runs in a fresh child process (`python benchmarks/suite.py --child w5 WAY`), so no
way's peak or allocator state mixes with another's. The child sets W3 up (x allocated, the
function built and compiled), calls it twice more to reach steady state, then measures two
more calls in each of two ways:

- **RSS** (the headline figure): the peak resident set size during the calls minus the resident
  size just before them. Before the calls, garbage is collected and glibc's `malloc_trim(0)`
  hands freed heap back to the kernel; then writing "5" to `/proc/self/clear_refs` resets
  the kernel's peak (VmHWM), so VmHWM afterwards is the peak of these calls alone. RSS is the
  one measure that sees every system's memory: TF, PyTorch and XLA allocate through their own
  allocators, which tracemalloc never hears about. It counts pages, so it is exact only to a
  page, and a framework's allocator that keeps freed buffers for reuse shows them in the
  baseline, not in the peak.
- **tracemalloc**, for the ways whose arrays are all NumPy's (hand NumPy, staticgrad,
  PyTensor's C code, which allocates through NumPy): NumPy reports every data buffer to
  tracemalloc, so its traced peak is the exact byte count of live arrays (plus a little
  Python). It cross-checks the RSS figure; other ways get none (it would see only their
  fetched outputs).

Figures are MB (10^6 bytes): one 1M-element float32 array is 4 MB. The fed x exists before the
baseline and is not counted; the returned dy/dx is.
"""

from __future__ import annotations

import ctypes
import gc
import tracemalloc

from . import w3

CALLS = 2
TRACEMALLOC_WAYS = {"hand_numpy", "staticgrad", "staticgrad_no_passes", "staticgrad_no_fusion",
                    "staticgrad_no_vector_math", "pytensor"}


def way_names(available) -> dict:
    """{way name: label}: W3's ways without make_callable (the same compiled code)."""
    return {way.name: way.label.replace(" sess.run(feed_dict)", "")
            for way in w3.WORKLOAD.ways(available) if way.name != "staticgrad_make_callable"}


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _settle():
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the baseline keeps what the heap holds
        pass


def rss_peak_mb(call) -> float:
    _settle()
    base_kb = _status_kb("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    for _ in range(CALLS):
        call()
    return (_status_kb("VmHWM") - base_kb) * 1024 / 1e6


def tracemalloc_peak_mb(call) -> float:
    _settle()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(CALLS):
            call()
        return (tracemalloc.get_traced_memory()[1] - base) / 1e6
    finally:
        tracemalloc.stop()


def child(name: str, available, size: int) -> dict:
    """Run in the child process: set up way `name` of W3 on `size` values, warm up, measure."""
    w3.SIZE = size
    way = next(w for w in w3.WORKLOAD.ways(available) if w.name == name)
    call, _ = way.setup()
    for _ in range(CALLS):
        call()
    result = {"rss_mb": rss_peak_mb(call), "tracemalloc_mb": None}
    if name in TRACEMALLOC_WAYS:
        result["tracemalloc_mb"] = tracemalloc_peak_mb(call)
    return result
