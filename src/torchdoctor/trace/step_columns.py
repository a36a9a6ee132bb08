"""Every analysed step's figures that the rank's totals are made of, one array per figure.

A rank's section lists the first `TraceConfig.steps_listed` steps in full (trace/rank.py); its
totals (`shares`, `sync_calls_per_step`, `sync_calls`, `breakdown_us`) cover every step. Kept as
numpy columns, a step costs about 150 bytes here, where a step's dicts took 3.7 KB: a 10 MB trace
of 100,000 tiny steps needed 450 MB. The totals add the steps up in the order and with the
arithmetic of a sum over the listed steps' dicts, so they are the same to the last bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from torchdoctor.trace.analyses.step_breakdown import BREAKDOWN_KEYS
from torchdoctor.trace.steps import Step


@dataclass
class StepColumns:
    """Filled a batch of steps at a time (`add`); `listed`: how many of the first steps keep their
    sync calls by name (`syncs_of`), every step adding to the totals by name (`sync_totals`)."""

    wall_us: np.ndarray  # per step
    breakdown_us: np.ndarray  # per step, one column per BREAKDOWN_KEYS
    listed: int
    sync_count: np.ndarray  # per step
    sync_dur_us: np.ndarray
    share_keys: tuple[str, ...] = ()
    shares: np.ndarray | None = None  # per step, one column per share_keys
    by_name: dict[int, dict[str, dict[str, Any]]] = field(default_factory=dict)  # listed steps with sync calls
    names_total: dict[str, dict[str, Any]] = field(default_factory=dict)  # every step's, as names appear

    @classmethod
    def empty(cls, steps: list[Step], breakdown_us: np.ndarray, listed: int) -> StepColumns:
        wall = np.array([s.wall_us for s in steps], float)
        return cls(wall, breakdown_us, listed, np.zeros(len(steps), np.int64), np.zeros(len(steps)))

    def add(self, batch: list[int], shares: list[dict[str, float]], syncs: list[dict[str, Any]]) -> None:
        """The batch's steps' annotation shares and sync calls (analyses/annotations.py, copies_syncs.py)."""
        if self.shares is None:
            self.share_keys = tuple(shares[0])
            self.shares = np.zeros((self.wall_us.size, len(self.share_keys)))
        for i, share, sync in zip(batch, shares, syncs):
            self.shares[i] = [share[k] for k in self.share_keys]
            self.sync_count[i], self.sync_dur_us[i] = sync["count"], sync["dur_us"]
            if sync["by_name"] and i < self.listed:
                self.by_name[i] = sync["by_name"]
            self._add_names(sync["by_name"])

    def _add_names(self, by_name: dict[str, dict[str, Any]]) -> None:
        for name, calls in by_name.items():
            entry = self.names_total.setdefault(name, {"count": 0, "dur_us": 0.0})
            entry["count"] += calls["count"]
            entry["dur_us"] += calls["dur_us"]

    def shares_of(self, i: int) -> dict[str, float]:
        return dict(zip(self.share_keys, self.shares[i].tolist())) if self.shares is not None else {}

    def syncs_of(self, i: int) -> dict[str, Any]:
        return {"count": int(self.sync_count[i]), "dur_us": float(self.sync_dur_us[i]),
                "by_name": self.by_name.get(i, {})}  # fmt: skip

    def weighted_shares(self) -> dict[str, float]:
        """Each share over every step, weighted by step wall time."""
        wall = sum(self.wall_us.tolist())
        return {k: sum((self.shares[:, j] * self.wall_us).tolist()) / wall if wall else 0.0
                for j, k in enumerate(self.share_keys)}  # fmt: skip

    def breakdown_sums(self) -> dict[str, float]:
        """`breakdown_us` summed over every step, added step after step (empty without steps)."""
        if not self.wall_us.size:
            return {}
        return {k: float(np.cumsum(self.breakdown_us[:, j])[-1]) for j, k in enumerate(BREAKDOWN_KEYS)}

    def sync_totals(self) -> dict[str, Any]:
        """Sync points and their time over every step, and the calls by name."""
        return {"count": int(self.sync_count.sum()), "dur_us": float(np.cumsum(self.sync_dur_us)[-1])
                if self.sync_dur_us.size else 0.0, "by_name": self.names_total}  # fmt: skip
