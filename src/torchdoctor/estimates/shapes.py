"""Whether a script's first input changes size from step to step: what TD-COMP-019 reports and
what makes tune's compile knob try `dynamic=True`, defined once. Torch-free."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

#: Steps with a recorded input size before sizes can be said to vary.
MIN_STEPS = 4
#: Distinct sizes that make them vary (a last partial batch alone makes two).
MIN_DISTINCT = 3
#: The most common size covering this share of the steps or more counts as fixed.
DOMINANT = 0.8


@dataclass(frozen=True)
class SizeSpread:
    """The first-input sizes over the steps that recorded one."""

    distinct: int
    dominant: float  # the most common size's share of the steps
    steps: int

    @property
    def varies(self) -> bool:
        return self.distinct >= MIN_DISTINCT and self.dominant < DOMINANT


def size_spread(sizes: Iterable[int | None]) -> SizeSpread | None:
    """The spread of `sizes` (elements of each step's first input; zeros and None, steps that saw
    no input tensor, left out), or None with fewer than MIN_STEPS of them."""
    known = [n for n in sizes if n]
    if len(known) < MIN_STEPS:
        return None
    counts = Counter(known)
    return SizeSpread(len(counts), counts.most_common(1)[0][1] / len(known), len(known))
