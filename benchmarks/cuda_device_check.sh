#!/usr/bin/env bash
# One call of the device tool, for a session lent a GPU: the CUDA backend's tests there (on
# the GPU, not the emulator: CuPy sees a device), the gradient checks, then the GPU
# benchmarks beside PyTorch and JAX. Logs and JSON go under $OUT (the device tool's), else
# benchmarks/results/. About 6 minutes; run it as
#     bash benchmarks/cuda_device_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-benchmarks/results}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
export STATICGRAD_CUDA_CACHE="$(mktemp -d)"
nvidia-smi -L
python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)"
# first what the emulator alone has checked so far, each on its own so that a hang shows:
# CUDA graphs (stream capture with a private memory pool, cuBLAS and CuPy's reductions under
# capture, a sync refused by name, variables updated in place across replays)
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/backends/cuda/test_graphs.py 2>&1 \
    | tee "$out/graphs.log" | tail -15
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/backends/cuda 2>&1 \
    | tee "$out/parity.log" | tail -25
timeout 220 python3 benchmarks/bench_cuda.py --quick --out "$out/cuda.json" 2>&1 \
    | tee "$out/bench.log" | tail -45
