"""`record.system` as one frozen value: the machine load sampled in the background of the observed
process (observe/system.py writes it; docs/record-schema.md).

Readers take it through `SystemSection.from_dict(record.system)`; `summary`'s means and maxima are
over the timing window (`over`: "window", or "run" without one). A figure not sampled (no GPU, an
older Record) is None.

Other processes' load is what the machine's CPU less the script's process tree used
(`other_cores`); it is material from OTHERS_MATERIAL of the machine's cores, where it disturbs
every timing figure (the caveat, analyse/caveats.py) and may compete with the script's threads
(TD-COMP-031, the threads probe).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from torchdoctor.jsonfields import Keyed, readable

#: Other processes using this share of the machine's cores (or more) disturb the timing figures: on
#: a 2-core machine, half a core. (A quiet machine's own daemons stay under 5%.)
OTHERS_MATERIAL = 0.25


def other_cores(machine_percent: float | None, process_percent: float | None,
                logical_cores: int | None) -> float | None:
    """The cores other processes kept busy: the machine's CPU (`machine_percent`, % of all
    `logical_cores`, as psutil counts it) less the script's process tree (`process_percent`, % of
    one core), never below 0; None when a figure is missing."""
    if machine_percent is None or process_percent is None or not logical_cores:
        return None
    return max(0.0, machine_percent / 100 * logical_cores - process_percent / 100)


def others_material(others: float | None, logical_cores: int | None) -> bool:
    """Whether other processes used OTHERS_MATERIAL of the machine's cores or more."""
    return others is not None and bool(logical_cores) and others >= OTHERS_MATERIAL * logical_cores


@dataclass(frozen=True, slots=True)
class SystemSummary(Keyed):
    """Means and maxima of the samples; CPU figures in % of one core (`machine_`: of all cores),
    disk reads in bytes per second."""

    num_samples: int = 0
    over: str | None = None
    process_cpu_percent_mean: float | None = None
    process_cpu_percent_max: float | None = None
    machine_cpu_percent_mean: float | None = None
    machine_cpu_percent_max: float | None = None
    children_cpu_percent_mean: float | None = None
    children_cpu_percent_max: float | None = None
    gpu_util_percent_mean: float | None = None
    gpu_util_percent_max: float | None = None
    rss_bytes_max: float | None = None
    children_rss_bytes_max: float | None = None
    gpu_memory_bytes_max: float | None = None
    disk_read_bytes_per_s: float | None = None
    process_read_bytes_per_s: float | None = None

    def other_cores(self, logical_cores: int | None) -> float | None:
        """The cores other processes kept busy on average over the window (`other_cores`); None
        when the machine or the process was not sampled or the core count is unknown."""
        return other_cores(self.machine_cpu_percent_mean, self.process_cpu_percent_mean, logical_cores)


@dataclass(frozen=True, slots=True)
class SystemSection(Keyed):
    """The sampler's settings, its samples as columns (`t_s`, `process_cpu_percent`, ...; a sample
    it could not take is None) and their summary."""

    WHERE: ClassVar[str] = "system"
    interval_s: float | None = None
    gpu_sampled: bool | None = None
    gpu_uuids: tuple[str, ...] = ()
    window_start_s: float | None = None
    window_end_s: float | None = None
    samples: dict[str, tuple[float | None, ...]] = field(default_factory=dict)
    summary: SystemSummary | None = None

    @classmethod
    def summary_of(cls, data: Any) -> SystemSummary:
        """The summary of a Record's `system`; an empty one when absent or when the section does
        not fit its type (a hand-edited Record)."""
        section = readable(cls.from_dict, data)
        return section.summary if section is not None and section.summary is not None else SystemSummary()
