"""The key figures of a benchmarks/gpu_truth.sh run, read back from the files its steps wrote.

    python benchmarks/gpu_truth_summary.py WORK_DIR

Prints one block per step (what is missing is said, never left out): the diagnose Record's
device, step time, NVML utilisation, allocator peak, profiler kernels and findings; the memory
runs' peaks, categories, allocator figures and the checkpointing estimate against the measured
run; the snapshot analysis; the inference ladder; the tuning trials with each trial's NVML
utilisation. Figures are printed as measured.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

MIB = 2**20


def _load(path: Path) -> Any:
    return json.loads(path.read_text())


def _mib(value: Any) -> str:
    return "-" if value is None else f"{value / MIB:.1f} MiB"


def _pct(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value * 1e3:.2f} ms"


def section(title: str, path: Path, body: Callable[[Any], None]) -> None:
    print(f"\n## {title} ({path.name})")
    if not path.exists():
        print(f"  missing: {path.name} was not written (see the step's log)")
        return
    try:
        body(_load(path))
    except Exception as exc:  # a summary must never hide the other sections
        print(f"  could not read: {exc!r}")


def diagnose(record: dict) -> None:
    env, summary = record.get("env", {}), record.get("summary", {})
    gpus = env.get("devices", {}).get("gpus") or []
    print(f"  exit: {record.get('exit', {}).get('reason')}; device: "
          f"{', '.join(g['name'] + ' (cc ' + g['capability'] + ')' for g in gpus) or 'no GPU'}")
    print(f"  median step {_ms(summary.get('step_s'))} (p90 {_ms(summary.get('step_s_p90'))}), "
          f"data wait {_pct(100 * (summary.get('data_wait_fraction') or 0))} of the step")
    walls = [st.get("wall_s") or 0.0 for st in record.get("steps") or []]
    if summary.get("window_s"):
        print(f"  timing window {summary['window_s']:.3f} s (device synchronised at its edges) against the sum of its "
              f"{len(walls)} step times {sum(walls):.3f} s")
    system = record.get("system", {})
    s = system.get("summary", {})
    print(f"  NVML sampled: {system.get('gpu_sampled')}, GPUs used: {system.get('gpu_uuids')}; "
          f"GPU utilisation over the {s.get('over')}: mean {_pct(s.get('gpu_util_percent_mean'))}, "
          f"max {_pct(s.get('gpu_util_percent_max'))} ({s.get('num_samples')} samples); "
          f"GPU memory max {_mib(s.get('gpu_memory_bytes_max'))}")
    memory = record.get("memory") or {}
    breakdown = memory.get("breakdown") or {}
    allocator = breakdown.get("allocator") or {}
    print(f"  memory step: {breakdown.get('method')} on {breakdown.get('device')}, peak {_mib(breakdown.get('peak_bytes'))} "
          f"({breakdown.get('phase')}); allocator peak allocated {_mib(allocator.get('peak_allocated_bytes'))}, "
          f"peak reserved {_mib(allocator.get('peak_reserved_bytes'))}")
    for rank in (record.get("trace") or {}).get("ranks") or []:
        device = rank.get("device") or {}
        temporal, kernels = device.get("temporal") or {}, device.get("kernels") or {}
        print(f"  trace rank {rank.get('rank')}: {rank.get('steps_count')} profiled steps, device events: "
              f"{'yes' if device else 'NONE'}; idle {_pct(100 * temporal['idle_fraction']) if temporal else '-'} "
              f"of the device span; kernels: {kernels.get('kernels_count', '-')}")
        for step in (rank.get("steps") or [])[:5]:
            util = step.get("gpu_utilisation_fraction")
            print(f"    step {step.get('step')}: wall {step.get('wall_us')} us, GPU busy "
                  f"{_pct(100 * util) if util is not None else '-'}")
    for finding in record.get("findings") or []:
        print(f"  finding {finding['id']} [{finding['severity']}] {finding['title']}")
    for warning in record.get("warnings") or []:
        print(f"  warning: {warning}")


def trace_hta(result: dict) -> None:
    for name, sides in result.items():
        ours, theirs = sides["torchdoctor"], sides["hta"]
        print(f"  {name}" + (f"  (HTA: {theirs['error']})" if "error" in theirs else ""))
        for key, value in ours.items():
            print(f"    {key:30} torchdoctor {_cell(value):>12}   HTA {_cell(theirs.get(key)):>12}")
        if theirs.get("errors"):
            print(f"    HTA errors: {theirs['errors']}")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def knobs_applying(path: Path) -> None:
    """Every registered knob's `applies` on the diagnose Record: which the device makes eligible."""
    print(f"\n## knobs that apply to the demo's Record ({path.name})")
    if not path.exists():
        print(f"  missing: {path.name}")
        return
    try:
        from torchdoctor.knobs import REGISTRY
        from torchdoctor.knobs.base import cuda_capability
        from torchdoctor.record import Record

        record = Record.load(path)
        print(f"  CUDA capability in the Record: {cuda_capability(record)}")
        applies = {name: knob.applies(record) for name, knob in sorted(REGISTRY.items())}
        print("  applies: " + ", ".join(n for n, a in applies.items() if a))
        print("  does not apply: " + ", ".join(n for n, a in applies.items() if not a))
        compile_choices = REGISTRY["compile"].choices(record)
        print(f"  compile choices: {[c['mode'] for c in compile_choices]}")
    except Exception as exc:
        print(f"  could not evaluate: {exc!r}")


