#!/usr/bin/env bash
# GPU truth: run torchdoctor's GPU paths once on a real CUDA device, in one prepared call.
#
#   bash benchmarks/gpu_truth.sh [OUT_DIR]          # OUT_DIR defaults to $OUT, else ./gpu_truth_out
#
# Steps, most valuable first, each with its own timeout, all inside GPU_TRUTH_BUDGET_S seconds
# (default 380; a step's timeout is cut to what is left, and a step with under 10 s left is
# skipped and says so):
#   env          nvidia-smi, torch and CUDA versions, pip versions, imports of torchdoctor's needs
#   diagnose     `diagnose --demo` (the demo trains on the GPU): profiler kernels, NVML, allocator
#   trace        `trace analyze` on the traces diagnose recorded, and HolisticTraceAnalysis beside it
#   memory_*     `memory` on a GPT-style model: plain, with activation checkpointing, with a
#                memory-history snapshot, then the snapshot analysed
#   infer        `infer --demo --device cuda`: eager, bf16, fp16, export, ONNX Runtime, int8
#   tune         `tune --demo` on the GPU knobs (small --time-budget)
#   infer_compile  `infer --demo --device cuda` for torch.compile (default and reduce-overhead)
#   tests_cpu    a slice of the unit tests on this machine's torch, with CUDA hidden (version check)
#   summary      benchmarks/gpu_truth_summary.py: the key figures of every step
# Every step prints the command, the tail of its log, its exit code and its seconds. Without CUDA the
# CUDA steps print "skipped: no CUDA"; GPU_TRUTH_ON_CPU=1 runs them on the CPU at small sizes
# instead (to test this script on a machine without a GPU).
# Outputs: OUT_DIR/gpu_truth.tar.gz (every JSON, HTML, log, trace; packed again after each step, so a
# run cut short still leaves what it did), OUT_DIR/summary.txt, OUT_DIR/steps.tsv and, when small
# enough, OUT_DIR/gpt_snapshot.pickle.gz.
set -u

