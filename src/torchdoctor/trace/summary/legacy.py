"""A window rebuilt for a Record analysed before the trace summary had one (docs/trace.md)."""

from __future__ import annotations

import statistics

from torchdoctor.trace.summary.rank import RankSummary
from torchdoctor.trace.summary.window import Window


def legacy_window(rank: RankSummary, data_share: float) -> Window | None:
    """A window from a Record analysed before `window` existed: the HTA device span for idle figures
    and the median per-step utilisation. Idle outside syncs is data wait up to the step's `data_share`
    (the host was in the DataLoader meanwhile), taken from HTA's host wait first, then from its kernel
    and other waits; only the rest is host or device wait, as the window attributes it. None without the device figures to rebuild it from."""
    device = rank.device
    utils = [s.gpu_utilisation_fraction for s in rank.steps if s.gpu_utilisation_fraction is not None]
    if device is None or not device.temporal.keys or not utils:
        return None
    temporal, idle = device.temporal, device.idle
    idle_fraction = float(temporal.idle_fraction or 0.0)
    host_wait = idle_fraction * idle.host_wait_fraction
    device_wait = idle_fraction * (idle.kernel_wait_fraction + idle.other_fraction)
    data_wait = min(max(data_share, 0.0), host_wait + device_wait)
    data_from_host = min(data_wait, host_wait)
    span, comm = float(temporal.span_us or 0.0), device.overlap.comm_us
    exposed = comm - device.overlap.comm_comp_overlap_us
    return Window.of(
        kind="device_span", state="ok", span_us=span, steps_count=rank.steps_count,
        step_us_median=rank.step_us_median, kernel_utilisation_fraction=statistics.median(utils),
        busy_fraction=1.0 - idle_fraction, idle_fraction=idle_fraction, dataloader_fraction=data_share,
        idle_data_fraction=data_wait,
        idle_sync_fraction=idle_fraction * idle.sync_fraction,
        idle_host_fraction=host_wait - data_from_host,
        idle_device_fraction=device_wait - (data_wait - data_from_host),
        communication_fraction=comm / span if span else 0.0,
        communication_exposed_fraction=exposed / span if span else 0.0,
    )
