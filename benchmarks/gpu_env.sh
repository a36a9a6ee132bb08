# Sourced by the device checks (benchmarks/check_gpu.sh, benchmarks/tune_gpu.sh) from the repository
# root: `source benchmarks/gpu_env.sh DEFAULT_OUT`. Makes $OUT (default ./DEFAULT_OUT), installs the
# wheels in .whl/ (torchdoctor's dependencies the machine's Python lacks) into /tmp/site, and puts
# them and src/ on PYTHONPATH.
OUT=${OUT:-$PWD/$1}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD/src:${PYTHONPATH:-} PYTHONUNBUFFERED=1 COLUMNS=160
nvidia-smi --query-gpu=name,memory.used --format=csv
