#!/bin/bash
# The device check of `torchdoctor tune` on a CUDA machine: benchmarks/tune_zoo.py's GPU workload
# (gpu/gpt: a ~27 M-parameter GPT trained in fp32), tuned, then re-measured independently (plain
# script vs `torchdoctor run --apply`, interleaved, the script's own steps), beside the expert fix
# (bf16 autocast). Needs a call of about ten minutes: on the H200 in gVisor each observed run took
# ~24 s (start-up and a 1 s window), and 430 s ended it before the re-measurement (docs/gpu.md).
# Run from the repository root, with wheels of torchdoctor's missing dependencies (orjson, ijson,
# msgspec, libcst, optuna, alembic, colorlog, mako, sqlalchemy, greenlet for the machine's Python) in
# .whl/; results under $OUT (or ./tune-gpu-out).
#   bash benchmarks/tune_gpu.sh
set -u
source benchmarks/gpu_env.sh tune-gpu-out
python3 -c "import torch, torchdoctor.tune; print('torch', torch.__version__, torch.cuda.get_device_name(0))" || exit 1
nproc; uptime
start=$(date +%s)
timeout "${TUNE_GPU_TIMEOUT:-560}" python3 benchmarks/tune_zoo.py --workloads gpu/gpt --rounds 3 --max-rounds 6 \
  --precision 0.05 --steps 20 --warmup-steps 5 --time-budget 200 --max-trials 3 --confirm-span 20 \
  --confirm-max-rounds 6 --out "$OUT/tune_gpu.json" > "$OUT/tune_gpu.txt" 2>&1
echo "tune_zoo gpu/gpt: exit $? in $(( $(date +%s) - start )) s"
tail -c 6000 "$OUT/tune_gpu.txt"
