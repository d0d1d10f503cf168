#!/usr/bin/env bash
# One device call: gate every held-out CUDA workload, JSON per workload under $OUT, a table last.
# Run from the repo root on the GPU machine, with the dependency wheels carried in .whl/.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi -L
for w in ${WORKLOADS:-scale_flat rowmax_gridstride rmsnorm_2dgrid stencil1d_cuda bias_gelu_2d dot_f64acc hist256_u8}; do
  timeout "${PER_WORKLOAD_S:-60}" python3 -m klineage.cli gate "examples/heldout/cuda/$w" --json \
    > "$OUT/$w.json" 2> "$OUT/$w.err"
  echo "$w rc=$?"
done
python3 examples/heldout/cuda/_harness/summarize.py "$OUT"/*.json
