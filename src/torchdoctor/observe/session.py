"""One rank's observation inside the child process: wires the step clock, the hooks, the
profiler window, the system sampler and the progress channel, and writes the rank's results.

The results file (`rank<RANK>.json` in the out folder) is this rank's raw measurement; the parent
(`torchdoctor.observe.run`) turns the files of all ranks into one Record. Each timed step is also
streamed to `rank<RANK>.steps.jsonl` as it ends (observe.stream), for a process killed before it
could write its results.
"""

from __future__ import annotations

import errno
import inspect
import os
import socket
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import orjson
import torch

from torchdoctor.estimates.workers import io_workers_cap, io_workers_needed, loads_on_storage
from torchdoctor.knobs import apply_knobs
from torchdoctor.knobs.base import machine_cores
from torchdoctor.knobs.guard import intercepted_calls
from torchdoctor.observe.probes.anomaly import AnomalyProbe
from torchdoctor.observe.probes.blocks import BlockProbe
from torchdoctor.observe.probes.compile import CompileCapture
from torchdoctor.observe.probes.compile_speed import (
    MAX_OPS_PER_STEP, MIN_OPS_PER_STEP, MIN_OVERHEAD_BOUND, CompileProbe, ProfiledOps, host_only, profiled_ops)
from torchdoctor.observe.probes.handoff import MIN_WAIT_SHARE, LoadingPlan, measure_handoff, simulate_workers
from torchdoctor.observe.probes.memory import MemoryWindow
from torchdoctor.observe.probes.outputs import OutputCapture, seed_from_env
from torchdoctor.estimates.threads import busy_worker_cores, threads_to_try
from torchdoctor.observe.probes.threads import ThreadsProbe
from torchdoctor.observe import env
from torchdoctor.observe.config import ObserveConfig
from torchdoctor.observe.facts import Facts
from torchdoctor.observe.hooks import Instrumentation
from torchdoctor.observe.steps import PhaseCallbacks, StepClock, _Accumulator
from torchdoctor.observe.stream import StepStream, stream_path
from torchdoctor.process.signals import signal_name
from torchdoctor.observe.system import SystemSampler