def memory(record: dict) -> None:
    m = record.get("memory") or {}
    b = m.get("breakdown") or {}
    cats = b.get("categories_bytes") or {}
    allocator = b.get("allocator") or {}
    print(f"  exit: {record.get('exit', {}).get('reason')}; {b.get('method')} on {b.get('device')}: peak "
          f"{_mib(b.get('peak_bytes'))} during {b.get('phase')}, batch {b.get('batch_size')}")
    print("  categories: " + ", ".join(f"{k} {_mib(v)}" for k, v in cats.items() if v))
    if b.get("peak_bytes") and cats.get("activations") is not None:
        print(f"  activations share of the peak: {100 * cats['activations'] / b['peak_bytes']:.1f}%")
    print(f"  allocator: allocated {_mib(allocator.get('allocated_bytes'))}, reserved {_mib(allocator.get('reserved_bytes'))}, "
          f"peak allocated {_mib(allocator.get('peak_allocated_bytes'))}, peak reserved "
          f"{_mib(allocator.get('peak_reserved_bytes'))}, fragmentation {allocator.get('fragmentation')}, "
          f"retries {allocator.get('num_alloc_retries')}, OOMs {allocator.get('num_ooms')}")
    w = m.get("what_if") or {}
    print(f"  what-if: checkpointing peak {_mib(w.get('checkpointing_peak_bytes'))}, bf16 autocast peak "
          f"{_mib(w.get('autocast_bf16_peak_bytes'))}, per sample {_mib(w.get('per_sample_bytes'))}, "
          f"largest batch in budget {w.get('largest_batch_in_budget')}")
    print(f"  snapshot: {m.get('snapshot')} (note: {m.get('snapshot_note')}); snapshot timeline: "
          f"{'yes' if m.get('snapshot_timeline') else 'no'}; reason: {b.get('reason')}")


def checkpoint_check(work: Path) -> None:
    plain, ckpt = work / "memory_gpt.json", work / "memory_gpt_checkpoint.json"
    print("\n## activation checkpointing: estimate against the measured run")
    try:
        p, c = _load(plain)["memory"], _load(ckpt)["memory"]
        estimate, measured = p["what_if"]["checkpointing_peak_bytes"], c["breakdown"]["peak_bytes"]
        print(f"  plain peak {_mib(p['breakdown']['peak_bytes'])}; estimate with checkpointing {_mib(estimate)}; "
              f"measured with checkpointing {_mib(measured)} ({(estimate - measured) / measured:+.1%} off)")
        pa, ca = (x["breakdown"].get("allocator") or {} for x in (p, c))
        print(f"  allocator peak allocated: plain {_mib(pa.get('peak_allocated_bytes'))}, "
              f"checkpointing {_mib(ca.get('peak_allocated_bytes'))}")
    except Exception as exc:
        print(f"  not available: {exc!r}")


def snapshot(summaries: list) -> None:
    for s in summaries:
        print(f"  device {s['device']}: peak {_mib(s['peak_bytes'])}, before recording {_mib(s['baseline_bytes'])}; "
              + ", ".join(f"{k} {_mib(v)}" for k, v in s["categories_bytes"].items()))
        for site in s["sites"][:5]:
            print(f"    {_mib(site['bytes'])} in {site['count']} blocks at {site['site']}")


