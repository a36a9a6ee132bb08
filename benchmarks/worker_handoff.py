"""What the training process pays to receive one batch from a DataLoader worker, against loading
it itself: the floor under which moving loading into workers cannot win (rules/data.py,
WORKER_HANDOFF_MS).

A batch that costs next to nothing to load (rows of an in-memory TensorDataset) is fetched in the
main process (num_workers=0) and from one worker (num_workers=1, persistent, warmed up; the
worker keeps up, so the main process only waits on the hand-off: the queue, unpickling, the
shared-memory tensors). Per configuration, the median time of `next(iterator)` over `--batches`.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/worker_handoff.py [--batch-size 32] [--features 32]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
from torch.utils.data import DataLoader, TensorDataset


def fetch_ms(loader: DataLoader, batches: int, warmup: int = 20) -> float:
    """Median milliseconds of one `next()` on the loader's iterator, after `warmup` batches."""
    iterator, times = iter(loader), []
    for index in range(warmup + batches):
        start = time.perf_counter()
        next(iterator)
        if index >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
        time.sleep(0.002)  # a step's compute: the worker has time to put the next batch in the queue
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--features", type=int, default=32)
    parser.add_argument("--batches", type=int, default=200)
    options = parser.parse_args()
    rows = (options.batches + 20) * options.batch_size
    data = TensorDataset(torch.randn(rows, options.features), torch.randn(rows, 1))
    main_ms = fetch_ms(DataLoader(data, batch_size=options.batch_size), options.batches)
    worker_ms = fetch_ms(DataLoader(data, batch_size=options.batch_size, num_workers=1, persistent_workers=True),
                         options.batches)
    print(json.dumps({"batch_size": options.batch_size, "features": options.features, "main_process_ms": main_ms,
                      "one_worker_ms": worker_ms, "load_average": os.getloadavg()}))


if __name__ == "__main__":
    main()
