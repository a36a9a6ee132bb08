"""The hostile inputs that are too large to keep in the repository, made on demand.

The small ones live beside this file in `files/`. Each large one is a function returning its bytes;
`python tests/hostile/corpus.py OUT_DIR` writes them all (the tests write them to a temporary folder,
benchmarks/hostile_rss.py measures them). Every input is under 10 MB, the size the RSS goal is about
(the tests use the ones under 1 MB).
"""

from __future__ import annotations

import base64
import gzip
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path

from torchdoctor.trace.loader import MAX_GZIP_RATIO

FILES = Path(__file__).with_name("files")
_EVENT = '{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": %s}'


def trace_deep_list() -> bytes:
    """40 KB: 20,000 nested lists as one item of traceEvents (an unbounded parser took 1 GB:
    docs/reliability.md)."""
    return b'{"traceEvents": [' + b"[" * 20000 + b"]" * 20000 + b"]}"


def trace_deep_args() -> bytes:
    """600 KB: 100,000 nested objects inside one event's args (took 10.9 GB before)."""
    return ('{"traceEvents": [' + _EVENT % ('{"a":' * 100000 + "1" + "}" * 100000) + "]}").encode()


def trace_wide_event() -> bytes:
    """0.9 MB: one event whose args hold 300,000 empty lists (just under the 1 MiB event cap)."""
    return ('{"traceEvents": [' + _EVENT % ("[" + "[]," * 300000 + "[]]") + "]}").encode()


def trace_long_name() -> bytes:
    """0.99 MB: one event whose name is a single 0.99 MB string (just under the 1 MiB token cap)."""
    return ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1, "name": "' + "x" * 990_000
            + '"}]}').encode()


def trace_gzip_bomb() -> bytes:
    """0.7 MB of gzip that expands to 200 MB of valid kernel events (took 0.44 GB before)."""
    one = b'{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"args":{"correlation":1,"stream":7}},'
    return gzip.compress(b'{"traceEvents": [' + one * (200_000_000 // len(one)) + b"{}]}", compresslevel=9)


def trace_gzip_at_limit() -> bytes:
    """The largest analysis a gzip under 1 MB may ask for: expanding just under the loader's limit
    (MAX_GZIP_RATIO), into steps, launches and kernels linked by correlation (padded with random
    text so the file is near 1 MB)."""
    steps = [f'{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{n}","ts":{n * 10000},"dur":10000,'
             f'"pid":1,"tid":1}},{{"ph":"X","cat":"cpu_op","name":"aten::mm","ts":{n * 10000},"dur":5,"pid":1,'
             '"tid":1}' for n in range(40)]
    pair = ('{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":5,"dur":1,"args":{"correlation":1}},'
            '{"ph":"X","cat":"kernel","name":"k","ts":9,"dur":1,"args":{"correlation":1,"stream":7}},')
    pad = ",".join(json.dumps({"ph": "i", "name": "pad", "args": {"x": _incompressible(520_000, seed)}})
                   for seed in range(2))
    head, tail = ('{"traceEvents": [' + ",".join(steps) + ",").encode(), (pad + "]}").encode()
    pairs = 100_000
    for _ in range(3):  # fit the expansion to the limit's ratio of the compressed size, less a 2% margin
        data = gzip.compress(head + pair.encode() * pairs + tail, compresslevel=9)
        pairs = int((0.98 * MAX_GZIP_RATIO * len(data) - len(head) - len(tail)) / len(pair))
    return gzip.compress(head + pair.encode() * pairs + tail, compresslevel=9)


def _incompressible(n: int, seed: int) -> str:
    return base64.b64encode(random.Random(seed).randbytes(n * 3 // 4)).decode()


def record_many_findings() -> bytes:
    """1 MB: a Record with 249,000 findings without their fields (its report took 1.26 GB and 288 s
    before they were checked on load)."""
    return json.dumps({"schema_version": 1, "findings": [{}] * 249_000}).encode()


def record_many_typed_findings() -> bytes:
    """1 MB: a Record with 7,500 findings that have every field."""
    finding = {"id": "X", "layer": "data", "severity": "info", "title": "t", "upside": 0, "evidence": {},
               "explanation": "", "fix": {"text": ""}}
    return json.dumps({"schema_version": 1, "findings": [finding] * 7_500}).encode()


def record_many_warnings() -> bytes:
    """1 MB: a Record with 199,000 warnings (printed one per line for 37 s before)."""
    return json.dumps({"schema_version": 1, "warnings": ["w"] * 199_000}).encode()


def record_3m_empty_findings() -> bytes:
    """9.6 MB: a Record with 3.2 million findings without their fields (813 MB before)."""
    return b'{"schema_version": 1, "findings": [' + b",".join([b"{}"] * 3_200_000) + b"]}"


def trace_padded_gzip_bomb() -> bytes:
    """9.9 MB: the 0.7 MB gzip bomb followed by 9.2 MB of zero padding, which the decompressor
    skips: by the file's size it could expand 50x to 495 MB."""
    bomb = trace_gzip_bomb()
    return bomb + b"\0" * (9_900_000 - len(bomb))


def trace_many_steps() -> bytes:
    """9.9 MB: 97,000 profiler steps (517 MB and 35 s for 100,000 before)."""
    steps = ",".join('{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","ts":%d,"dur":90,"pid":1,"tid":1}'
                     % (n, n * 100) for n in range(97_000))
    return ('{"traceEvents": [' + steps + "]}").encode()


LARGE: dict[str, Callable[[], bytes]] = {
    "trace_deep_list.json": trace_deep_list,
    "trace_deep_args.json": trace_deep_args,
    "trace_wide_event.json": trace_wide_event,
    "trace_long_name.json": trace_long_name,
    "trace_gzip_bomb.json.gz": trace_gzip_bomb,
    "trace_gzip_at_limit.json.gz": trace_gzip_at_limit,
    "record_many_findings.json": record_many_findings,
    "record_many_typed_findings.json": record_many_typed_findings,
    "record_many_warnings.json": record_many_warnings,
    "record_3m_empty_findings.json": record_3m_empty_findings,
    "trace_padded_gzip_bomb.json.gz": trace_padded_gzip_bomb,
    "trace_many_steps.json": trace_many_steps,
}


def write_large(folder: Path, names: list[str] | None = None) -> dict[str, Path]:
    """Write the large inputs (all, or `names`) into `folder`; name -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in names or list(LARGE):
        out[name] = folder / name
        out[name].write_bytes(LARGE[name]())
    return out


if __name__ == "__main__":
    for name, path in write_large(Path(sys.argv[1])).items():
        print(f"{path}: {path.stat().st_size:,} bytes")
