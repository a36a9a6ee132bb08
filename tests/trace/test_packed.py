"""A rank's section packed as compressed JSON gives back the same section (trace/packed.py)."""

from __future__ import annotations

from pathlib import Path

import orjson

from torchdoctor.trace.config import TraceConfig
from torchdoctor.trace.loader import load_trace
from torchdoctor.trace.packed import HEAD_KEYS, PackedSection
from torchdoctor.trace.rank import analyse_rank


def test_a_real_ranks_section_unpacks_to_the_same_json_with_its_head_readable(gpu_traces: Path) -> None:
    path = sorted((gpu_traces / "multirank-sampled").glob("rank-*.json.gz"))[0]
    section, _ = analyse_rank(load_trace(path), TraceConfig())
    packed = PackedSection.pack(section)
    option = orjson.OPT_SERIALIZE_NUMPY
    assert orjson.dumps(packed.unpack(), option=option) == orjson.dumps(section, option=option)
    assert {key: packed.head[key] for key in HEAD_KEYS} == {key: section[key] for key in HEAD_KEYS}
    assert packed.head["compute_us"] == section["device"]["compute_us"] > 0
    assert packed.head["comm_us"] == section["device"]["comm_us"]
    assert len(packed.data) < len(orjson.dumps(section, option=option)) / 3


def test_a_section_without_device_work_has_no_device_figures_in_its_head(cpu_trace: Path) -> None:
    section, _ = analyse_rank(load_trace(cpu_trace), TraceConfig())
    head = PackedSection.pack(section).head
    assert section["device"] is None and head["compute_us"] is None and head["comm_us"] is None
