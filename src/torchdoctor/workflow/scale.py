"""`torchdoctor scale`: observe one script at 1, 2, 4 ... processes (each through torch.distributed.run)
and hand the Records to the scaling analysis (`torchdoctor.distributed.scale`)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from torchdoctor.analyse import analyse_record
from torchdoctor.distributed.scale import process_counts, scaling_document, size_row
from torchdoctor.launch import LaunchConfig, observe


@dataclass(kw_only=True, slots=True)
class ScaleConfig:
    max_nproc: int = 2
    torchrun_args: list[str] = field(default_factory=list)
    """Extra torchrun options; none: --standalone (a free port, so concurrent jobs never clash)."""
    timeout_s: float | None = None


def scale_script(script: str | Path, args: Sequence[str], observe_config: Any, config: ScaleConfig,
                 on_size: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Observe the script at each size and return the scaling document (docs/distributed.md)."""
    rows = []
    for nproc in process_counts(config.max_nproc):
        if on_size:
            on_size(nproc)
        launch = LaunchConfig(nproc_per_node=nproc, torchrun_args=config.torchrun_args or ["--standalone"],
                              timeout_s=config.timeout_s)
        with tempfile.TemporaryDirectory(prefix=f"torchdoctor-scale-{nproc}-") as out:
            record = observe(script, args, observe_config, launch, out_dir=out)
            if record.ranks:
                record = analyse_record(record, lint=False)
        rows.append(size_row(nproc, record))
    return scaling_document(str(script), list(args), rows)
