"""Every rank's file analysed, in this process one after the other or in worker processes.

The first file that loads draws the step timeline that sets the step every other rank draws
(trace/analyses/timeline.py), so it is analysed before the others are handed out; the rest then
run `jobs` at a time (trace/pool.py). A file that cannot be read is an outcome like any other
(its exception), so that the caller decides what one bad rank among many means. A single file is
always read in the calling process, as it always was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from torchdoctor.errors import TorchDoctorError
from torchdoctor.trace import halves
from torchdoctor.trace.cluster import run_on_cluster
from torchdoctor.trace.config import TraceConfig
from torchdoctor.trace.pool import Outcome, run_each
from torchdoctor.trace.rank_task import RankResult, RankTask, analyse_file

#: `progress(done, total, path)`: called as each file's analysis ends (in the order they end).
Progress = Callable[[int, int, str], None]


def gather_ranks(paths: Sequence[str], config: TraceConfig, jobs: int,
                 progress: Progress | None = None, cluster: str | None = None) -> list[Outcome[RankResult]]:
    """Each file's outcome, in the order of `paths`; on the Dask cluster at `cluster` when given
    (trace/cluster.py: an address, or `local`)."""
    total, done = len(paths), [0]
    jobs = jobs if total > 1 else 1  # one file: read here (a worker would only add its start)

    def finished(i: int) -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total, paths[i])

    outcomes: list[Outcome[RankResult]] = []
    step: int | None = None
    for i, path in enumerate(paths):  # until one file loads: it sets the timeline's step
        outcome = _run([RankTask(path, config, total, draw_first=True)], jobs, lambda _: finished(i), cluster)[0]
        outcomes.append(outcome)
        if outcome.value is not None:
            first = outcome.value.first_timeline
            step = first["step"] if first else None
            break
    # Workers that fill the cores gain nothing from a second process per file, and pay its start.
    left = len(paths) - len(outcomes)
    split = cluster is not None or 2 * min(jobs, left) <= halves.usable_cpus()
    rest = [RankTask(p, config, total, step=step, split=split) for p in paths[len(outcomes):]]
    offset = len(outcomes)
    return outcomes + _run(rest, jobs, lambda i: finished(offset + i), cluster)


def _run(tasks: list[RankTask], jobs: int, on_done: Callable[[int], None],
         cluster: str | None) -> list[Outcome[RankResult]]:
    """On the cluster when one is named; else in this process when one job is asked for (no worker
    to start), else in worker processes."""
    if not tasks:
        return []
    if cluster is not None:
        return run_on_cluster(analyse_file, tasks, cluster, jobs, on_done)
    if jobs > 1:
        return run_each(analyse_file, tasks, min(jobs, len(tasks)), on_done)
    out = []
    for i, task in enumerate(tasks):
        try:
            out.append(Outcome(value=analyse_file(task)))
        except (OSError, TorchDoctorError) as error:  # a missing file, TraceFormatError, TraceLoadError
            out.append(Outcome(error=error))
        on_done(i)
    return out
