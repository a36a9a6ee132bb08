"""Hypothesis settings shared by the fuzz tests: few examples in CI, many on demand.

CI runs each property with its small default (the fuzz files take under a minute together on two
cores); `TD_FUZZ_EXAMPLES=3000 pytest tests/...` runs a longer campaign with the same code.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings


def fuzz_settings(examples: int) -> settings:
    """`examples` per property (or $TD_FUZZ_EXAMPLES), no deadline: a file load varies in time."""
    return settings(max_examples=int(os.environ.get("TD_FUZZ_EXAMPLES", examples)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
