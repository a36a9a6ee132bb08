"""The per-rank tasks run on a Dask cluster, for jobs whose traces outgrow one machine.

Dask distributed places the tasks on its workers, notices a worker that dies and reruns its tasks
elsewhere: a task whose workers die more than `ALLOWED_FAILURES` times fails with KilledWorker,
which is reported as that file's outcome like any read error. Nothing here schedules: the client
submits one task a file and collects each result as it finishes. The files must sit where every
worker can open them under the same path (a shared file system). Optional: `pip install
'torchdoctor[cluster]'` installs dask[distributed]; without it `--cluster` says so.

`address`: a scheduler's address (`tcp://host:8786`), or `local` for a LocalCluster of worker
processes on this machine (`jobs` of them, one thread each, on the loopback interface).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from torchdoctor.errors import TorchDoctorError
from torchdoctor.trace.pool import Outcome

T = TypeVar("T")
R = TypeVar("R")

#: Worker deaths a task may cause before the scheduler gives up on it (Dask's
#: `distributed.scheduler.allowed-failures`, 3 by default): one retry, as with local worker processes.
ALLOWED_FAILURES = 1
#: Tasks a worker thread is handed at once (Dask's `distributed.scheduler.worker-saturation`, 1.1
#: by default, which gives a one-thread worker two): a worker's death counts against every task it
#: held, so with one each it counts only against the task that was running, and a healthy file
#: queued behind a file that kills its worker is not reported as a failure.
WORKER_SATURATION = 1.0


class ClusterUnavailable(TorchDoctorError):
    """dask[distributed] is not installed, or the scheduler cannot be reached."""


def run_on_cluster(fn: Callable[[T], R], items: Sequence[T], address: str, jobs: int,
                   on_done: Callable[[int], None] | None = None) -> list[Outcome[R]]:
    """`fn(item)` for every item on the cluster at `address`; the outcomes in the items' order."""
    try:
        from distributed import as_completed
    except ImportError:
        raise ClusterUnavailable("--cluster needs dask[distributed]: pip install 'torchdoctor[cluster]'") from None
    outcomes: dict[int, Outcome[R]] = {}
    with _client(address, jobs) as client:
        futures = client.map(fn, list(items), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        for future in as_completed(futures):
            i = index[future.key]
            error = future.exception()
            outcomes[i] = Outcome(error=error) if error is not None else Outcome(value=future.result())
            if on_done is not None:
                on_done(i)
    return [outcomes[i] for i in range(len(items))]


@contextmanager
def _client(address: str, jobs: int) -> Iterator[Any]:
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                          "distributed.scheduler.worker-saturation": WORKER_SATURATION}):
        if address != "local":
            try:
                client = Client(address, timeout="30s")
            except OSError as error:
                raise ClusterUnavailable(f"cannot reach the Dask scheduler at {address}: {error}") from None
            with client:
                yield client
            return
        with LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster, Client(cluster) as client:  # fmt: skip
            yield client
