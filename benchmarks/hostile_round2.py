"""Re-run the second round of hostile inputs (docs/reliability.md), one minimal reproduction per
family, each in its own child process under a timeout and an address-space cap, and print a table:
family, handled or failed, why, exit code, peak RSS of the torchdoctor process, wall time.

    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/hostile_round2.py [--cap-gb 4] [--timeout 300] [--jobs 3]

A family is handled when the command ends within the timeout with the expected exit code and the
expected words, without a Python traceback and without a control character on the terminal
(colour codes aside). Inputs are written into a temporary folder, removed at the end.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hostile"))
import peak_rss  # noqa: E402

TRACE = ROOT / "tests" / "hostile" / "files" / "trace_unknown_categories.json"
_STYLES = re.compile("\x1b\\[[0-9;]*m")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LOOP = ("import torch\nm = torch.nn.Linear(8, 8)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
         "for _ in range(40):\n    opt.zero_grad()\n    m(torch.randn(4, 8)).sum().backward()\n    opt.step()\n")
_FORK = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n    os._exit(0)\n"
_DIAGNOSE = ["diagnose", "--no-save", "--warmup-steps", "2", "--steps", "5", "--"]


@dataclass(frozen=True)
class Case:
    family: str
    args: list[str]  # torchdoctor's arguments
    exits: tuple[int, ...]  # the exit codes that mean handled
    words: str  # what the output must hold ("" for nothing)
    check: Callable[[], str] | None = None  # a further check after the run: "" or why it failed


@dataclass(frozen=True)
class Outcome:
    family: str
    handled: bool
    why: str
    exit: int
    peak_mb: float
    wall_s: float


def _write(folder: Path, name: str, data: str | bytes) -> Path:
    path = folder / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _event(name: str, cat: str, ts: float, dur: float, **more: object) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, **more}


def _huge_times_trace(folder: Path) -> Path:
    events = [e for i in range(3) for e in (
        _event(f"ProfilerStep#{i}", "user_annotation", 1e300 * (i + 1), 1.7e308),
        _event("gemm", "kernel", 1e300 * (i + 1) + 2, 1e308, args={"correlation": i + 1}))]
    return _write(folder, "huge_times.json", json.dumps({"traceEvents": events}))


def _member_bomb(folder: Path) -> Path:
    one = json.dumps(_event("aten::mm", "cpu_op", 10, 5)) + ","
    body = ('{"traceEvents": [' + one * 400_000 + '{"ph": "M"}]}').encode()  # 40 MB, compresses ~500x
    return _write(folder, "members.json.gz", gzip.compress(b"") * 200_000 + gzip.compress(body))


def _record(folder: Path) -> Path:
    record = {"schema_version": 1, "artifacts": {"traces": 5}}
    return _write(folder, "wrong_type_record.json", json.dumps(record))


def _file_cases(folder: Path) -> list[Case]:
    fifo = folder / "trace.fifo"
    os.mkfifo(fifo)
    sparse = folder / "big.json"
    with open(sparse, "wb") as handle:
        handle.truncate(2 << 30)
    nested = _write(folder, "gen10k.py", "x = " + " + ".join(["1"] * 2500) + "\n")
    stuck = _write(folder, "fix" + "a" * 244 + ".py", "import torch\nx = torch.tensor([1]).cuda()\n")
    _write(folder, "fixb.py", "import torch\nx = torch.tensor([1]).cuda()\n")
    return [
        Case("FIFO as a trace", ["trace", "analyze", str(fifo)], (2,), "a FIFO, not a regular file"),
        Case("--store /dev/null", ["runs", "list", "--store", "/dev/null"], (2,), "not a regular file",
             lambda: "made /dev/runs" if Path("/dev/runs").exists() else ""),
        Case("lint: 10 KB nested expression", ["lint", str(nested)], (0,), "too deeply nested to parse"),
        Case("--steps 99999999999999999999", ["diagnose", "--steps", "99999999999999999999", "--", "x.py"], (2,),
             "less than or equal to 1000000"),
        Case("report: 2 GB sparse file", ["report", str(sparse)], (2,), "larger than"),
        Case("--json /dev/full", ["diagnose", "--no-save", "--trace", str(TRACE), "--json", "/dev/full"], (5,),
             "No space left on device"),
        Case("trace: times near 1e300 / float max", ["trace", "analyze", str(_huge_times_trace(folder))], (0,),
             "beyond 2^53 us"),
        Case("gzip: empty members before a bomb", ["trace", "analyze", str(_member_bomb(folder))], (2,),
             "possible gzip bomb"),
        Case("Record: wrongly typed section", ["report", str(_record(folder)), "--html", str(folder / "o.html")],
             (2,), "'artifacts.traces' should be"),
        Case("lint --fix: a file it cannot write", ["lint", "--fix", str(stuck), str(folder / "fixb.py")], (5,),
             "cannot write the fixed file",
             lambda: "" if "cuda()" not in (folder / "fixb.py").read_text() else "the other file was not fixed"),
    ]


def _script_cases(folder: Path) -> list[Case]:
    odd_path = Path(os.fsdecode(os.fsencode(str(folder)) + b"/run\xff.py"))
    odd_path.write_text(_LOOP)
    fork = _write(folder, "fork.py", _FORK + _LOOP)
    broken = _write(folder, "broken.py", "def f(:\n    pass\n")
    plain = _write(folder, "plain.py", "print('ran')\n")
    hostile = "\x1b[2J\x1b]52;c;aGk=\x07\x1b]8;;file:///etc/passwd\x07x\x1b]8;;\x07[/x]"
    result = _write(folder, "result.json", json.dumps({"schema_version": 3, "kept": {}, "script": hostile,
                                                       "script_sha256": "0" * 64}))
    return [
        Case("non-UTF-8 script name", [*_DIAGNOSE, str(odd_path)], (0,), "step"),
        Case("script with a forked child", [*_DIAGNOSE, str(fork)], (0,), "step"),
        Case("script that does not compile", [*_DIAGNOSE, str(broken)], (1,), "does not compile"),
        Case("escapes in a tune result's script", ["run", "--apply", str(result), "--force", "--", str(plain)],
             (0,), "ran"),
    ]


def _run(case: Case, cap: int, timeout: float) -> Outcome:
    started = time.monotonic()
    got = _peak_run(case.args, cap, timeout)
    wall = time.monotonic() - started
    text = _STYLES.sub("", got.output)
    why = ("timed out" if got.exit == -9 else f"exit {got.exit}" if got.exit not in case.exits
           else "traceback" if "Traceback (most recent call last)" in text
           else "control characters" if _CONTROL.search(text.replace("\n", "").replace("\t", ""))
           else f"no {case.words!r}" if case.words not in text.replace("\n", " ")
           else (case.check() if case.check else ""))
    return Outcome(case.family, not why, why or "as documented", got.exit, got.peak_mb, wall)


def _peak_run(args: list[str], cap: int, timeout: float) -> peak_rss.Run:
    """tests/hostile/peak_rss.run, with the output decoded as bytes may come (a non-UTF-8 path
    is echoed as the bytes it is)."""
    with tempfile.TemporaryDirectory() as folder:
        peak_file = Path(folder) / "peak"
        env = {**os.environ, "TD_PEAK_FILE": str(peak_file), "COLUMNS": "100"}
        try:
            proc = subprocess.run([sys.executable, "-c", peak_rss._RUNNER, "-m", *args], capture_output=True, env=env,
                                  timeout=timeout, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)))
            code = proc.returncode
            output = (proc.stdout + proc.stderr).decode("utf-8", "backslashreplace")
        except subprocess.TimeoutExpired:
            code, output = -9, f"killed after {timeout:.0f} s"
        peak_kb = float(peak_file.read_text()) if peak_file.exists() else float("nan")
    return peak_rss.Run(code, peak_kb / 1024, output)


def _sigterm_ignored(folder: Path, timeout: float) -> Outcome:
    """torchdoctor is SIGKILLed while its script ignores SIGTERM: the script must be gone soon after."""
    pid_file = folder / "ignorer.pid"
    script = _write(folder, "ignorer.py", f"import os, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                         f"import torch\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                                         "time.sleep(600)\n")
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "torchdoctor", "diagnose", "--no-save", "--", str(script)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not pid_file.exists() and time.monotonic() - started < timeout and proc.poll() is None:
        time.sleep(0.5)
    if not pid_file.exists():
        proc.kill()
        return Outcome("SIGTERM-ignoring script, torchdoctor killed", False, "the script never started", -1,
                       float("nan"), time.monotonic() - started)
    pid = int(pid_file.read_text())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for _ in range(60):
        if not Path(f"/proc/{pid}").exists() or "zombie" in _state(pid):
            return Outcome("SIGTERM-ignoring script, torchdoctor killed", True, "script gone", -9, float("nan"),
                           time.monotonic() - started)
        time.sleep(0.5)
    os.kill(pid, signal.SIGKILL)
    return Outcome("SIGTERM-ignoring script, torchdoctor killed", False, "script outlived it by 30 s", -9,
                   float("nan"), time.monotonic() - started)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0]
    except (OSError, IndexError):
        return "zombie"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap-gb", type=float, default=4.0)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--jobs", type=int, default=3)
    options = parser.parse_args()
    cap = int(options.cap_gb * (1 << 30))
    with tempfile.TemporaryDirectory(prefix="hostile-round2-") as name:
        folder = Path(name)
        cases = _file_cases(folder) + _script_cases(folder)
        with ThreadPoolExecutor(options.jobs) as pool:
            ignored = pool.submit(_sigterm_ignored, folder, options.timeout)
            outcomes = list(pool.map(lambda case: _run(case, cap, options.timeout), cases)) + [ignored.result()]
    print("| input family | result | why | exit | peak RSS | wall |")
    print("|---|---|---|---|---|---|")
    for o in outcomes:
        peak = "-" if o.peak_mb != o.peak_mb else f"{o.peak_mb:.0f} MB"
        print(f"| {o.family} | {'handled' if o.handled else 'FAILED'} | {o.why} | {o.exit} | {peak} | {o.wall_s:.1f} s |")
    failed = sum(not o.handled for o in outcomes)
    print(f"\n{len(outcomes) - failed} handled, {failed} failed, of {len(outcomes)} families")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
