#!/usr/bin/env bash
# One device call: build + check + time everything, then compute-sanitizer over the check shapes.
# Usage (from the repo root, on the GPU machine): bash examples/workloads/cuda/_harness/device_run.sh
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/kl_out}; mkdir -p "$OUT"
date -u +"run date (UTC): %Y-%m-%d %H:%M"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
PYTHONUNBUFFERED=1 python3 check.py "$@" 2>&1 | tee "$OUT/log.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv
if [ "${KL_SANITIZE:-1}" = 1 ]; then
  : > "$OUT/sanitizer.txt"
  for w in gemm_bf16 softmax add_rmsnorm layernorm row_sum silu_and_mul; do
    for tool in memcheck racecheck; do
      [ "$tool" = racecheck ] && [ "$w" != gemm_bf16 ] && [ "$w" != softmax ] && continue
      echo "===== $tool $w" >> "$OUT/sanitizer.txt"
      PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "${KL_SAN_TIMEOUT:-60}" compute-sanitizer --tool $tool \
        python3 check.py --child $w --small >> "$OUT/sanitizer.txt" 2>&1
      echo "$tool $w rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer.txt" | tail -1) \
bad_checks=$(awk "/===== $tool $w\$/{f=1;next} /=====/{f=0} f" "$OUT/sanitizer.txt" | grep -c 'ok=False')"
    done
  done
fi
