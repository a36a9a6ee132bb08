"""`torchdoctor comm`: collective bandwidth sweep (like nccl-tests) through torch.distributed.run."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    app.command("comm")(comm)


def comm(
    nproc_per_node: int = typer.Option(2, "--nproc-per-node", help="Ranks to launch on this node."),
    backend: str = typer.Option("auto", help="gloo, nccl, or auto (NCCL when each rank has a GPU)."),
    op: Optional[list[str]] = typer.Option(None, "--op", help="Collective to sweep; repeatable (default: all)."),
    min_bytes: int = typer.Option(8, help="Smallest message, bytes."),
    max_bytes: int = typer.Option(1 << 25, help="Largest message, bytes."),
    step_factor: int = typer.Option(2, help="Each size is this many times the previous one."),
    iters: int = typer.Option(20, help="Timed calls per size."),
    warmup: int = typer.Option(5, help="Untimed calls per size before timing."),
    torchrun_arg: Optional[list[str]] = typer.Option(None, "--torchrun-arg",
                                                     help="Extra torchrun option, e.g. --nnodes=2; repeatable."),
    timeout_s: float = typer.Option(600.0, help="Stop the sweep after this many seconds."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the JSON document here."),
) -> None:
    """Time all_reduce, all_gather, reduce_scatter, broadcast and all_to_all from bytes to --max-bytes."""
    import orjson
    from rich.console import Console

    from torchdoctor.distributed.collectives import COLLECTIVES
    from torchdoctor.distributed.comm import CommConfig, run_comm
    from torchdoctor.report.distributed import render_comm

    config = CommConfig(nproc_per_node=nproc_per_node, backend=backend, ops=list(op or COLLECTIVES),
                        min_bytes=min_bytes, max_bytes=max_bytes, step_factor=step_factor, iters=iters,
                        warmup_iters=warmup, torchrun_args=list(torchrun_arg or []), timeout_s=timeout_s)
    console = Console()
    with console.status(f"sweeping {len(config.ops)} collectives on {nproc_per_node} ranks..."):
        doc = run_comm(config)
    render_comm(doc, console)
    if json_out:
        json_out.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
