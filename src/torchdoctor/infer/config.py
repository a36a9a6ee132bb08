"""Options of one ladder run, validated on construction."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from torchdoctor.infer.errors import InferConfigError


@dataclass(frozen=True, kw_only=True)
class InferConfig:
    """What to measure and how hard.

    `variants`: ladder rungs by name (None: the device's default ladder; eager is always added
    first as the reference). `iters` timed calls per variant and batch size, taken in `rounds`
    interleaved rounds after `warmup` untimed calls. A variant is within tolerance when its
    max relative error is at most `tolerance` and, for classifiers, its top-1 agreement with
    eager is at least `min_top1_agreement`. `export_dir`: where to write artefacts, if anywhere.
    """

    variants: tuple[str, ...] | None = None
    batch_sizes: tuple[int, ...] = (1, 8, 32)
    device: str = "cpu"
    iters: int = 30
    rounds: int = 5
    warmup: int = 3
    tolerance: float = 0.05
    min_top1_agreement: float = 0.99
    export_dir: Path | None = None

    def __post_init__(self) -> None:
        if not self.batch_sizes or min(self.batch_sizes) < 1:
            raise InferConfigError("batch sizes must be positive integers, e.g. --batch-sizes 1,8,32")
        if self.iters < 2 or self.rounds < 1 or self.warmup < 0:
            raise InferConfigError("need --iters >= 2, rounds >= 1 and warmup >= 0")
        if not 0 <= self.min_top1_agreement <= 1 or self.tolerance < 0:
            raise InferConfigError("tolerance must be >= 0 and min top-1 agreement within [0, 1]")
        if not (self.device == "cpu" or self.device.startswith("cuda")):
            raise InferConfigError(f"device {self.device!r} is not supported; use cpu or cuda")
        from torchdoctor.infer.variants import resolve

        for name in self.variants or ():
            resolve(name)

    def ladder(self) -> tuple[str, ...]:
        """The rungs to measure, eager first."""
        from torchdoctor.infer.variants import default_ladder

        names = self.variants or default_ladder(self.device)
        return ("eager",) + tuple(dict.fromkeys(n for n in names if n != "eager"))
