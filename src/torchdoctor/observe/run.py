"""Parent side of an observation: launch the script under the bootstrap, follow its progress,
survive Ctrl-C, and turn the ranks' results into a Record.

A single process runs `python -m torchdoctor.observe.bootstrap SCRIPT ARGS`; with
`nproc_per_node` the same entry point is launched by `torch.distributed.run` (torchrun's own
module, no home-made launcher), once per rank. Ctrl-C reaches the script (it shares our process
group) and the script's partial results are still collected; a second Ctrl-C stops it for good.

When the user's own torchrun starts `python -m torchdoctor diagnose ...` on every rank (e.g.
`srun torchrun ... -m torchdoctor diagnose -- train.py`), every rank observes its own child in a
run folder shared through the torchrun run id; rank 0 waits for the others and merges them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import orjson
import psutil

from torchdoctor.errors import ScriptNotFoundError
from torchdoctor.observe.config import CONFIG_ENV, ObserveConfig
from torchdoctor.observe.summary import build_record
from torchdoctor.record import Record, new_run_id

if TYPE_CHECKING:
    from torchdoctor.observe.forkserver import ForkServer

ProgressCallback = Callable[[str, int, int], None]
#: After a timeout's SIGINT, how long the script may take to save its results before it is killed.
STOP_GRACE_S = 15.0
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
    (`torchdoctor.observe.forkserver`; one process, no torchrun)."""

    def __post_init__(self) -> None:
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


def build_command(script: Path, args: Sequence[str], launch: LaunchConfig) -> list[str]:
    entry = ["-m", "torchdoctor.observe.bootstrap", str(script), *args]
    python = launch.python or sys.executable
    if launch.nproc_per_node is None:
        return [python, *entry]
    return [
        python, "-m", "torch.distributed.run",
        f"--nproc-per-node={launch.nproc_per_node}", *launch.torchrun_args, *entry,
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
                phase, done, total = line.decode().split()
                self.callback(phase, int(done), int(total))
        os.close(self.fd)


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child and everything it started (torchrun's ranks, DataLoader workers)."""
    try:
        family = [*psutil.Process(proc.pid).children(recursive=True), psutil.Process(proc.pid)]
    except psutil.NoSuchProcess:
        return
    for member in family:
        try:
            member.kill()
        except psutil.NoSuchProcess:
            continue


def _wait(proc: subprocess.Popen[bytes], timeout_s: float | None) -> tuple[int, bool]:
    """Wait for the child. At the timeout it gets SIGINT, so it saves its results like a Ctrl-C,
    and STOP_GRACE_S later, if it ignored that, it is killed with its children. Ctrl-C lets it
    save its results; a second one terminates it."""
    interrupted = timed_out = False
    while True:
        try:
            return proc.wait(timeout=timeout_s), interrupted
        except subprocess.TimeoutExpired:
            if timed_out:
                _kill_tree(proc)
                timeout_s = None
            else:
                proc.send_signal(signal.SIGINT)
                timed_out = interrupted = True
                timeout_s = STOP_GRACE_S
        except KeyboardInterrupt:
            if interrupted:
                proc.terminate()
            interrupted = True


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


def _read_results(out_dir: Path) -> list[dict]:
    results = []
    for path in sorted(out_dir.glob("rank*.json")):
        try:
            results.append(orjson.loads(path.read_bytes()))
        except orjson.JSONDecodeError:
            continue  # a rank killed while writing; reported through its missing results
    return results


def _launch(path: Path, args: Sequence[str], launch: LaunchConfig, env: dict[str, str], cwd: str) -> Any:
    """Start the child: forked from the fork server, or a new interpreter (torchrun for ranks)."""
    if launch.server is not None or launch.cwd is not None:
        path = path.resolve()  # the child's cwd may not be ours
    if launch.server is not None:
        log = str(Path(launch.log_path).resolve()) if launch.log_path else None  # the child changes folder first
        return launch.server.spawn([str(path), *args], env=env, cwd=cwd, path=launch.python_path, log=log)
    if launch.python_path:
        env = {**env, "PYTHONPATH": os.pathsep.join([*launch.python_path, *filter(None, [env.get("PYTHONPATH")])])}
    if launch.log_path is None:
        return subprocess.Popen(build_command(path, args, launch), env=env, cwd=cwd)
    with open(launch.log_path, "ab") as log:
        return subprocess.Popen(build_command(path, args, launch), env=env, cwd=cwd, stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL)


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
    config = config or ObserveConfig()
    reader = _ProgressReader(out / "progress.fifo", progress) if progress else None
    child_config = ObserveConfig(**{**config.to_dict(), "out_dir": str(out),
                                    "progress_path": str(out / "progress.fifo") if reader else ""})
    env = {**os.environ, **launch.extra_env, CONFIG_ENV: child_config.to_env()}
    cwd = launch.cwd or os.getcwd()
    if reader:
        reader.start()
    try:
        proc = _launch(path, args, launch, env, cwd)
        returncode, interrupted = _wait(proc, launch.timeout_s)
    finally:
        if reader:
            reader.stop.set()
            reader.join()
            (out / "progress.fifo").unlink(missing_ok=True)
    if external_rank() == 0:
        _await_ranks(out, int(os.environ.get("WORLD_SIZE", 1)), RANK_RESULTS_TIMEOUT_S)
    record = build_record(
        _read_results(out), returncode, script=str(path), argv=list(args), cwd=cwd,
        config=config.to_dict(), run_id=run_id,
    )
    results_missing = not list(out.glob("rank*.json"))
    if results_missing and launch.nproc_per_node is not None and record.exit.reason == "killed":
        record.exit.message = (
            "no rank reported back: torchrun's rendezvous did not complete (e.g. other nodes never joined "
            "within the join timeout, see --rdzv-timeout) or every rank failed before the script started; "
            "torchrun's own output above says which"
        )
    record.config["launch"] = {"nproc_per_node": launch.nproc_per_node,
                               "torchrun_args": launch.torchrun_args, "timeout_s": launch.timeout_s}
    if interrupted and record.exit.reason != "interrupted":
        record.warnings.append("interrupted: the script was stopped before it finished")
    return record
