"""Parent side of an observation: launch the script under the bootstrap, follow its progress,
pass stops on to it, and turn the ranks' results into a Record.

A single process runs `python -c LAUNCH SCRIPT ARGS` (launch.entry, then observe.bootstrap); with
`nproc_per_node` the same command is launched by `torch.distributed.run` (torchrun's own module, no
home-made launcher), once per rank. The child is owned (launch.child): it runs in its
own process group, our SIGINT/SIGTERM/SIGHUP are forwarded to it (it saves its partial results),
the timeout sends it SIGINT, and it is killed with everything it started when it does not stop
within the grace period (or at the third stop). A rank that left no results file (SIGKILL, a
crash) is rebuilt from the steps it streamed (observe.stream). Many short observations of one
script (`torchdoctor check`) can instead fork the same bootstrap from a fork server that imported
torch once (`LaunchConfig.server`, launch.forkserver); that child is owned the same way.

When the user's own torchrun starts `python -m torchdoctor diagnose ...` on every rank (e.g.
`srun torchrun ... -m torchdoctor diagnose -- train.py`), every rank observes its own child in a
run folder shared through the torchrun run id; rank 0 waits for the others and merges them.
"""

from __future__ import annotations

import math
import os
import re
import sys
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import orjson

from torchdoctor.distributed.launch import own_log_dir
from torchdoctor.errors import OutDirInUseError, ScriptNotFoundError
from torchdoctor.launch.child import ChildEnd, own, run_owned
from torchdoctor.launch.entry import command as bootstrap_command
from torchdoctor.observe.config import CONFIG_ENV, ObserveConfig
from torchdoctor.observe.stream import read_stream
from torchdoctor.observe.summary import Invocation, build_record
from torchdoctor.process.signals import signal_name
from torchdoctor.record import ExitInfo, Record, new_run_id

if TYPE_CHECKING:
    from torchdoctor.launch.forkserver import ForkServer

ProgressCallback = Callable[[str, int, int], None]
#: How long rank 0 of an external torchrun job waits for the other ranks to write their results.
RANK_RESULTS_TIMEOUT_S = 60.0


@dataclass(kw_only=True, slots=True)
class LaunchConfig:
    nproc_per_node: int | None = None
    """Launch this many ranks through torch.distributed.run (None: one plain process)."""
    torchrun_args: list[str] = field(default_factory=list)
    """Extra torchrun options passed through (e.g. --nnodes, --rdzv-endpoint)."""
    timeout_s: float | None = None
    """Stop the script after this many seconds (None: no limit)."""
    extra_env: dict[str, str] = field(default_factory=dict)
    """Environment variables added for the script (used by knobs)."""
    python: str | None = None
    """The interpreter that runs the script (None: this one, `sys.executable`)."""
    cwd: str | None = None
    """The script's working folder (None: this process's)."""
    python_path: list[str] = field(default_factory=list)
    """Folders put on the script's import path after its own folder (as PYTHONPATH would)."""
    log_path: str | None = None
    """Send the script's stdout and stderr to this file (None: they pass through)."""
    server: ForkServer | None = field(default=None, repr=False, compare=False)
    """Fork the script from this started fork server instead of starting an interpreter
    (`torchdoctor.launch.forkserver`; one process, no torchrun)."""

    def __post_init__(self) -> None:
        if self.timeout_s is not None and not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise ValueError(f"the timeout must be a number of seconds > 0, got {self.timeout_s}")
        if self.nproc_per_node is not None and self.nproc_per_node < 1:
            raise ValueError(f"nproc_per_node must be >= 1, got {self.nproc_per_node}")
        if self.torchrun_args and self.nproc_per_node is None:
            raise ValueError("torchrun options need --nproc-per-node (they are passed to torchrun)")
        if self.server is not None and self.nproc_per_node is not None:
            raise ValueError("a fork server runs one process; it cannot launch torchrun ranks")
        if self.server is not None and self.python is not None and self.python != self.server.python:
            raise ValueError(f"the fork server runs {self.server.python}, not {self.python}")


def check_script(script: str | Path) -> Path:
    path = Path(script)
    if not path.exists():
        raise ScriptNotFoundError(f"script not found: {script}")
    if not path.is_file() or not os.access(path, os.R_OK):
        raise ScriptNotFoundError(f"script is not a readable file: {script}")
    return path


