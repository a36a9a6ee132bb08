"""`torchdoctor infer [FACTORY | --demo]`: measure the inference ladder on the user's own model."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    app.command("infer")(infer)


def int_list(text: str) -> tuple[int, ...]:
    """'1,8,32' -> (1, 8, 32), as a typer parameter error when malformed."""
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated integers, got {text!r}") from None


def infer(
    factory: Optional[str] = typer.Argument(None, help="module:function, file.py:function or script.py "
                                            "returning (model, example batch)."),
    demo: bool = typer.Option(False, "--demo", help="Use the built-in demo text classifier."),
    batch_sizes: str = typer.Option("1,8,32", help="Batch sizes to measure, comma-separated."),
    variants: Optional[str] = typer.Option(None, help="Variants, comma-separated (default: the device's "
                                           "ladder), e.g. eager,inference_mode,compile:max-autotune."),
    device: str = typer.Option("cpu", help="cpu or cuda."),
    iters: int = typer.Option(30, help="Timed calls per variant and batch size."),
    tolerance: float = typer.Option(0.05, help="Largest max relative error accepted against eager."),
    min_top1: float = typer.Option(0.99, help="Smallest top-1 agreement accepted (classifiers)."),
    export_dir: Optional[Path] = typer.Option(None, help="Write each correct variant's artefact here."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the result as JSON here."),
) -> None:
    """Run eager, no_grad, inference_mode, torch.compile, torch.export, ONNX Runtime and int8 on
    the model, check each output against eager, and recommend the fastest within tolerance."""
    from rich.console import Console

    from torchdoctor.infer import DEMO_SPEC, InferConfig, load_model, run_ladder
    from torchdoctor.report.infer import render_infer
    from torchdoctor.report.safe_text import markup

    if demo == (factory is not None):
        raise typer.BadParameter("give a model FACTORY or --demo (not both)", param_hint="FACTORY")
    config = InferConfig(
        variants=tuple(v.strip() for v in variants.split(",")) if variants else None,
        batch_sizes=int_list(batch_sizes), device=device, iters=iters, tolerance=tolerance,
        min_top1_agreement=min_top1, export_dir=export_dir,
    )
    console = Console(stderr=True)
    with console.status("loading the model") as status:
        loaded = load_model(DEMO_SPEC if demo else factory)
        result = run_ladder(loaded, config, progress=lambda message: status.update(markup(message, one_line=True)))
    render_infer(result, Console())
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_bytes(result.to_json())
