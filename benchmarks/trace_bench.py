"""Analyse one large trace with torchdoctor and with HTA, side by side: wall time and peak RSS.

    .venv/bin/python benchmarks/trace_bench.py /tmp/big.json --hta-python /work/hta-venv/bin/python

Each tool runs in its own child process (so peak RSS is its own, read from the child's rusage):
torchdoctor's `analyse_traces` (load + every analysis), and HTA's `TraceAnalysis` (load) plus
`get_temporal_breakdown`. HTA runs under an address-space limit (`--hta-mem-gb`) so that a trace
too big for it fails cleanly instead of exhausting a shared machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_TD = """
import sys
from torchdoctor.trace import analyse_traces
r = analyse_traces([sys.argv[1]]).to_dict()["ranks"][0]
t = r["device"]["temporal"]
print(f"idle {t['idle_fraction']:.4f} compute {t['compute_fraction']:.4f} steps {r['steps_count']}")
"""
_HTA = """
import sys, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
tb = TraceAnalysis(trace_dir=sys.argv[1]).get_temporal_breakdown(visualize=False)
print(f"idle {tb['idle_time_pctg'][0] / 100:.4f} compute {tb['compute_time_pctg'][0] / 100:.4f}")
"""


def _run(argv: list[str], mem_gb: float | None = None) -> tuple[float, float, float, int, str]:
    """Wall seconds, CPU seconds, peak RSS GiB, exit status, last output line of one child process."""

    def limit() -> None:
        if mem_gb:
            resource.setrlimit(resource.RLIMIT_AS, (int(mem_gb * 2**30),) * 2)

    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=limit, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    out = proc.stdout.read().strip().splitlines() if proc.stdout else []
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 2**20, os.waitstatus_to_exitcode(status), (out[-1] if out else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", type=Path)
    parser.add_argument("--hta-python", help="interpreter with HolisticTraceAnalysis installed")
    parser.add_argument("--hta-mem-gb", type=float, default=16.0)
    args = parser.parse_args()
    size_gb = args.trace.stat().st_size / 1e9
    print(f"trace {args.trace} {size_gb:.2f} GB, {os.cpu_count()} CPUs")
    wall, cpu, rss, code, line = _run([sys.executable, "-c", _TD, str(args.trace)])
    print(f"torchdoctor: {wall:.1f} s ({cpu:.1f} s CPU), peak RSS {rss:.2f} GiB ({rss * 2**30 / 1e9 / size_gb:.2f}x file), exit {code}: {line}")
    if not args.hta_python:
        return
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(args.trace.resolve(), Path(tmp) / "rank-0.json")
        h_wall, h_cpu, h_rss, h_code, h_line = _run([args.hta_python, "-c", _HTA, tmp], args.hta_mem_gb)
    print(f"HTA: {h_wall:.1f} s ({h_cpu:.1f} s CPU), peak RSS {h_rss:.2f} GiB, exit {h_code}: {h_line}")
    if h_code == 0:
        print(f"speed-up {h_wall / wall:.1f}x, memory ratio {h_rss / rss:.1f}x")


if __name__ == "__main__":
    main()