#: The probes run after the windows, in this order, each when it applies (`_new_<name>`).
PROBES = ("threads_probe", "anomaly_probe", "compile_probe")


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
            ),
        )
        self.stream = StepStream(stream_path(config.out_dir, self.rank))
        self.stop_signal: int | None = None  # the signal that interrupted the script, if one did
        self.outputs = OutputCapture() if config.capture_steps else None
        self.hooks = Instrumentation(self.clock, self.facts, self.outputs)
        self.memory = MemoryWindow(snapshot_path=config.memory_snapshot,
                                   budget_bytes=config.memory_budget_bytes) if config.memory else None
        self.threads_probe: ThreadsProbe | None = None  # started after the windows, when it applies
        self.anomaly_probe: AnomalyProbe | None = None  # after the threads probe, when it applies
        self.compile_probe: CompileProbe | None = None  # last, when it applies
        self._probes_left = list(PROBES)
        self._profiled_ops: ProfiledOps | None = None  # the profiled steps' host operators (the compile probe's)
        self.handoff_probe: dict[str, Any] | None = None  # measured after the windows, when the steps waited
        self._probe: BlockProbe | None = None  # the probe measuring the script's steps now
        self.compile_capture = CompileCapture() if config.compile else None
        self.compile_summary: dict[str, Any] | None = None
        self.profiler: torch.profiler.profile | None = None
        self.distributed: dict[str, Any] = env.distributed()
        self._finished = False
        self._real_os_exit = os._exit
        self._undo_knobs: Callable[[], None] = lambda: None  # until start() applied the knobs
        self._start_ns = time.perf_counter_ns()

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

    def _stream_step(self, count: int, sample: tuple[int, _Accumulator] | None) -> None:
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
        if self._steps_waited_for_data() and self._may_probe():
            self._measure_handoff()
        if self.memory is not None and self.memory.begin(self.hooks._first_root, self.hooks._first_optimizer):
            return  # the next step is measured; `_extra_step` goes on from there
        self._start_next_probe()

    def _extra_step(self) -> None:
        """A step after the windows ended: the memory step's, then the probes' (PROBES)."""
        if self.memory is not None and self.memory.measuring:
            self.memory.end(self.clock.current.batch_size)
            self._start_next_probe()
        elif self._probe is not None:
            if self._probe.step_end():
                self._probe = None
                self._start_next_probe()
            else:
                self.progress.send(self._probe.label, *self._probe.progress)

    @property
    def measuring_after_windows(self) -> bool:
        """Whether the memory step or a probe is measuring the script's steps."""
        return bool((self.memory is not None and self.memory.measuring) or self._probe is not None)

    def _start_next_probe(self) -> None:
        """Begin the next probe (PROBES) that applies here; with none left, stop a script that is
        only measured (`stop_after_windows`)."""
        while self._probes_left:
            name = self._probes_left.pop(0)
            probe = getattr(self, f"_new_{name}")()
            if probe is not None:
                setattr(self, name, probe)
                self._probe = probe
                probe.begin()
                self.progress.send(probe.label, *probe.progress)
                return
        if self.config.stop_after_windows:
            raise self.stop_exc()

    def _new_anomaly_probe(self) -> AnomalyProbe | None:
        # On at a step boundary now, or at the timing window's start (a `detect_anomaly()` block per step).
        return AnomalyProbe() if self._may_probe() and self._anomaly_on() else None

    def _anomaly_on(self) -> bool:
        return bool(torch.is_anomaly_enabled() or (self.facts.script_tools or {}).get("anomaly_detection"))

    def _new_compile_probe(self) -> CompileProbe | None:
        """Only where TD-COMP-003 could speak on a CPU: enough operators a profiled step (not so many
        that compiling takes minutes: MAX_OPS_PER_STEP), a bound on its estimate above its threshold
        (`ProfiledOps.overhead_bound`), a model, and none of the cases in which the rule is silent
        (anomaly mode: TD-COMP-007 explains the overhead; one sample a forward: batching is
        TD-COMP-018's fix); nor a script that compiles (its graphs are its own)."""
        root, ops, samples = self.hooks._first_root, self._profiled_ops, self.clock.samples
        if not (self.config.compile_probe and self._may_probe()) or root is None or ops is None or not samples:
            return None
        if not MIN_OPS_PER_STEP <= ops.ops_per_step <= MAX_OPS_PER_STEP or self.compile_summary is not None:
            return None
        one_sample = statistics.median(parts.batch_size or 0 for _, parts in samples) == 1
        if self._anomaly_on() or (self.clock.source == "forward" and one_sample):
            return None
        model_share = sum(parts.forward_ns + parts.backward_ns for _, parts in samples) / sum(w for w, _ in samples)
        if ops.overhead_bound(model_share) < MIN_OVERHEAD_BOUND:
            return None
        return CompileProbe(root, ops, model_share, compiler=self.hooks.compile_unrecorded)

    def _may_probe(self) -> bool:
        """Probes run on `diagnose` and tune's first baseline: not with a trial's knobs (they hold the
        settings the probes would switch; tune measures them itself), nor with several ranks (they wait
        on each other)."""
        return self.config.threads_probe and not self.config.knobs and int(os.environ.get("WORLD_SIZE", "1")) <= 1

    def _timed_waits(self) -> tuple[list[float], list[float], list[float]]:
        """The timed steps' wall times, data waits and the main thread's CPU time in them, in seconds."""
        samples = self.clock.samples
        return ([wall_ns / 1e9 for wall_ns, _ in samples], [parts.data_ns / 1e9 for _, parts in samples],
                [parts.data_cpu_ns / 1e9 for _, parts in samples])

    def _steps_waited_for_data(self) -> bool:
        """A DataLoader's batches were received and the median timed step waited MIN_WAIT_SHARE or more."""
        walls, waits, _ = self._timed_waits()
        if not self.facts.dataloaders or self.facts.batch_layout is None or not walls:
            return False
        return statistics.median(waits) >= MIN_WAIT_SHARE * statistics.median(walls)

    def _measure_handoff(self) -> None:
        """The hand-off probe, and for a loader waiting on storage in this process, its fix simulated."""
        layout, loader = self.facts.batch_layout or [], self.facts.dataloaders[0]
        plan, start = self._storage_workers_plan(), time.perf_counter()
        with self.hooks.own_loaders():
            probe = measure_handoff(layout, pin_memory=bool(loader.get("pin_memory")))
            probe["simulation"] = simulate_workers(layout, plan) if plan and probe["complete"] else None
        self.handoff_probe = {**probe, "duration_s": time.perf_counter() - start}  # what the probe added to the run

    def _storage_workers_plan(self) -> LoadingPlan | None:
        """TD-DATA-007's fix for num_workers=0 steps that wait on reads, from the same medians the rule
        reads (rules/data.py): its worker count, as many as `run --apply` accepts here, the step's
        compute (the median step less the median wait), and a batch's load time and CPU time."""
        loader = self.facts.dataloaders[0]
        walls, waits, cpus = self._timed_waits()
        if loader.get("num_workers") or not loads_on_storage(walls, waits, cpus):
            return None
        step_ms, wait_ms = statistics.median(walls) * 1e3, statistics.median(waits) * 1e3
        workers = min(io_workers_needed(walls, waits, 0), io_workers_cap(machine_cores()))
        layout = self.facts.batch_layout or []
        batch_size = loader.get("batch_size") or (layout[0][0][0] if layout and layout[0][0] else 1)
        return LoadingPlan(workers, int(batch_size), compute_ms=max(step_ms - wait_ms, 0.0), load_ms=wait_ms,
                           load_cpu_ms=wait_ms * min(1.0, sum(cpus) / sum(waits)))

    def _new_threads_probe(self) -> ThreadsProbe | None:
        if not self._may_probe():
            return None
        loaders = self.facts.dataloaders
        workers = int(loaders[0].get("num_workers") or 0) if loaders else 0
        threads = torch.get_num_threads()
        busy = busy_worker_cores(workers, self.sampler.window_children_cpu_cores() or 0.0)  # as TD-COMP-009 reads it
        tried = threads_to_try(threads, env.usable_cores(), busy)
        return ThreadsProbe(threads, tried) if tried is not None else None

    def _stop_compile_capture(self) -> None:
        if self.compile_capture is not None and self.compile_capture.active:
            self.compile_summary = self.compile_capture.stop().to_dict_if_used()

    def _stop_profiler(self) -> None:
        if self.profiler is not None:
            profiler, self.profiler = self.profiler, None
            profiler.stop()
            if self.config.compile_probe and self._may_probe() and host_only():  # else no probe reads it
                self._profiled_ops = profiled_ops(profiler, self.config.profile_active)

    # -- results ---------------------------------------------------------------------------
    def finish(self, how: str, code: int, traceback_text: str | None) -> None:
        """Undo every patch and write this rank's results; safe to call twice."""
        if self._finished:
            return
        self._finished = True
        probe_cut = f"the script ended during the probe: {how}"
        if how == "script_finished" and code == 0 and self._probe is not None:
            how = "completed"  # every window was measured; only an optional probe was cut short (it says so)
        os._exit = self._real_os_exit  # type: ignore[assignment]
        self.hooks.uninstall()
        self._stop_profiler()
        self.sampler.stop()
        self.progress.close()
        self.stream.close()
        self._stop_compile_capture()
        if self.memory is not None:
            self.memory.close(f"the measured step did not finish (the script ended: {how})")
        for probe in (self.threads_probe, self.anomaly_probe, self.compile_probe):
            if probe is not None:
                probe.close(probe_cut)
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
        tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY, default=str))
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
            "step_detection": clock.source,
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
            "threads_probe": self.threads_probe.to_dict() if self.threads_probe is not None else None,
            "anomaly_probe": self.anomaly_probe.to_dict() if self.anomaly_probe is not None else None,
            "compile_probe": self.compile_probe.to_dict() if self.compile_probe is not None else None,
            "handoff_probe": self.handoff_probe,
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
