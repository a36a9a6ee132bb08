"""`torchdoctor check`: the performance gate (`torchdoctor.check`) wired to its collaborators: the
progress display on stderr, the run store for named baselines, the fork servers of the check, and
the outputs (console, JSON, Markdown, JUnit XML, GitHub annotations).

Stop signals (launch.stops) are held from start to end: one in flight is passed on to the
observation running (which then ends as interrupted), one between observations starts no other;
either way what was measured is decided and written to every output.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

from rich.console import Console

from torchdoctor.check import (ERROR, PASS, REGRESSION, UNDECIDED, CheckOptions, CheckResult, Collaborators,
                               ForkServers, compare_with_baseline, compare_with_python, compare_with_ref,
                               record_baseline)
from torchdoctor.check.demo import DEMO_ARGS, DEMO_REF, DEMO_SCRIPT, demo_repository, one_intra_op_thread
from torchdoctor.launch.stops import held_stops
from torchdoctor.report.check import RichCheckProgress, write_outputs
from torchdoctor.store import DEFAULT_STORE, RunStore


@dataclass(frozen=True, kw_only=True)
class CheckOutputs:
    """Where the result goes: JSON ('-': stdout), Markdown, JUnit XML, annotations, the console;
    `store_path`: the run store (stored baselines; the check's artefacts go beside it); `progress`:
    the progress display on stderr."""

    json_out: str | None = None
    markdown_out: Path | None = None
    junit_out: Path | None = None
    annotations: bool = False
    console: Console | None = None
    store_path: Path = DEFAULT_STORE
    progress: bool = True


def check_against_ref(script: str, args: Sequence[str], ref: str, options: CheckOptions,
                      outputs: CheckOutputs = CheckOutputs(), *, mode: str = "ref") -> CheckResult:
    """Compare the working tree (B) with REF (A), interleaved on this machine; writes the outputs."""
    return _checked(options, outputs, lambda tools: compare_with_ref(script, args, ref, options, tools, mode=mode))


def check_against_python(script: str, args: Sequence[str], python: str, options: CheckOptions,
                         outputs: CheckOutputs = CheckOutputs()) -> CheckResult:
    """Compare this interpreter (B) with PYTHON (A) on the same code, interleaved; writes the outputs."""
    return _checked(options, outputs, lambda tools: compare_with_python(script, args, python, options, tools))


def check_against_baseline(script: str, args: Sequence[str], name: str, options: CheckOptions,
                           outputs: CheckOutputs = CheckOutputs()) -> CheckResult:
    """Compare this tree (B) with the stored baseline NAME (A); writes the outputs."""
    return _checked(options, outputs, lambda tools: compare_with_baseline(script, args, name, options, tools))


def save_baseline(script: str, args: Sequence[str], name: str, options: CheckOptions,
                  outputs: CheckOutputs = CheckOutputs()) -> CheckResult:
    """Observe the script and keep its figures as the baseline NAME (a .json file or the store)."""
    return _checked(options, outputs, lambda tools: record_baseline(script, args, name, options, tools))


def check_demo(options: CheckOptions, outputs: CheckOutputs = CheckOutputs()) -> CheckResult:
    """The demo: commit 2 (a slower tokeniser) checked against commit 1, in a temporary repository,
    with one intra-op thread."""
    with one_intra_op_thread(), demo_repository() as repo:
        return check_against_ref(str(repo / DEMO_SCRIPT), list(DEMO_ARGS), DEMO_REF, options, outputs, mode="demo")


def _checked(options: CheckOptions, outputs: CheckOutputs,
             run: Callable[[Collaborators], CheckResult]) -> CheckResult:
    """Run one check with its collaborators (its fork servers closed when it ends, however it
    ends), then write the result to every output."""
    console = outputs.console or Console(stderr=outputs.json_out == "-")
    progress = RichCheckProgress(Console(stderr=True, quiet=not outputs.progress))
    with held_stops() as stops:
        with ForkServers() as servers, progress:
            result = run(Collaborators(artefacts_dir=Path(outputs.store_path).resolve().parent / "check",
                                       progress=progress, stops=stops, servers=servers,
                                       open_store=partial(RunStore, outputs.store_path)))
        write_outputs(result, console=console, json_out=outputs.json_out, markdown_out=outputs.markdown_out,
                      junit_out=outputs.junit_out, annotations=outputs.annotations)
    return result


__all__ = ["CheckOptions", "CheckOutputs", "check_against_baseline", "check_against_python", "check_against_ref",
           "check_demo", "save_baseline", "ERROR", "PASS", "REGRESSION", "UNDECIDED"]
