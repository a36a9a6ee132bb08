"""One rank's observation inside the child process: wires the step clock, the hooks, the
profiler window, the system sampler, the probes (observe/probes/runner.py) and the progress
channel, and writes the rank's results.

The results file (`rank<RANK>.json` in the out folder) is this rank's raw measurement; the parent
(`torchdoctor.launch.run`) turns the files of all ranks into one Record. Each timed step is also
streamed to `rank<RANK>.steps.jsonl` as it ends (observe.stream), for a process killed before it
could write its results.
"""

from __future__ import annotations

import errno
import inspect
import os
import socket
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import orjson
import torch

from torchdoctor.knobs import apply_knobs
from torchdoctor.knobs.guard import intercepted_calls
from torchdoctor.observe.probes.base import ProbeContext
from torchdoctor.observe.probes.compile import CompileCapture
from torchdoctor.observe.probes.memory import MemoryWindow
from torchdoctor.observe.probes.outputs import OutputCapture, seed_from_env
from torchdoctor.observe.probes.runner import ProbeRunner
from torchdoctor.observe import env
from torchdoctor.observe.config import ObserveConfig
from torchdoctor.observe.facts import Facts
from torchdoctor.observe.hooks import Instrumentation
from torchdoctor.observe.lean import LeanHooks
from torchdoctor.observe.periodic import PeriodicProfiler
from torchdoctor.observe.steps import PhaseCallbacks, StepClock, _Accumulator
from torchdoctor.observe.stream import StepStream, stream_path
from torchdoctor.process.signals import signal_name
from torchdoctor.observe.system import SystemSampler
from torchdoctor.observe.watch import RunWatch
from torchdoctor.outputs import dumps_json