REPO=${GPU_TRUTH_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
OUT_DIR=${1:-${OUT:-$PWD/gpu_truth_out}}
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
W=${GPU_TRUTH_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/gpu_truth.XXXXXX")}
mkdir -p "$W/logs"
BUDGET_S=${GPU_TRUTH_BUDGET_S:-380}
PY=${PYTHON:-python3}
START=$SECONDS
cd "$REPO" || exit 1
export PYTHONUNBUFFERED=1 COLUMNS=${COLUMNS:-120}
: > "$W/steps.tsv"

pack() {
  # Everything of the work folder into one archive; files over 12 MiB are listed, not packed, and
  # the snapshot travels on its own (gzipped, at the end).
  local base
  base=$(basename "$W")
  find "$W" -type f -size +12M -printf "$base/%P\n" > "$W/left_out.txt"
  tar -czf "$OUT_DIR/gpu_truth.tar.gz.tmp" -C "$(dirname "$W")" --exclude-from="$W/left_out.txt" \
      --exclude='*.pickle' --exclude='*.pickle.gz' "$base" 2>/dev/null &&
    mv "$OUT_DIR/gpu_truth.tar.gz.tmp" "$OUT_DIR/gpu_truth.tar.gz"
  cp "$W/steps.tsv" "$OUT_DIR/steps.tsv"
}

note() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$W/steps.tsv"; }

# step NAME TIMEOUT_S NEEDS COMMAND...   (NEEDS: any | cuda)
step() {
  local name=$1 limit=$2 needs=$3
  shift 3
  local left=$((BUDGET_S - (SECONDS - START))) shown="$*"
  echo "== $name: ${shown:0:400}"
  if [ "$needs" = cuda ] && [ "$HAS_CUDA" != 1 ] && [ "${GPU_TRUTH_ON_CPU:-0}" != 1 ]; then
    echo "-- $name: skipped: no CUDA"
    note "$name" "skipped: no CUDA" 0
    return 0
  fi
  if [ "$left" -lt 10 ]; then
    echo "-- $name: skipped: out of the time budget (${BUDGET_S} s)"
    note "$name" "skipped: out of time" 0
    return 0
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$SECONDS rc
  # SIGINT first: torchdoctor's commands stop like on Ctrl-C and still write what they measured.
  timeout -s INT -k 15 "$limit" "$@" > "$W/logs/$name.log" 2>&1
  rc=$?
  grep -v '^\s*$' "$W/logs/$name.log" | tail -n "${GPU_TRUTH_TAIL:-6}" | cut -c1-160 | sed 's/^/   | /'
  local how="exit $rc"
  [ "$rc" = 124 ] && how="exit 124 (timed out at $limit s)"
  echo "-- $name: $how after $((SECONDS - t0)) s (log: logs/$name.log)"
  note "$name" "$rc" "$((SECONDS - t0))"
  pack
  return 0
}

TD=("$PY" -m torchdoctor)
if "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  HAS_CUDA=1
else
  HAS_CUDA=0
fi
if [ "$HAS_CUDA" = 1 ]; then DEVICE=cuda; SIZE=(); else DEVICE=cpu; SIZE=(--small); fi
echo "gpu_truth: CUDA=$HAS_CUDA, work folder $W, outputs in $OUT_DIR, budget $BUDGET_S s"

# -- env ----------------------------------------------------------------------------------------------
if command -v nvidia-smi >/dev/null; then
  step nvidia_smi 30 any sh -c 'nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit,temperature.gpu,utilization.gpu --format=csv'
else
  echo "== nvidia_smi: nvidia-smi"; echo "-- nvidia_smi: skipped: no CUDA (no nvidia-smi)"; note nvidia_smi "skipped: no CUDA" 0
fi
ENV_PY='
import importlib, importlib.metadata as meta, subprocess, sys
import torch
print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("device", p.name, f"cc {p.major}.{p.minor}", p.multi_processor_count, "SMs", p.total_memory, "bytes")
else:
    print("device: no CUDA")
for name in ("torch", "torchao", "optuna", "orjson", "ijson", "libcst", "onnxruntime", "onnxscript", "numpy",
             "pandas", "nvidia-ml-py", "triton", "holistictraceanalysis", "plotly", "typer", "rich"):
    try:
        print(name, meta.version(name))
    except meta.PackageNotFoundError:
        print(name, "not installed")
for module in ("torchdoctor.cli", "torchdoctor.tune", "torchdoctor.infer", "torchdoctor.memory", "torchdoctor.trace",
               "torchao.quantization", "pynvml", "hta.trace_analysis"):
    try:
        importlib.import_module(module)
        print("import", module, "ok")
    except Exception as exc:
        print("import", module, "FAILED:", repr(exc)[:300])
pip = subprocess.run([sys.executable, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True)
open(sys.argv[1], "w").write(pip.stdout)
print("pip list:", len(pip.stdout.splitlines()), "packages")
'
GPU_TRUTH_TAIL=40 step versions 90 any "$PY" -c "$ENV_PY" "$W/pip_list.txt"

# -- diagnose --demo: profiler window with CUDA activities, synchronised timing window, NVML, allocator
step diagnose 120 cuda "${TD[@]}" diagnose --demo --json "$W/diagnose_demo.json" --html "$W/diagnose_demo.html" \
  --store "$W/runs.db"

# -- trace analyze on the traces just recorded, with HTA beside it
TRACES=$(find "$W/runs" -name '*.pt.trace.json.gz' 2>/dev/null | sort | head -n 2)
if [ -n "$TRACES" ]; then
  # shellcheck disable=SC2086
  step trace_analyze 60 any "${TD[@]}" trace analyze $TRACES --json "$W/trace_analyze.json"
  # shellcheck disable=SC2086
  step trace_hta 90 any "$PY" benchmarks/gpu_truth_hta.py $TRACES --json "$W/trace_hta.json"
else
  echo "== trace_analyze: no trace was recorded by diagnose"; note trace_analyze "skipped: no trace" 0
fi

# -- memory on a GPT-style model: allocator figures, checkpointing what-if against its measured effect, snapshot
GPT=(benchmarks/gpu_gpt_train.py "${SIZE[@]}")
step memory_gpt 75 cuda "${TD[@]}" memory --json "$W/memory_gpt.json" --store "$W/runs.db" --memory-budget 16GiB \
  -- "${GPT[@]}"
step memory_gpt_checkpoint 60 cuda "${TD[@]}" memory --json "$W/memory_gpt_checkpoint.json" --store "$W/runs.db" \
  -- "${GPT[@]}" --checkpoint
step memory_gpt_snapshot 75 cuda "${TD[@]}" memory --json "$W/memory_gpt_snapshot.json" --store "$W/runs.db" \
  --snapshot "$W/gpt_snapshot.pickle" -- "${GPT[@]}"
if [ -f "$W/gpt_snapshot.pickle" ]; then
  step snapshot_analysis 60 any "$PY" -c 'import json, sys
from torchdoctor.memory.snapshot import analyse_snapshot, snapshot_timeline
summaries = [s.to_dict() for s in analyse_snapshot(sys.argv[1])]
json.dump(summaries, open(sys.argv[2], "w"), indent=1)
timeline = snapshot_timeline(sys.argv[1])
print(json.dumps(summaries)[:2000]); print("timeline points:", len(timeline.t_s))' "$W/gpt_snapshot.pickle" "$W/snapshot_analysis.json"
  ls -l "$W/gpt_snapshot.pickle"
else
  echo "== snapshot_analysis: no snapshot was written"; note snapshot_analysis "skipped: no snapshot" 0
fi

# -- infer --demo on CUDA: reduced precision and compile variants, with latencies and errors (two runs, so
# that a slow compilation cannot take the other variants' results with it)
INFER=("${TD[@]}" infer --demo --device "$DEVICE" --batch-sizes 1,32 --iters 20)
step infer 90 cuda "${INFER[@]}" --variants eager,no_grad,inference_mode,bf16,fp16,export,onnxruntime,int8_dynamic \
  --json "$W/infer_demo.json"

# -- tune --demo: the GPU knobs, with a small time budget
step tune 200 cuda "${TD[@]}" tune --demo --knobs num_workers,pin_memory,autocast_bf16,tf32,compile --int-trials 1 \
  --time-budget "${GPU_TRUTH_TUNE_BUDGET_S:-100}" --trial-timeout 75 --json "$W/tune_demo.json" --store "$W/runs.db"

# -- infer --demo on CUDA, torch.compile variants
step infer_compile 120 cuda "${INFER[@]}" --variants eager,compile,compile:reduce-overhead \
  --json "$W/infer_demo_compile.json"

# -- the unit tests that touch torch, on this machine's torch, CUDA hidden (API compatibility)
if "$PY" -c 'import pytest, xdist' 2>/dev/null; then XDIST=(-n 12); else XDIST=(); fi
step tests_cpu 75 any env CUDA_VISIBLE_DEVICES= "$PY" -m pytest -q -m "not slow" -p no:cacheprovider "${XDIST[@]}" \
  tests/knobs tests/memory tests/infer tests/observe tests/compile tests/tune

# -- summary -----------------------------------------------------------------------------------------
# Outside the budget: the summary always runs.
echo "== summary: $PY benchmarks/gpu_truth_summary.py $W"
timeout -k 5 60 "$PY" benchmarks/gpu_truth_summary.py "$W" > "$OUT_DIR/summary.txt" 2>&1
echo "-- summary: exit $? (summary.txt)"
cp "$OUT_DIR/summary.txt" "$W/summary.txt"
if [ -f "$W/gpt_snapshot.pickle" ]; then
  gzip -c "$W/gpt_snapshot.pickle" > "$W/gpt_snapshot.pickle.gz"
  if [ "$(stat -c %s "$W/gpt_snapshot.pickle.gz")" -lt 15000000 ]; then mv "$W/gpt_snapshot.pickle.gz" "$OUT_DIR/"; fi
  rm -f "$W/gpt_snapshot.pickle.gz"
fi
pack
cat "$OUT_DIR/summary.txt" 2>/dev/null
echo
echo "gpu_truth: done in $((SECONDS - START)) s; steps:"
cat "$W/steps.tsv"
ls -l "$OUT_DIR"
