"""The ladder: prepare every variant, then measure them all at each batch size against eager.

Order of work: eager must run on the example batch (else :class:`InputRejectedError`); each
variant is prepared on a private copy when it alters the model, and its `prepare_s` runs from
the start of preparation to the end of its first call at the first batch size (so it includes
export and compilation). At each batch size every live variant is checked against eager's
output, warmed up, then timed in interleaved rounds; the bench module's verdict compares its
per-call times with eager's. A variant that raises is marked failed with the exception as the
reason; one outside tolerance is marked diverged; neither is dropped from the result.
"""

from __future__ import annotations

import copy
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from torchdoctor.infer.accuracy import tolerance_violation
from torchdoctor.infer.config import InferConfig
from torchdoctor.infer.env import environment
from torchdoctor.infer.errors import InferConfigError, InputRejectedError
from torchdoctor.infer.factory import ModelAndExample, resize_batch
from torchdoctor.infer.live import Live, failure_reason
from torchdoctor.infer.measure import measure_variants
from torchdoctor.infer.recommend import recommend
from torchdoctor.infer.result import InferResult, VariantResult
from torchdoctor.infer.timing import device_sync
from torchdoctor.infer.variants import Prepared, PrepareContext, resolve
from torchdoctor.infer.variants.base import first_tensor

Progress = Callable[[str], None]


def run_ladder(loaded: ModelAndExample, config: InferConfig, progress: Progress | None = None) -> InferResult:
    """Measure `loaded` through the ladder of `config` (see the module docstring)."""
    say = progress or (lambda _message: None)
    model = loaded.model.to(config.device)
    _check_eager(model, loaded, config.device)
    results: list[VariantResult] = []
    with tempfile.TemporaryDirectory(prefix="torchdoctor-infer-") as scratch:
        live: Live = {}
        for name in config.ladder():
            say(f"preparing {name}")
            result, prepared = _prepare(name, model, loaded.args, config, Path(scratch))
            results.append(result)
            if prepared is not None:
                live[name] = (result, prepared)
        for batch_size in config.batch_sizes:
            say(f"measuring batch size {batch_size}")
            batch = _on_device(resize_batch(loaded.args, batch_size), config.device)
            measure_variants(live, batch, config)
        _mark_diverged(results, config)
        if config.export_dir is not None:
            _save_artifacts(live, Path(config.export_dir))
    return InferResult(
        model=loaded.spec,
        device=config.device,
        batch_sizes=list(config.batch_sizes),
        tolerance={"max_rel_error": config.tolerance, "min_top1_agreement": config.min_top1_agreement},
        env=environment(config.device),
        variants=results,
        recommendation=recommend(results, list(config.batch_sizes)),
    )


def _check_eager(model: Any, loaded: ModelAndExample, device: str) -> None:
    import torch

    try:
        with torch.inference_mode():
            first_tensor(model(*_on_device(loaded.args, device)))
    except Exception as exc:  # any exception: the user's model rejects its own example
        raise InputRejectedError(
            f"the model raised on its example batch, so nothing can be measured: {failure_reason(exc)}"
        ) from None


def _prepare(
    name: str, model: Any, args: tuple[Any, ...], config: InferConfig, scratch: Path
) -> tuple[VariantResult, Prepared | None]:
    spec, option = resolve(name)
    result = VariantResult(name=name, family=spec.family, description=spec.description)
    workdir = scratch / name.replace(":", "_")
    workdir.mkdir()
    ctx = PrepareContext(device=config.device, workdir=workdir, max_batch_size=max(config.batch_sizes))
    # Exporters specialise a batch of 1 to a constant, so they trace at least 2 rows.
    trace = _on_device(resize_batch(args, max(2, *config.batch_sizes)), config.device)
    first = _on_device(resize_batch(args, config.batch_sizes[0]), config.device)
    start = time.perf_counter_ns()
    try:
        prepared = spec.prepare(copy.deepcopy(model) if spec.copies_model else model, trace, ctx, option)
        prepared.run(*first)
        device_sync(config.device)()
    except InferConfigError:
        raise
    except Exception as exc:  # any exception: the variant failed, and the result says why
        result.fail("failed", f"preparing: {failure_reason(exc)}")
        return result, None
    result.prepare_s = (time.perf_counter_ns() - start) / 1e9
    result.size_bytes = prepared.size_bytes
    return result, prepared


def _on_device(args: tuple[Any, ...], device: str) -> tuple[Any, ...]:
    return tuple(a.to(device) for a in args)


def _mark_diverged(results: list[VariantResult], config: InferConfig) -> None:
    for result in results:
        for m in result.measurements if result.status == "ok" else ():
            problem = m.accuracy and tolerance_violation(m.accuracy, config.tolerance, config.min_top1_agreement)
            if problem:
                result.fail("diverged", f"at batch size {m.batch_size}: {problem}")
                break


def _save_artifacts(live: Live, export_dir: Path) -> None:
    for name, (result, prepared) in live.items():
        if prepared.save is not None and result.status == "ok":
            folder = export_dir / name.replace(":", "_")
            folder.mkdir(parents=True, exist_ok=True)
            result.artifact_path = str(prepared.save(folder))
