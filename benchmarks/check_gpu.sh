#!/bin/bash
# The device check of `torchdoctor check` on a CUDA machine (not yet run; see docs/check.md):
#  - observations forked from the fork server use CUDA (the server never initialises it);
#  - a GPU slowdown (commit 2 adds a 4096x4096 fp32 matmul to each forward, ~+50% of the step) is
#    caught with the window clock, and the location lists the kernels that grew;
#  - A against A passes.
# Run from the repository root, with wheels of torchdoctor's missing dependencies (orjson, ijson,
# libcst for the machine's Python) in .whl/; results under $OUT (or ./check-gpu-out).
#   bash benchmarks/check_gpu.sh
set -u
source benchmarks/gpu_env.sh check-gpu-out
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
repo=$(mktemp -d)/repo; mkdir -p "$repo"; cp benchmarks/check_gpu_train.py "$repo/train.py"
g() { git -C "$repo" -c user.name=t -c user.email=t@example.com "$@"; }
g init -q; g add train.py; g commit -qm fast
sed -i 's/^EXTRA = 0/EXTRA = 1/' "$repo/train.py"; g commit -qam slower
cd "$repo"
start=$(date +%s)
timeout 220 python3 -m torchdoctor check --against HEAD~1 --json "$OUT/gpu_regression.json" \
  --markdown "$OUT/gpu_regression.md" -- train.py > "$OUT/gpu_regression.txt" 2>&1
echo "regression check: exit $? (expected 1) in $(( $(date +%s) - start )) s"
start=$(date +%s)
timeout 150 python3 -m torchdoctor check --against HEAD --no-memory --json "$OUT/gpu_aa.json" -- train.py \
  > "$OUT/gpu_aa.txt" 2>&1
echo "A against A: exit $? (expected 0) in $(( $(date +%s) - start )) s"
tail -c 5000 "$OUT/gpu_regression.txt"
tail -c 2500 "$OUT/gpu_aa.txt"
