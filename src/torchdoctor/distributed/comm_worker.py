"""One rank of `torchdoctor comm`, started by torch.distributed.run: time each collective per size.

Contract: every rank runs the same sweep; rank 0 writes the JSON document (docs/distributed.md)
to `--out`. A collective the backend lacks is probed once on a small buffer: every rank raises the
same local error before any message is sent, so all ranks mark it unsupported and move on together.
Each (collective, size) is first checked for correctness on known values (rank r sends r + 1), then
timed over `--iters` calls after `--warmup` calls; the time is the slowest rank's mean per call.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Callable

import orjson
import torch
import torch.distributed as dist

from torchdoctor.distributed.collectives import COLLECTIVES, ELEMENT_BYTES, bandwidths_gb_per_s, message_sizes

Call = Callable[[], Any]


def _ops(send: torch.Tensor, recv: torch.Tensor, n: int) -> dict[str, tuple[Call, torch.Tensor, torch.Tensor]]:
    """op -> (call, input, output); `send` holds the whole buffer, `recv` as large as needed."""
    chunk = send.numel() // n
    gather = getattr(dist, "all_gather_single", dist.all_gather_into_tensor)
    scatter = getattr(dist, "reduce_scatter_single", dist.reduce_scatter_tensor)
    return {
        "all_reduce": (lambda: dist.all_reduce(send), send, send),
        "all_gather": (lambda: gather(recv, send[:chunk]), send[:chunk], recv),
        "reduce_scatter": (lambda: scatter(recv[:chunk], send), send, recv[:chunk]),
        "broadcast": (lambda: dist.broadcast(send, 0), send, send),
        "all_to_all": (lambda: dist.all_to_all_single(recv, send), send, recv),
    }


def _expected(op: str, rank: int, n: int, numel: int, device: torch.device) -> torch.Tensor:
    """What `op` leaves in its output when rank r's input holds r + 1 everywhere."""
    chunk = numel // n
    total = n * (n + 1) / 2
    by_chunk = torch.arange(1, n + 1, dtype=torch.float32, device=device).repeat_interleave(chunk)
    return {
        "all_reduce": torch.full((numel,), total, device=device),
        "all_gather": by_chunk,
        "reduce_scatter": torch.full((chunk,), total, device=device),
        "broadcast": torch.ones(numel, device=device),
        "all_to_all": by_chunk,
    }[op]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _measure(op: str, size: int, args: argparse.Namespace, device: torch.device) -> dict[str, Any]:
    rank, n = dist.get_rank(), dist.get_world_size()
    numel = size // ELEMENT_BYTES
    send = torch.full((numel,), float(rank + 1), device=device)
    recv = torch.zeros(numel, device=device)
    call, source, output = _ops(send, recv, n)[op]
    call()
    _sync(device)
    correct = torch.equal(output, _expected(op, rank, n, numel, device))
    for _ in range(args.warmup):
        call()
    _sync(device)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.iters):
        call()
    _sync(device)
    elapsed = torch.tensor([(time.perf_counter() - start) / args.iters, float(not correct)],
                           dtype=torch.float64, device=device)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank's time; any rank's wrong result
    time_s = float(elapsed[0])
    algbw, busbw = bandwidths_gb_per_s(op, size, time_s, n)
    return {"size_bytes": size, "count": numel, "time_us": time_s * 1e6, "algbw_gb_per_s": algbw,
            "busbw_gb_per_s": busbw, "correct": bool(elapsed[1] == 0)}


def _supported(op: str, device: torch.device) -> str | None:
    """None when `op` runs on this backend, else the backend's reason."""
    n = dist.get_world_size()
    try:
        _ops(torch.zeros(n, device=device), torch.zeros(n, device=device), n)[op][0]()
        _sync(device)
    except (RuntimeError, NotImplementedError, ValueError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def sweep(args: argparse.Namespace, device: torch.device) -> dict[str, Any]:
    n = dist.get_world_size()
    sizes = message_sizes(args.min_bytes, args.max_bytes, args.step_factor, n)
    results: dict[str, Any] = {}
    for op in args.ops:
        reason = _supported(op, device)
        rows = [] if reason else [_measure(op, size, args, device) for size in sizes]
        results[op] = {"supported": reason is None, "reason": reason, "rows": rows}
        if dist.get_rank() == 0 and args.progress:
            print(f"torchdoctor-comm {op} done", flush=True)
    return results


def _parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="torchdoctor.distributed.comm_worker")
    parser.add_argument("--out", required=True)
    parser.add_argument("--backend", default="gloo", choices=("gloo", "nccl"))
    parser.add_argument("--ops", nargs="+", default=list(COLLECTIVES), choices=COLLECTIVES)
    parser.add_argument("--min-bytes", type=int, default=8)
    parser.add_argument("--max-bytes", type=int, default=1 << 25)
    parser.add_argument("--step-factor", type=int, default=2)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--progress", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if args.backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(args.backend, device_id=device if device.type == "cuda" else None)
    try:
        results = sweep(args, device)
        if dist.get_rank() == 0:
            name = torch.cuda.get_device_name(device) if device.type == "cuda" else None
            meta = {"world_size": dist.get_world_size(), "device": str(device.type), "device_name": name,
                    "nnodes": dist.get_world_size() // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))}
            with open(args.out, "wb") as f:
                f.write(orjson.dumps({"meta": meta, "collectives": results}))
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
