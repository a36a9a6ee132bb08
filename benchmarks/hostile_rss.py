"""Run every hostile input of tests/hostile/ through torchdoctor, each in its own child process, and
report what it got: exit code, peak RSS, wall time, a traceback or not, control characters on the
terminal or not. The figures of docs/reliability.md come from here.

    .venv/bin/python benchmarks/hostile_rss.py [--src SRC_DIR] [--cap-gb 4] [--timeout 300]

Trace files go through `diagnose --trace FILE --no-save` and `trace analyze FILE`, Records through
`report FILE`, snapshots and tune results through their library readers. Then the inputs that are not
files of a few megabytes: a sparse 2 GB `.json` (`report`) and `.py` (`lint`), /dev/zero as a tune
result (`run --apply`) and a FIFO as a trace (`diagnose --trace`). `--src` picks the
torchdoctor source tree (an older checkout, for the "before" column). Each child runs under an
address-space cap (`--cap-gb`), so a runaway input fails with MemoryError instead of taking the
machine down, and is killed after `--timeout` seconds. Peak RSS is the child's own VmHWM
(tests/hostile/peak_rss.py says why not getrusage).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hostile"))
import corpus  # noqa: E402
import peak_rss  # noqa: E402

_LIBRARY = {  # inputs read by a library call rather than a command: its name, and the call as a small script
    "snapshot": ("analyse_snapshot", "from torchdoctor.memory.snapshot import analyse_snapshot as read"),
    "tune": ("load_result", "from torchdoctor.tune.result import load_result\n"
                            "def read(path):\n    return load_result(path, path, force=True)"),
}
_RUN = ("import sys\nfrom torchdoctor.errors import TorchDoctorError\n{imp}\ntry:\n    read(sys.argv[1])\n"
        "except TorchDoctorError as exc:\n    print(exc, file=sys.stderr)\n    sys.exit(2)\n")
_STYLES = re.compile("\x1b\\[[0-9;]*m")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def commands(path: Path) -> list[tuple[str, list[str]]]:
    kind = path.name.split("_")[0]
    if kind == "trace":
        return [("diagnose --trace", ["-m", "diagnose", "--trace", str(path), "--no-save"]),
                ("trace analyze", ["-m", "trace", "analyze", str(path)])]
    if kind == "record":
        return [("report", ["-m", "report", str(path)])]
    name, call = _LIBRARY[kind]
    return [(name, [_RUN.format(imp=call), str(path)])]


def special(folder: Path) -> list[tuple[str, str, list[str]]]:
    """(input, command name, argv) for the inputs that are not small regular files."""
    big_json, big_py, fifo, script = folder / "big.json", folder / "big.py", folder / "fifo.json", folder / "s.py"
    for sparse in (big_json, big_py):
        with sparse.open("wb") as handle:
            handle.truncate(2 * 2**30)  # 2 GB that take no disk
    os.mkfifo(fifo)
    script.write_text("pass\n")
    return [("2 GB sparse .json", "report", ["-m", "report", str(big_json)]),
            ("2 GB sparse .py", "lint", ["-m", "lint", str(big_py)]),
            ("/dev/zero", "run --apply", ["-m", "run", "--apply", "/dev/zero", "--", str(script)]),
            ("FIFO", "diagnose --trace", ["-m", "diagnose", "--no-save", "--trace", str(fifo)])]


def _row(name: str, size: str, command: str, argv: list[str], args: argparse.Namespace) -> str:
    start = time.perf_counter()
    run = peak_rss.run(argv, timeout_s=args.timeout, src=args.src, cap_bytes=int(args.cap_gb * 2**30))
    text = _STYLES.sub("", run.output)
    last = text.strip().splitlines()[-1][:90].replace("|", "/") if text.strip() else ""
    return (f"| {name} | {size} | {command} | {run.exit} | {run.peak_mb:.0f} | {time.perf_counter() - start:.1f} | "
            f"{'yes' if 'Traceback' in text else 'no'} | {'yes' if _CONTROL.search(text.replace(chr(10), '')) else 'no'} "
            f"| {last} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    parser.add_argument("--cap-gb", type=float, default=4.0)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    print("| input | size | command | exit | peak RSS (MB) | wall (s) | traceback | control chars | last line |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        paths = sorted(corpus.FILES.iterdir()) + sorted(corpus.write_large(Path(folder)).values())
        for path in paths:
            for name, argv in commands(path):
                print(_row(path.name, f"{path.stat().st_size:,}", name, argv, args), flush=True)
        for name, command, argv in special(Path(folder)):
            print(_row(name, "-", command, argv, args), flush=True)

if __name__ == "__main__":
    main()