def synchronize_devices() -> None:
    """Wait for queued device work, on the backends this process has initialised."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    if hasattr(torch, "xpu") and torch.xpu.is_available() and torch.xpu.is_initialized():
        torch.xpu.synchronize()
    if torch.backends.mps.is_available():
        torch.mps.synchronize()


def results_path(out_dir: str | Path, rank: int) -> Path:
    return Path(out_dir) / f"rank{rank}.json"


class _Progress:
    """Non-blocking writer of `phase done total` lines to the parent's FIFO (rank 0 only)."""

    def __init__(self, path: str) -> None:
        self.fd: int | None = None
        if path:
            try:
                self.fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                self.fd = None  # nobody listening

    def send(self, phase: str, done: int, total: int) -> None:
        if self.fd is None:
            return
        try:
            os.write(self.fd, f"{phase} {done} {total}\n".encode())
        except OSError as exc:
            if exc.errno != errno.EAGAIN:
                self.close()

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class ObservationSession:
    def __init__(self, config: ObserveConfig, script: Path, stop: type[BaseException]) -> None:
        self.config = config
        self.script = script
        self.stop_exc = stop
        self.rank = int(os.environ.get("RANK", 0))
        self.pid = os.getpid()
        self.trace_dir = Path(config.out_dir) / "trace"
        self.facts = Facts()
        self.sampler = SystemSampler(config.system_interval_s)
        self.progress = _Progress(config.progress_path if self.rank == 0 else "")
        self.clock = StepClock(
            warmup_steps=config.warmup_steps,
            timing_steps=config.timing_steps,
            profile_steps=config.profile_steps,
            capture_steps=config.capture_steps,
            callbacks=PhaseCallbacks(
                on_timing_start=self._timing_start,
                on_timing_end=self._timing_end,
                on_profile_start=self._profile_start,
                on_profile_step=self._profile_step,
                on_all_done=self._all_done,
                on_progress=self.progress.send,
                on_extra_step=self._extra_step,
                on_step=self._stream_step,
                on_switch=self._switched,
            ),
        )
        self.stream = StepStream(stream_path(config.out_dir, self.rank))
        self.stop_signal: int | None = None  # the signal that interrupted the script, if one did
        self.compile_error: str | None = None  # "FILE:LINE: SyntaxError: message" when it did not compile
        self.outputs = OutputCapture() if config.capture_steps else None
        self.hooks = Instrumentation(self.clock, self.facts, self.outputs)
        self.memory = MemoryWindow(snapshot_path=config.memory_snapshot,
                                   budget_bytes=config.memory_budget_bytes) if config.memory else None
        self.probes = ProbeRunner(ProbeContext(config, self.facts, self.clock, self.hooks, self.sampler),
                                  progress=self.progress.send)
        self.compile_capture = CompileCapture() if config.compile else None
        self.compile_summary: dict[str, Any] | None = None
        self.profiler: torch.profiler.profile | None = None
        self.distributed: dict[str, Any] = env.distributed()
        self._finished = False
        self._real_os_exit = os._exit
        self._undo_knobs: Callable[[], None] = lambda: None  # until start() applied the knobs
        self._start_ns = time.perf_counter_ns()
        self.watch = RunWatch(config.out_dir, self.rank, sample_interval_s=config.watch_sample_interval_s,
                              raw_steps=config.watch_raw_steps, max_bytes=config.watch_max_bytes) if config.watch else None
        self.lean = LeanHooks(self.watch) if self.watch is not None else None
        self.periodic = PeriodicProfiler(self.watch, steps=config.watch_profile_steps) \
            if self.watch is not None and config.watch_profile_every_s > 0 else None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        seed_from_env()  # before the script (which may seed itself: its own call then wins)
        # Knobs first: the hooks then wrap (and record) what the knobs changed.
        self._undo_knobs = apply_knobs(self.config.knobs)
        self.hooks.install(steps_only=self.config.steps_only)
        if self.compile_capture is not None:
            self.compile_capture.start()
        self.sampler.start()
        os._exit = self._os_exit  # type: ignore[assignment]
        self.progress.send("starting", 0, self.config.total_steps)
        if self.watch is not None and self.lean is not None:
            self.watch.start()
            self.lean.install_epochs()
            self.watch.mark("script_start")

    def _os_exit(self, code: int) -> None:
        if os.getpid() == self.pid:
            self.finish("os_exit", code, None)
        self._real_os_exit(code)

    # -- phase callbacks -------------------------------------------------------------------
    def _timing_start(self) -> None:
        synchronize_devices()
        self.facts.note_window_start()
        self.distributed = env.distributed()
        self.sampler.mark_window_start()

    def _timing_end(self) -> None:
        synchronize_devices()
        self.facts.note_window_end()
        self.sampler.mark_window_end()
        window_ns = time.perf_counter_ns() - self.clock._window_start_ns
        self.stream.window_end(window_ns / 1e9, [_loss(parts) for _, parts in self.clock.samples])

    def _switched(self) -> None:
        if self.watch is not None:
            self.watch.restart()
            self.watch.step()

    def _stream_step(self, count: int, sample: tuple[int, _Accumulator] | None) -> None:
        if self.watch is not None:
            self.watch.data_ns = sample[1].data_ns if sample is not None else 0
            self.watch.step()
        if sample is None:
            self.stream.tick(self.clock.source, count)
        else:
            index = len(self.clock.samples) - 1
            self.stream.step(_step_dict(index, *sample, loss=None), self.clock.source, count)

    def _profile_start(self) -> None:
        cfg = self.config
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self.profiler = torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(
                wait=cfg.profile_wait, warmup=cfg.profile_warmup, active=cfg.profile_active, repeat=1
            ),
            on_trace_ready=torch.profiler.tensorboard_trace_handler(
                str(self.trace_dir), worker_name=f"{socket.gethostname()}_rank{self.rank}", use_gzip=True
            ),
            record_shapes=cfg.record_shapes,
            profile_memory=cfg.profile_memory,
            with_stack=cfg.with_stack,
            # One cycle (repeat=1): keeping its events is what happens anyway; without it torch warns
            # "Profiler clears events at the end of each cycle" into the user's stderr (the option
            # and the warning came together: older torch has neither).
            **({"acc_events": True} if "acc_events" in inspect.signature(torch.profiler.profile).parameters else {}),
        )
        self.profiler.start()

    def _profile_step(self) -> None:
        if self.profiler is not None:
            self.profiler.step()

    def _all_done(self) -> None:
        self._stop_profiler()
        self._stop_compile_capture()  # MemTracker's dispatch mode would make Dynamo recompile
        self.probes.windows_ended(script_compiles=self.compile_summary is not None)
        if self.memory is not None and self.memory.begin(self.hooks._first_root, self.hooks._first_optimizer,
                                                         step=self.clock.source):
            return  # the next step is measured; `_extra_step` goes on from there
        self._start_next_probe()

    def _extra_step(self) -> None:
        """A step after the windows ended: the memory step's, then the probes' (observe/probes/runner.py)."""
        if self.watch is not None:
            self.watch.step()
        if self.memory is not None and self.memory.measuring:
            self.memory.end(self.clock.current.batch_size)
            self._start_next_probe()
        elif self.probes.measuring and self.probes.step_end():
            self._start_next_probe()

    @property
    def measuring_after_windows(self) -> bool:
        """Whether the memory step or a probe is measuring the script's steps."""
        return bool((self.memory is not None and self.memory.measuring) or self.probes.measuring)

    def _start_next_probe(self) -> None:
        """Begin the next probe that applies here; with none left, stop a script that is only
        measured (`stop_after_windows`)."""
        if self.probes.start_next():
            return
        if self.config.stop_after_windows:
            raise self.stop_exc()
        if self.watch is not None:
            self._go_lean()

    def _go_lean(self) -> None:
        """The windows and probes are done: only the whole run's lean hooks stay (observe.lean)."""
        assert self.watch is not None and self.lean is not None
        source = self.clock.source or ""
        if source == "optimizer":
            self.hooks.keep_step_hook(self.watch.step)
        else:
            self.hooks.uninstall()
        self.lean.install_steps(source, self.hooks._first_root)
        self.sampler.stop()  # the windows' system figures are kept; a run of days must not grow them
        batches = Counter(parts.batch_size for _, parts in self.clock.samples if parts.batch_size)
        # DDP reduces the gradients inside `backward`: a rank waiting for a straggler waits there
        ddp = type(self.hooks._first_root).__qualname__ == "DistributedDataParallel"
        self.watch.mark("lean_start", source=source, loop=self.watch.caller(),
                        batch_size=batches.most_common(1)[0][0] if batches else None, sync_in_backward=ddp)
        if self.periodic is not None:
            self.watch.schedule(self.config.watch_profile_every_s, self.periodic.begin)

    def _stop_compile_capture(self) -> None:
        if self.compile_capture is not None and self.compile_capture.active:
            report = self.compile_capture.stop()
            self.compile_summary = report.to_dict() if report.used else None

    def _stop_profiler(self) -> None:
        if self.profiler is not None:
            profiler, self.profiler = self.profiler, None
            profiler.stop()
            self.probes.profiler_stopped(profiler, self.config.profile_active)

    # -- results ---------------------------------------------------------------------------
    def finish(self, how: str, code: int, traceback_text: str | None) -> None:
        """Undo every patch and write this rank's results; safe to call twice. Nothing in a process
        the script forked: the results are the observed process's alone."""
        if self._finished or os.getpid() != self.pid:
            return
        self._finished = True
        probe_cut = f"the script ended during the probe: {how}"
        if how == "script_finished" and code == 0 and self.probes.measuring:
            how = "completed"  # every window was measured; only an optional probe was cut short (it says so)
        os._exit = self._real_os_exit  # type: ignore[assignment]
        self.hooks.uninstall()
        if self.lean is not None and self.watch is not None:
            if self.periodic is not None:
                self.periodic.close()
            self.lean.uninstall()
            self.watch.finish(how)
        self._stop_profiler()
        self.sampler.stop()
        self.progress.close()
        self.stream.close()
        self._stop_compile_capture()
        if self.memory is not None:
            self.memory.close(f"the measured step did not finish (the script ended: {how})")
        self.probes.close(probe_cut)
        data = self._results(how, code, traceback_text)
        if self.outputs is not None:
            try:
                self.outputs.write(self.config.out_dir, self.rank)
            except Exception as exc:  # the numerics check then says the outputs are missing
                sys.stderr.write(f"torchdoctor: model outputs not saved: {exc}\n")
        self._undo_knobs()  # after the fingerprint, so it shows what the script did to the knobs
        path = results_path(self.config.out_dir, self.rank)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(dumps_json(data, option=orjson.OPT_SERIALIZE_NUMPY, default=str))  # a non-UTF-8 name too
        tmp.replace(path)
        sys.stdout.flush()
        sys.stderr.flush()

    def _steps(self) -> list[dict[str, Any]]:
        return [_step_dict(index, wall_ns, parts, loss=_loss(parts))
                for index, (wall_ns, parts) in enumerate(self.clock.samples)]

    def _results(self, how: str, code: int, traceback_text: str | None) -> dict[str, Any]:
        clock = self.clock
        fingerprint = env.fingerprint()
        fingerprint["distributed"] = self.distributed
        fingerprint.update(self.facts.to_dict())
        fingerprint["knob_guard"] = intercepted_calls()
        traces = sorted(str(p) for p in self.trace_dir.glob(f"*_rank{self.rank}.*.json.gz"))
        return {
            "rank": self.rank,
            "pid": self.pid,
            "how": how,
            "code": code,
            "traceback": traceback_text,
            "signal": signal_name(self.stop_signal) if self.stop_signal is not None else None,
            "compile_error": self.compile_error,
            "step_detection": clock.source,
            "step_note": clock.note,
            "batch_note": self.hooks.batch_note,
            "steps_seen": clock.count,
            "window_s": clock.window_ns / 1e9 if clock.window_ns is not None else None,
            "profiled": bool(traces),
            "run_s": (time.perf_counter_ns() - self._start_ns) / 1e9,
            "ended_at_unix_s": time.time(),  # orders the ranks' failures
            "steps": self._steps(),
            "env": fingerprint,
            "system": self.sampler.to_dict(),
            "traces": traces,
            "memory": self.memory.to_dict() if self.memory is not None else None,
            "compile": self.compile_summary,
            "probes": self.probes.values(),
        }


def _loss(parts: _Accumulator) -> float | None:
    """The step's loss as a float (a device sync: read only outside the timing window)."""
    return float(parts.loss.float().item()) if parts.loss is not None else None


def _step_dict(index: int, wall_ns: int, parts: _Accumulator, *, loss: float | None) -> dict[str, Any]:
    """One timed step as the results file and the stream write it (a StepSample's fields)."""
    return {
        "index": index,
        "wall_s": wall_ns / 1e9,
        "data_wait_s": parts.data_ns / 1e9,
        "data_wait_cpu_s": parts.data_cpu_ns / 1e9,
        "forward_s": parts.forward_ns / 1e9,
        "backward_s": parts.backward_ns / 1e9,
        "optimizer_s": parts.optimizer_ns / 1e9,
        "batch_size": parts.batch_size,
        "loss": loss,
        "hooks_s": parts.hooks_ns / 1e9,
    }
