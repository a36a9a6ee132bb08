"""`torchdoctor serve FACTORY` (a batching HTTP server) and `torchdoctor load` (load and sweeps)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Optional

import typer

from torchdoctor.cli.infer import int_list


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.command("load")(load)


def serve(
    factory: Optional[str] = typer.Argument(None, help="module:function, file.py:function or script.py."),
    demo: bool = typer.Option(False, "--demo", help="Serve the built-in demo text classifier."),
    max_batch_size: int = typer.Option(32, help="Most requests in one model call."),
    max_delay_ms: float = typer.Option(5.0, help="Longest wait for a batch to fill, from its first request."),
    max_queue: int = typer.Option(1024, help="Queued requests beyond which new ones get 503."),
    timeout_ms: float = typer.Option(5000.0, help="A request's longest wait for its result (504 after)."),
    host: str = typer.Option("127.0.0.1", help="Address to bind (loopback by default)."),
    port: int = typer.Option(8000, help="Port to bind (0: any free port)."),
) -> None:
    """Serve the model over HTTP with a dynamic batcher: POST /predict, GET /health, GET /metrics."""
    from rich.console import Console

    from torchdoctor.infer import DEMO_SPEC, load_model
    from torchdoctor.serve import BatcherConfig, TensorModel, build_app
    from torchdoctor.serve.errors import ServeConfigError
    from torchdoctor.serve.server import LOOPBACK, serve_forever
    from torchdoctor.report.safe_text import clean, markup

    if demo == (factory is not None):
        raise typer.BadParameter("give a model FACTORY or --demo (not both)", param_hint="FACTORY")
    if not 0 <= port <= 65535:
        raise typer.BadParameter(f"a port is 0..65535 (0: any free port), got {port}", param_hint="--port")
    config = BatcherConfig(max_batch_size=max_batch_size, max_delay_ms=max_delay_ms,
                           max_queue=max_queue, timeout_ms=timeout_ms)
    console = Console(stderr=True)
    if host != LOOPBACK:
        console.print(f"[yellow]warning:[/] binding {markup(host)}: the server has no authentication")
    app = build_app(TensorModel(load_model(DEMO_SPEC if demo else factory)), config)

    def ready(url: str) -> None:
        print(f"torchdoctor serve: listening on {clean(url)}", flush=True)

    try:
        asyncio.run(serve_forever(app, host, port, ready))
    except KeyboardInterrupt:
        console.print("stopped")
    except OSError as exc:  # the port is in use, the address is not this machine's, ...
        raise ServeConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def load(
    target: str = typer.Argument(..., help="Server URL (loopback), or with --sweep a model FACTORY."),
    clients: Optional[int] = typer.Option(None, help="Closed loop: this many concurrent clients."),
    rate: Optional[float] = typer.Option(None, help="Open loop: requests per second."),
    requests: int = typer.Option(1000, help="Most requests to send (per sweep point)."),
    duration: float = typer.Option(10.0, help="Most seconds to send for (per sweep point)."),
    sweep: bool = typer.Option(False, "--sweep", help="TARGET is a model factory: sweep server settings."),
    max_batch_sizes: str = typer.Option("1,8,32", help="--sweep: max batch sizes to try."),
    max_delays_ms: str = typer.Option("0,2,5", help="--sweep: max delays (ms) to try."),
    latency_budget_ms: float = typer.Option(50.0, help="--sweep: p99 latency budget for the choice."),
    emit_configs: Optional[Path] = typer.Option(None, help="--sweep: write Triton/Ray Serve configs here."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the result as JSON here."),
) -> None:
    """Load a torchdoctor server on loopback (open or closed loop), or sweep its batching settings."""
    import dataclasses

    from rich.console import Console

    from torchdoctor.serve import LoadConfig, run_load
    from torchdoctor.report.serve import render_load, render_sweep

    if clients is not None and rate is not None:
        raise typer.BadParameter("give --clients (closed loop) or --rate (open loop), not both")
    mode = "open" if rate is not None else "closed"
    config = LoadConfig(url=target if not sweep else "http://127.0.0.1", mode=mode,
                        rate_qps=rate if rate is not None else 1.0, clients=clients if clients is not None else 8,
                        max_requests=requests, duration_s=duration)
    console = Console()
    if not sweep:
        result = asyncio.run(run_load(config))
        render_load(result, console)
        payload = orjson_bytes(dataclasses.asdict(result))
    else:
        from torchdoctor.serve import run_sweep

        with Console(stderr=True).status("sweeping") as status:
            result = run_sweep(target, list(int_list(max_batch_sizes)), [float(d) for d in max_delays_ms.split(",")],
                               config, latency_budget_ms, progress=status.update)
        render_sweep(result, console)
        _emit(result, emit_configs, console)
        payload = result.to_json()
    if json_out is not None:
        json_out.write_bytes(payload)


def _emit(result, folder: Optional[Path], console) -> None:  # type: ignore[no-untyped-def]
    from torchdoctor.serve import BatcherConfig, write_configs
    from torchdoctor.report.safe_text import markup

    if folder is None or result.recommended is None:
        return
    point = result.recommended
    config = BatcherConfig(max_batch_size=point.max_batch_size, max_delay_ms=point.max_delay_ms)
    for path in write_configs(folder, "model", config):
        console.print(f"wrote {markup(path)}")


def orjson_bytes(value: object) -> bytes:
    import orjson

    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