def _refuse_used_out_dir(out: Path) -> None:
    """An observation reads back every rank's results and profiler trace it finds in its folder,
    so a folder that holds an earlier observation's would mix the two runs: the new Record took
    the earlier run's trace (its trace files sort first). The earlier run's files are the user's
    to keep, so refuse rather than delete them."""
    earlier = sorted(p.name for p in [*out.glob("rank*.json"), *out.glob("rank*.steps.jsonl"),
                                      *out.glob("trace/*.json.gz")])
    if earlier:
        raise OutDirInUseError(f"{out} already holds an observation's results ({', '.join(earlier[:3])}"
                               f"{', ...' if len(earlier) > 3 else ''}); give each observation a folder of its own")


def build_command(script: str | Path, args: Sequence[str], launch: LaunchConfig,
                  log_dir: Sequence[str] = ()) -> list[str]:
    """The child's command line; `script` as the user typed it (the script sees it in argv[0]);
    `log_dir`, torchrun's options for its logs (distributed.launch.own_log_dir)."""
    python = launch.python or sys.executable
    observed = bootstrap_command(python, str(script), args)
    if launch.nproc_per_node is None:
        return observed
    return [  # torchrun through lifeline: it gets SIGTERM (and stops its ranks) should we die
        python, "-m", "torchdoctor.process.lifeline", "torch.distributed.run",
        f"--nproc-per-node={launch.nproc_per_node}", *log_dir, *launch.torchrun_args,
        "--no-python", observed[0], "-u", *observed[1:],  # torchrun's own `python -u`, for LAUNCH's `-c`
    ]


class _ProgressReader(threading.Thread):
    """Reads `phase done total` lines from the FIFO the rank-0 child writes to."""

    def __init__(self, path: Path, callback: ProgressCallback) -> None:
        super().__init__(name="torchdoctor-progress", daemon=True)
        os.mkfifo(path)
        # Opened non-blocking before the child starts, so the child's open never blocks.
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.callback = callback
        self.stop = threading.Event()

    def run(self) -> None:
        buffer = b""
        while not self.stop.wait(0.05):
            try:
                chunk = os.read(self.fd, 4096)
            except BlockingIOError:
                continue
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                phase, done, total = line.decode().rsplit(" ", 2)  # a phase may hold spaces
                self.callback(phase, int(done), int(total))
        os.close(self.fd)


def external_rank() -> int | None:
    """This process's rank when the user's own torchrun started torchdoctor on every rank."""
    if "TORCHELASTIC_RUN_ID" in os.environ and "RANK" in os.environ:
        return int(os.environ["RANK"])
    return None


def shared_run_id() -> str:
    """One run id for all ranks of an external torchrun job (they share the run folder)."""
    return "torchrun-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in os.environ["TORCHELASTIC_RUN_ID"])


def _await_ranks(out_dir: Path, world_size: int, timeout_s: float) -> None:
    """Rank 0 of an external torchrun job waits for the other ranks' results files."""
    deadline = time.monotonic() + timeout_s
    while len(list(out_dir.glob("rank*.json"))) < world_size and time.monotonic() < deadline:
        time.sleep(0.1)


def _read_results(out_dir: Path, end: ChildEnd, direct: bool) -> list[dict[str, Any]]:
    """Every rank's results; a rank that wrote none but streamed steps gets a result built from
    its stream, ended "killed" (by the signal that ended the child, when it was started directly)."""
    results: dict[int, dict[str, Any]] = {}
    for path in out_dir.glob("rank*.json"):
        try:
            result = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError:
            continue  # a rank killed while writing: its stream below stands in for it
        if isinstance(result, dict) and isinstance(result.get("rank"), int):
            results[result["rank"]] = result
    for path in out_dir.glob("rank*.steps.jsonl"):
        match = re.fullmatch(r"rank(\d+)\.steps\.jsonl", path.name)
        if match is None or int(match.group(1)) in results:
            continue
        streamed = read_stream(path)
        if streamed is not None:
            rank = int(match.group(1))
            signum = -end.returncode if direct and end.returncode < 0 else None
            results[rank] = _streamed_result(rank, streamed, signum, end.returncode)
    return [results[rank] for rank in sorted(results)]


def _streamed_result(rank: int, streamed: dict[str, Any], signum: int | None, returncode: int) -> dict[str, Any]:
    """A rank's result from its stream alone: steps and step counts, nothing else measured."""
    return {
        "rank": rank, "how": "killed", "code": 128 + signum if signum else (returncode or 1), "traceback": None,
        "signal": signal_name(signum) if signum else None, "streamed": True,
        "step_detection": streamed["step_detection"], "steps_seen": streamed["steps_seen"],
        "window_s": streamed["window_s"], "profiled": False, "steps": streamed["steps"],
        "env": {}, "system": {}, "traces": [], "memory": None, "compile": None,
    }


