"""Peak memory and time of the trace commands on traces of many steps and on real traces, for two
source trees side by side (the code before a change and after it), runs interleaved.

    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/trace_memory.py --before OLD/src [--runs 2]

Inputs, written into a temporary folder: the hostile corpus's 97,000 bare profiler steps (9.8 MB,
tests/hostile/corpus.py), 100,000 steps of three small operators each (`.json.gz`, 1.3 MB;
40 MB of JSON), 28,000 such steps as plain JSON (9.7 MB), and the largest real traces of the
shared fixtures. Each runs through `trace analyze FILE` (and the first two also through
`diagnose --trace FILE --no-save`) in a child process whose peak RSS is its own VmHWM
(tests/hostile/peak_rss.py). Then the engine's speed: `analyse_traces` on each real trace in a
child process, with `orjson.loads` of the same (decompressed) bytes timed in the same child as the
yardstick of the machine's speed at that moment. Prints markdown tables.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hostile"))
import corpus  # noqa: E402
import peak_rss  # noqa: E402

FIXTURES = Path(os.environ.get("TORCHDOCTOR_SHARED", ROOT.parent / "shared")) / "fixtures" / "traces"
REAL = ("a100-transformer-16rank-cudagraph-rank0.json.gz", "v100-cnn-gpu-bound.json.gz", "a100-ddp2-rank0.json.gz")
_SPEED = """
import gzip, sys, time, orjson
from torchdoctor.trace import TraceConfig, analyse_traces
path = sys.argv[1]
raw = open(path, "rb").read()
text = gzip.decompress(raw) if path.endswith(".gz") else raw
loads = []
for _ in range(5):
    start = time.perf_counter(); orjson.loads(text); loads.append(time.perf_counter() - start)
start = time.perf_counter()
analyse_traces([path], TraceConfig(), jobs=1)
print(time.perf_counter() - start, min(loads))
"""


def small_ops_steps(steps: int, ops: int = 3) -> bytes:
    """`steps` profiler steps of 100 us, each with `ops` operators of 5 us."""
    events = []
    for n in range(steps):
        events.append('{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","ts":%d,"dur":90,"pid":1,"tid":1}'
                      % (n, n * 100))
        events += ['{"ph":"X","cat":"cpu_op","name":"aten::op%d","ts":%d,"dur":5,"pid":1,"tid":1}'
                   % (k, n * 100 + 10 + 20 * k) for k in range(ops)]
    return ('{"traceEvents": [' + ",".join(events) + "]}").encode()


def inputs(folder: Path) -> list[tuple[Path, list[str]]]:
    """(trace, the commands it runs through)."""
    made = {"corpus-97k-bare-steps.json": corpus.trace_many_steps(),
            "100k-steps-3-ops.json.gz": gzip.compress(small_ops_steps(100_000)),
            "28k-steps-3-ops.json": small_ops_steps(28_000)}
    out = []
    for name, data in made.items():
        (folder / name).write_bytes(data)
        out.append((folder / name, ["trace analyze", "diagnose --trace"] if "json.gz" in name or "corpus" in name
                    else ["trace analyze"]))
    return out + [(FIXTURES / name, ["trace analyze"]) for name in REAL]


def _argv(command: str, path: Path) -> list[str]:
    return ["-m", "trace", "analyze", str(path)] if command == "trace analyze" else \
        ["-m", "diagnose", "--trace", str(path), "--no-save"]


def memory(args: argparse.Namespace, folder: Path) -> None:
    print("| trace | size | command | before: peak RSS, wall | after: peak RSS, wall |\n|---|---|---|---|---|")
    for path, commands in inputs(folder):
        if args.traces and path.name not in args.traces:
            continue
        for command in commands:
            got: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
            for _ in range(args.runs):
                for label, src in (("before", args.before), ("after", args.after)):
                    start = time.perf_counter()
                    run = peak_rss.run(_argv(command, path), timeout_s=args.timeout, src=src)
                    if run.exit not in (0, 1):
                        print(f"<!-- {label} {path.name} {command}: exit {run.exit}: {run.output[-300:]} -->")
                    got[label].append((run.peak_mb, time.perf_counter() - start))
            cells = [", ".join(f"{mb:.0f} MB {s:.1f} s" for mb, s in got[label]) for label in ("before", "after")]
            print(f"| {path.name} | {path.stat().st_size / 1e6:.1f} MB | {command} | {cells[0]} | {cells[1]} |",
                  flush=True)


def speed(args: argparse.Namespace) -> None:
    print("\n| trace | before: analyse_traces / orjson.loads | after: analyse_traces / orjson.loads |\n|---|---|---|")
    for name in REAL:
        got: dict[str, list[float]] = {"before": [], "after": []}
        cells = {}
        for _ in range(args.runs):
            for label, src in (("before", args.before), ("after", args.after)):
                out = subprocess.run([sys.executable, "-c", _SPEED, str(FIXTURES / name)], capture_output=True,
                                     text=True, env={**os.environ, "PYTHONPATH": str(src)}, check=True).stdout
                analyse_s, loads_s = map(float, out.split())
                got[label].append(analyse_s / loads_s)
                cells.setdefault(label, []).append(f"{analyse_s:.2f} s / {loads_s * 1e3:.0f} ms")
        print(f"| {name} | " + " | ".join(f"{'; '.join(cells[k])} (median {statistics.median(got[k]):.1f}x)"
                                          for k in ("before", "after")) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the source tree before the change")
    parser.add_argument("--after", type=Path, default=ROOT / "src")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--only", choices=("memory", "speed"))
    parser.add_argument("--traces", nargs="*", help="only these inputs (file names), for runs in parallel")
    args = parser.parse_args()
    print(f"<!-- load average at the start: {os.getloadavg()} -->")
    with tempfile.TemporaryDirectory(prefix="trace-memory-") as name:
        if args.only != "speed":
            memory(args, Path(name))
    if args.only != "memory":
        speed(args)
    print(f"<!-- load average at the end: {os.getloadavg()} -->")


if __name__ == "__main__":
    main()
