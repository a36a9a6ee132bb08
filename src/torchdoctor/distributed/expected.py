"""Bus bandwidth a device's intra-node interconnect offers, where the device name tells it.

Figures are per direction, in GB/s, from the vendors' data sheets (NVLink generation x links);
nccl-tests' bus bandwidth on a healthy node reaches roughly 70-90 % of them for large messages.
PCIe boards, multi-node jobs and gloo (host memory over TCP loopback) have no figure here: their
bandwidth depends on the host's topology, so no "far below theoretical" claim is made for them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ExpectedBandwidth:
    busbw_gb_per_s: float
    source: str


# Substring of torch.cuda.get_device_name() -> NVLink bandwidth per direction.
_NVLINK = (
    ("H200", ExpectedBandwidth(450.0, "NVLink 4, 18 links x 25 GB/s (H200 SXM data sheet)")),
    ("H100 80GB HBM3", ExpectedBandwidth(450.0, "NVLink 4, 18 links x 25 GB/s (H100 SXM data sheet)")),
    ("H100 SXM", ExpectedBandwidth(450.0, "NVLink 4, 18 links x 25 GB/s (H100 SXM data sheet)")),
    ("A100-SXM", ExpectedBandwidth(300.0, "NVLink 3, 12 links x 25 GB/s (A100 SXM data sheet)")),
    ("V100-SXM2", ExpectedBandwidth(150.0, "NVLink 2, 6 links x 25 GB/s (V100 SXM2 data sheet)")),
)

#: Peak bus bandwidth below this fraction of the expected one is reported as a finding.
FAR_BELOW_FRACTION = 0.5


def expected_bandwidth(backend: str, device_name: str | None, nnodes: int = 1) -> ExpectedBandwidth | None:
    """The intra-node figure for NCCL on a known NVLink device, else None (unknown)."""
    if backend != "nccl" or not device_name or nnodes != 1:
        return None
    for key, figure in _NVLINK:
        if key in device_name:
            return figure
    return None