def _run_child(script: str | Path, args: Sequence[str], launch: LaunchConfig, env: dict[str, str],
               cwd: str) -> ChildEnd:
    """Run the owned child to its end: forked from the fork server, or a new interpreter (torchrun
    for ranks). `script` goes as typed (argv[0]), made absolute when the child runs elsewhere."""
    typed = os.fspath(script) if launch.cwd is None else str(Path(script).resolve())
    server = launch.server
    if server is not None:
        log = str(Path(launch.log_path).resolve()) if launch.log_path else None  # the child changes folder first
        return own(lambda marked: server.spawn([typed, *args], env=marked, cwd=cwd, path=launch.python_path, log=log),
                   env, timeout_s=launch.timeout_s)
    if launch.python_path:
        env = {**env, "PYTHONPATH": os.pathsep.join([*launch.python_path, *filter(None, [env.get("PYTHONPATH")])])}
    with own_log_dir(launch.torchrun_args) if launch.nproc_per_node else nullcontext([]) as log_dir:
        return run_owned(build_command(typed, args, launch, log_dir), env, timeout_s=launch.timeout_s, cwd=cwd,
                         log_path=launch.log_path)


def observe(
    script: str | Path,
    args: Sequence[str] = (),
    config: ObserveConfig | None = None,
    launch: LaunchConfig | None = None,
    *,
    out_dir: str | Path,
    progress: ProgressCallback | None = None,
    run_id: str | None = None,
) -> Record:
    """Run SCRIPT ARGS under observation and return its Record (saved nowhere yet)."""
    path = check_script(script)
    launch = launch or LaunchConfig()
    run_id = run_id or new_run_id()
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    _refuse_used_out_dir(out)
    config = config or ObserveConfig()
    reader = _ProgressReader(out / "progress.fifo", progress) if progress else None
    child_config = ObserveConfig(**{**config.to_dict(), "out_dir": str(out),
                                    "progress_path": str(out / "progress.fifo") if reader else ""})
    env = {**os.environ, **launch.extra_env, CONFIG_ENV: child_config.to_env()}
    cwd = launch.cwd or os.getcwd()
    direct = launch.nproc_per_node is None
    if reader:
        reader.start()
    try:
        end = _run_child(script, args, launch, env, cwd)
    finally:
        if reader:
            reader.stop.set()
            reader.join()
            (out / "progress.fifo").unlink(missing_ok=True)
    if external_rank() == 0:
        _await_ranks(out, int(os.environ.get("WORLD_SIZE", 1)), RANK_RESULTS_TIMEOUT_S)
    invocation = Invocation(script=str(path), argv=list(args), cwd=cwd, config=config.to_dict(), run_id=run_id)
    record = build_record(_read_results(out, end, direct), end.returncode, invocation,
                          timeout_s=launch.timeout_s if end.timed_out else None)
    results_missing = not list(out.glob("rank*.json")) and not list(out.glob("rank*.steps.jsonl"))
    if results_missing and launch.nproc_per_node is not None and record.exit.reason == "killed":
        record.exit.message = (
            "no rank reported back: torchrun's rendezvous did not complete (e.g. other nodes never joined "
            "within the join timeout, see --rdzv-timeout) or every rank failed before the script started; "
            "torchrun's own output above says which"
        )
    record.config["launch"] = {"nproc_per_node": launch.nproc_per_node,
                               "torchrun_args": launch.torchrun_args, "timeout_s": launch.timeout_s}
    _note_stops(record, end)
    return record


def _note_stops(record: Record, end: ChildEnd) -> None:
    """Say in the Record what torchdoctor did to stop the script, when its own exit does not."""
    from torchdoctor.launch import child

    stops = ", ".join(signal_name(sig) for sig in end.signals)
    if record.exit.reason == "killed" and not record.steps and -end.returncode in end.signals:
        name = signal_name(-end.returncode)  # the stop we passed on ended it before it could report
        record.exit = ExitInfo(status=128 - end.returncode, reason="interrupted", signal=name,
                               message=f"interrupted ({'Ctrl-C' if name == 'SIGINT' else name}) before the script "
                               "reported anything")
        return
    if end.killed:
        if len(end.signals) >= child.KILL_AT_STOP:
            when = f"at stop signal number {child.KILL_AT_STOP} ({stops})"
        else:
            cause = f"{stops} passed on to it" if end.signals else "the timeout's SIGINT"
            when = f"when it had not stopped {child.STOP_GRACE_S:g} s after {cause}"
        record.exit.message += f"; torchdoctor killed it (and what it started) {when}"
    elif end.signals and record.exit.reason not in ("interrupted", "timeout"):
        record.warnings.append(f"{stops} passed on to the script, which ended as {record.exit.reason}")
    if end.orphans:
        record.warnings.append(f"the script left {end.orphans} process(es) running; torchdoctor ended them")
