"""The JSON document of a benchmark session (`torchdoctor bench --json`), keys in docs/bench.md."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from torchdoctor.bench.adaptive import SCHEMA_VERSION, BenchResult, Policy


def bench_document(
    mode: str,
    variants: Mapping[str, str],
    policy: Policy,
    results: Sequence[BenchResult],
) -> dict:
    """`mode`: "statements" or "processes"; `variants`: name -> what was run (statement or argv)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "torchdoctor.bench",
        "mode": mode,
        "variants": dict(variants),
        "policy": dataclasses.asdict(policy),
        "results": [result.to_dict() for result in results],
    }