def infer(result: dict) -> None:
    print(f"  device {result.get('device')} ({result.get('env', {}).get('device_name')}); versions "
          f"{result.get('env', {}).get('versions')}")
    for v in result.get("variants") or []:
        line = f"  {v['name']:24} {v['status']:9}"
        if v.get("prepare_s") is not None:
            line += f" prepare {v['prepare_s']:.1f} s"
        print(line + (f"  {v['reason']}" if v.get("reason") else ""))
        for m in v.get("measurements") or []:
            acc = m.get("accuracy") or {}
            vs = m.get("vs_eager") or {}
            print(f"      batch {m['batch_size']:3}: p50 {_ms(m['latency_s_p50'])}, p99 {_ms(m['latency_s_p99'])}, "
                  f"max rel err {acc.get('max_rel_error')}, top-1 {acc.get('top1_agreement')}, "
                  f"peak {_mib(m.get('peak_device_memory_bytes'))}, vs eager {vs.get('verdict')} {vs.get('ratio')}")
    print(f"  recommendation: {result.get('recommendation')}")


def tune(result: dict, store: Path) -> None:
    util = _trial_utilisation(store)
    for t in result.get("trials") or []:
        label = "baseline" if t.get("knob") is None else f"{t['knob']}={t['value']!r}"
        print(f"  #{t['index']} {label:40} {t['status']:9} step {_ms(t.get('step_s'))}  "
              f"{t.get('duration_s', 0):.0f} s  GPU util {_pct(util.get(t.get('run_id')))}  {t.get('reason', '')}")
    print(f"  kept: {result.get('kept')}; stop: {result.get('stop_reason')}")
    print(f"  baseline {_ms(result.get('baseline_step_s'))} -> best {_ms(result.get('best_step_s'))}: "
          f"speed-up x{result.get('speedup') or float('nan'):.3f} ({result.get('metric')}); noise {result.get('noise')}")


def stored_trials(store: Path) -> None:
    """The tuning trials as stored trial by trial, for a tune that was stopped before its JSON."""
    print("\n## tune trials in the store (runs.db)")
    if not store.exists():
        print("  missing: runs.db")
        return
    import sqlite3

    util = _trial_utilisation(store)
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT tune_id, trial, run_id, knobs, verdict, reason, figures FROM trials "
                          "ORDER BY tune_id, trial").fetchall()
    for tune_id, trial, run_id, knobs, verdict, reason, figures in rows:
        step_s = json.loads(figures).get("step_s")
        print(f"  {tune_id} #{trial} {knobs:60} {verdict:9} step {_ms(step_s)} GPU util {_pct(util.get(run_id))}  "
              f"{reason or ''}")


def _trial_utilisation(store: Path) -> dict[str, float | None]:
    """Each stored run's NVML utilisation mean over its timing window (run id -> %)."""
    found: dict[str, float | None] = {}
    if not store.exists():
        return found
    try:
        from torchdoctor.store import RunStore

        with RunStore(store) as runs:
            for row in runs.list(limit=1000):
                record = runs.load(row.run_id)
                found[row.run_id] = ((record.system or {}).get("summary") or {}).get("gpu_util_percent_mean")
    except Exception as exc:  # the trials are still listed, without utilisation
        print(f"  (NVML utilisation per trial unavailable: {exc!r})")
    return found


def main(work: Path) -> None:
    section("diagnose --demo", work / "diagnose_demo.json", diagnose)
    section("trace analyze and HTA on the recorded GPU traces", work / "trace_hta.json", trace_hta)
    knobs_applying(work / "diagnose_demo.json")
    section("memory: GPT", work / "memory_gpt.json", memory)
    section("memory: GPT with activation checkpointing", work / "memory_gpt_checkpoint.json", memory)
    checkpoint_check(work)
    section("memory: GPT with a memory-history snapshot", work / "memory_gpt_snapshot.json", memory)
    section("snapshot analysis", work / "snapshot_analysis.json", snapshot)
    section("infer --demo: eager, precision, export, ONNX Runtime, int8", work / "infer_demo.json", infer)
    section("infer --demo: torch.compile", work / "infer_demo_compile.json", infer)
    section("tune --demo", work / "tune_demo.json", lambda r: tune(r, work / "runs.db"))
    if not (work / "tune_demo.json").exists():
        stored_trials(work / "runs.db")
    steps = work / "steps.tsv"
    print("\n## steps (name, exit code, seconds)")
    print(steps.read_text() if steps.exists() else "  missing: steps.tsv")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
