"""From per-step samples to the Record's summary, and from rank results to a Record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from torchdoctor.distributed.failures import error_line, failures_in_order
from torchdoctor.process.signals import signal_name
from torchdoctor.record import ExitInfo, Record, StepSample, Summary

_PARTS = ("data_wait", "forward", "backward", "optimizer")
#: torchdoctor's exit status when the --timeout stopped the script (as coreutils' `timeout`).
TIMEOUT_STATUS = 124


def summarise(steps: list[StepSample], window_s: float | None = None) -> Summary:
    """Median step time and the share of each part in the summed wall time of the steps.

    `other_fraction` is what no hook saw (the script's own Python, host-device copies, logging,
    zero_grad, ...). Parts are host times, so on an asynchronous GPU they can sum to more or less
    than the device time; the profiler window tells the device side.
    """
    if not steps:
        return Summary(window_s=window_s)
    wall = np.array([s.wall_s for s in steps])
    total = float(wall.sum())
    fractions = {}
    for part in _PARTS:
        value = float(sum(getattr(s, f"{part}_s") for s in steps))
        fractions[part] = value / total if total > 0 else 0.0
    step_s = float(np.median(wall))
    sizes = [s.batch_size for s in steps if s.batch_size]
    samples_per_s = float(np.median(sizes)) / step_s if sizes and step_s > 0 else None
    return Summary(
        num_steps=len(steps),
        step_s=step_s,
        step_s_p10=float(np.percentile(wall, 10)),
        step_s_p90=float(np.percentile(wall, 90)),
        window_s=window_s,
        samples_per_s=samples_per_s,
        data_wait_fraction=fractions["data_wait"],
        forward_fraction=fractions["forward"],
        backward_fraction=fractions["backward"],
        optimizer_fraction=fractions["optimizer"],
        other_fraction=max(0.0, 1.0 - sum(fractions.values())),
    )


def rank_summary(result: dict[str, Any]) -> dict[str, Any]:
    """What the Record keeps of each rank when several ran."""
    steps = [StepSample(**s) for s in result.get("steps", [])]
    return {
        "rank": result["rank"],
        "how": result["how"],
        "code": result["code"],
        "step_detection": result["step_detection"],
        "steps": [s.wall_s for s in steps],
        "data_wait_s": [s.data_wait_s for s in steps],
        "summary": summarise(steps, result.get("window_s")),
        "traces": result.get("traces", []),
        "ended_at_unix_s": result.get("ended_at_unix_s"),
        "error": error_line(result.get("traceback")),
        "runtime": result.get("env", {}).get("distributed_runtime"),
    }


def decide_exit(result: dict[str, Any] | None, returncode: int, config: dict[str, Any],
                timeout_s: float | None = None) -> ExitInfo:
    """The Record's exit: how the script ended, and what torchdoctor itself returns.
    `timeout_s`: the timeout expired and the script was stopped (reason "timeout", status 124)."""
    exit_info = _script_exit(result, returncode, config)
    if timeout_s is not None and exit_info.reason != "completed":
        measured = _partial(result, config) if result is not None else "it reported nothing"
        exit_info = ExitInfo(status=TIMEOUT_STATUS, reason="timeout", signal=exit_info.signal,
                             message=f"the script ran past the timeout of {timeout_s:g} s and was stopped; {measured}",
                             traceback=exit_info.traceback)
    return exit_info


def _partial(result: dict[str, Any], config: dict[str, Any]) -> str:
    """How far the script got: steps seen, and timed steps measured of those wanted."""
    return (f"the script ended after {result.get('steps_seen', 0)} steps; {len(result.get('steps', []))} of "
            f"{config['timing_steps']} timed steps measured")


def _script_exit(result: dict[str, Any] | None, returncode: int, config: dict[str, Any]) -> ExitInfo:
    if result is None:
        signal_note = f" ({signal_name(-returncode)}, signal {-returncode})" if returncode < 0 else ""
        return ExitInfo(
            status=128 - returncode if returncode < 0 else (returncode or 1),
            reason="killed",
            message=f"the script's process ended without reporting{signal_note}; "
            "it may have run out of memory or been killed",
            signal=signal_name(-returncode) if returncode < 0 else None,
        )
    how, code = result["how"], result["code"]
    timed = len(result.get("steps", []))
    if how == "setup_error":
        last = (result.get("traceback") or "").strip().splitlines()[-1:] or ["unknown error"]
        return ExitInfo(status=code, reason=how, traceback=result.get("traceback"),
                        message=f"torchdoctor could not set up the observation: {last[0]}")
    needed = config["warmup_steps"] + config["timing_steps"]
    if how == "killed":  # rebuilt from the steps it streamed (observe.stream)
        ended = f"ended by {result['signal']}" if result.get("signal") else "ended"
        return ExitInfo(
            status=code, reason="killed", signal=result.get("signal"),
            message=f"the script's process {ended} without saving its results, after {result.get('steps_seen', 0)} "
            f"steps; the {timed} timed step(s) it streamed are kept (it may have crashed, run out of memory "
            "or been killed)",
        )
    if result.get("compile_error"):
        return ExitInfo(status=code or 1, reason=how, traceback=result.get("traceback"),
                        message=f"the script does not compile: {result['compile_error']}")
    if result["step_detection"] is None and how == "script_error":
        # The script's own exception is what happened; step detection never had a chance.
        last = (result.get("traceback") or "").strip().splitlines()[-1:] or ["an exception"]
        return ExitInfo(status=code or 1, reason=how, traceback=result.get("traceback"),
                        message=f"the script raised {last[0]} before its first step")
    if result["step_detection"] is None and how in ("sys_exit", "os_exit") and code:
        return ExitInfo(status=code, reason=how, traceback=result.get("traceback"),
                        message=f"the script exited with code {code} before its first step")
    if result["step_detection"] is None:
        return ExitInfo(
            status=code or 3,
            reason="no_steps" if how in ("script_finished", "sys_exit") and code == 0 else how,
            message="no training or inference step was detected (no optimizer.step(), backward() "
            "or nn.Module call); call torchdoctor.step() at the end of each step to mark it",
            traceback=result.get("traceback"),
        )
    if how == "completed":
        return ExitInfo(status=0, reason="completed", message="every window was measured")
    stop_signal = result.get("signal")
    partial = _partial(result, config)
    if timed == 0 and how in ("script_finished", "sys_exit") and code == 0:
        return ExitInfo(
            status=3,
            reason=how,
            message=f"{partial}: it needs at least {needed} steps "
            f"(lower --warmup-steps/--steps, or let it run longer)",
        )
    messages = {
        "script_finished": partial,
        "sys_exit": f"the script called sys.exit({code}); {partial}",
        "os_exit": f"the script called os._exit({code}); {partial}",
        "interrupted": f"interrupted ({'Ctrl-C' if stop_signal in (None, 'SIGINT') else stop_signal}); {partial}",
        "script_error": f"the script raised an exception; {partial}",
    }
    return ExitInfo(status=code, reason=how, message=messages.get(how, partial), traceback=result.get("traceback"),
                    signal=stop_signal if how == "interrupted" else None)


@dataclass(frozen=True, slots=True)
class Invocation:
    """The run a Record is of: `script` with `argv`, started in `cwd`, observed under `config` (an
    ObserveConfig's dict), known as `run_id`."""

    script: str
    argv: list[str]
    cwd: str
    config: dict[str, Any]
    run_id: str


def build_record(results: list[dict[str, Any]], returncode: int, invocation: Invocation, *,
                 timeout_s: float | None = None) -> Record:
    """One Record of `invocation` from every rank's results (rank 0's figures on top, all ranks in
    `ranks`), the script's exit from `returncode`. `timeout_s`: the timeout expired (see decide_exit)."""
    results = sorted(results, key=lambda r: r["rank"])
    main = results[0] if results else None
    config = invocation.config
    record = Record(script=invocation.script, argv=invocation.argv, cwd=invocation.cwd, config=config,
                    run_id=invocation.run_id)
    record.exit = decide_exit(main, returncode, config, timeout_s)
    if main is None:
        return record
    record.step_detection = main["step_detection"]
    record.steps = [StepSample(**s) for s in main["steps"]]
    record.summary = summarise(record.steps, main.get("window_s"))
    record.env = main["env"]
    record.system = main["system"]
    record.artifacts = {"traces": [t for r in results for t in r.get("traces", [])]}
    record.memory, record.compile = main.get("memory"), main.get("compile")
    record.probes = main.get("probes") or {}
    if len(results) > 1 or main["env"].get("distributed", {}).get("world_size", 1) > 1:
        record.ranks = [rank_summary(r) for r in results]
        failed = failures_in_order(results)
        if failed:  # the first rank to fail is the cause; the others usually fail because of it
            record.exit = decide_exit(failed[0], returncode, config, timeout_s)
            record.exit.message = f"rank {failed[0]['rank']} failed first: {record.exit.message}"
    if record.exit.reason not in ("completed",) and record.steps:
        record.warnings.append(record.exit.message)
    for note in ("step_note", "batch_note"):
        if main.get(note):
            record.warnings.append(main[note])
    return record
