"""Every command's JSON keeps its schema: the same keys and the same types as the committed snapshots.

The JSON that the CLI writes (`--json`, `lint --format json|sarif`, `report --format json`, `serve`'s
HTTP answers) is a public interface: users' CI scripts parse it. Each command below is run the way a
user runs it (`python -m torchdoctor ...` in a subprocess, so that moving modules inside the package
changes nothing here) on a small workload, the *shape* of its JSON is extracted, and the shape must
equal `tests/fixtures/json_schemas/<command>.json`, made on the code before the change.

Shape: an object maps each key to the shape of its value; a list has the union of its elements'
shapes (`[]`: only empty lists were seen); numbers are "number" (int and float alike), then
"string", "bool", "null"; a union of scalars is written "null|number", a union with an object or
list `{"oneOf": [...]}`; a key missing from some elements of a list has "absent" in its union.
Dicts whose keys are data (operator names, run ids, ranks, knob names, variant names, ...) are
listed per command in `COMMANDS` (paths like `results[].verdicts`) and are written `{"*": shape}`:
their keys are not part of the schema, the shape of their values is. Opaque paths (`"any"`) are
values whose type is itself data (a finding's evidence, the values of `runs compare`'s diffs).

Comparison: every key must still be there and no key may be added; where the snapshot saw a
value of some type, the new run must give that type or null ("not measured" is always allowed).
Where the snapshot only ever saw null or empty lists there is nothing to compare with: the
fixture lists those paths under "unchecked". A snapshot is the union of a few runs' shapes (what
varies from run to run, such as a verdict's null `payoff_steps`, is then nullable or optional).

Cost: the commands run with the smallest settings the existing tests use, one run feeding several
documents where it can (a diagnose run feeds `runs show` and `report`; compile's two runs feed
`runs compare`), in two worker threads. The slow ones (those that run a model or a script) are
marked `slow` and still run in CI.

Regenerate the fixtures only when a schema change is deliberate and documented:
`python -m tests.json_schema_snapshots [COMMAND ...]` (see tests/json_schema_snapshots.py).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
TESTS = REPO_ROOT / "tests"
SNAPSHOTS = TESTS / "fixtures" / "json_schemas"
REGENERATE = "python -m tests.json_schema_snapshots"
WORKERS = 2  # threads running command groups side by side (each mostly waits on its subprocesses)

Shape = Any  # str | list | dict, as described in the module docstring

# --------------------------------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------------------------------

NO_VALUE = frozenset({"null", "absent", "unseen"})  # "unseen": the values of an empty data-keyed dict


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def shape_of(value: Any, data_keys: Iterable[str] = (), opaque: Iterable[str] = (), *,
             matched: set[str] | None = None) -> Shape:
    """The shape of a JSON value; `data_keys`/`opaque` are paths (see the module docstring).

    Paths of `data_keys`/`opaque` that occur in `value` are added to `matched`."""
    return _shape(value, "", frozenset(data_keys), frozenset(opaque), matched if matched is not None else set())


def _shape(value: Any, path: str, data_keys: frozenset[str], opaque: frozenset[str], matched: set[str]) -> Shape:
    if path in opaque:
        matched.add(path)
        return "any"
    if isinstance(value, dict):
        if path in data_keys:
            matched.add(path)
            inner: Shape = "unseen"
            for item in value.values():
                inner = merge(inner, _shape(item, _join(path, "*"), data_keys, opaque, matched))
            return {"*": inner}
        if "*" in value or (len(value) == 1 and "oneOf" in value):
            raise ValueError(f"{path or 'top level'}: a key named like a shape marker: {sorted(value)}")
        return {key: _shape(item, _join(path, str(key)), data_keys, opaque, matched) for key, item in value.items()}
    if isinstance(value, list):
        out: Shape = []
        for item in value:
            element = _shape(item, path + "[]", data_keys, opaque, matched)
            out = [element] if not out else [merge(out[0], element)]
        return out
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    raise TypeError(f"{path or 'top level'}: not a JSON value: {type(value).__name__}")


@dataclass
class _Alternatives:
    atoms: set[str]
    obj: dict[str, Shape] | None = None
    lst: list[Shape] | None = None
    data: dict[str, Shape] | None = None

    @property
    def has_value(self) -> bool:
        return bool(self.atoms - NO_VALUE) or any(x is not None for x in (self.obj, self.lst, self.data))


def _alternatives(shape: Shape) -> _Alternatives:
    if isinstance(shape, str):
        return _Alternatives(set(shape.split("|")))
    if isinstance(shape, list):
        return _Alternatives(set(), lst=shape)
    if isinstance(shape, dict) and len(shape) == 1 and "oneOf" in shape:
        out = _Alternatives(set())
        for option in shape["oneOf"]:
            _absorb(out, _alternatives(option))
        return out
    if isinstance(shape, dict) and set(shape) == {"*"}:
        return _Alternatives(set(), data=shape)
    if isinstance(shape, dict):
        return _Alternatives(set(), obj=shape)
    raise TypeError(f"not a shape: {shape!r}")


def _absorb(into: _Alternatives, other: _Alternatives) -> None:
    into.atoms |= other.atoms
    if other.obj is not None:
        into.obj = other.obj if into.obj is None else _merge_objects(into.obj, other.obj)
    if other.lst is not None:
        into.lst = other.lst if into.lst is None else _merge_lists(into.lst, other.lst)
    if other.data is not None:
        into.data = other.data if into.data is None else {"*": merge(into.data["*"], other.data["*"])}


def _merge_objects(a: dict[str, Shape], b: dict[str, Shape]) -> dict[str, Shape]:
    return {key: merge(a.get(key, "absent"), b.get(key, "absent")) for key in {**a, **b}}


def _merge_lists(a: list[Shape], b: list[Shape]) -> list[Shape]:
    return [merge(a[0], b[0])] if a and b else (a or b)


def _rebuild(alts: _Alternatives) -> Shape:
    atoms = set(alts.atoms)
    compounds = [x for x in (alts.obj, alts.lst, alts.data) if x is not None]
    if "any" in atoms:
        return "any"
    if "unseen" in atoms and (len(atoms) > 1 or compounds):
        atoms.discard("unseen")
    text = "|".join(sorted(atoms)) if atoms else None
    if not compounds:
        return text
    if text is None and len(compounds) == 1:
        return compounds[0]
    return {"oneOf": ([text] if text else []) + compounds}


def merge(a: Shape, b: Shape) -> Shape:
    """The union of two shapes (objects merge key by key; a key only one side has becomes optional)."""
    if a == b:
        return a
    out = _alternatives(a)
    _absorb(out, _alternatives(b))
    return _rebuild(out)


def describe(shape: Shape) -> str:
    alts = _alternatives(shape)
    parts = sorted(alts.atoms)
    parts += ["object"] * (alts.obj is not None) + ["list"] * (alts.lst is not None)
    parts += ["object with data keys"] * (alts.data is not None)
    return " or ".join(parts)


def compare(snapshot: Shape, current: Shape, path: str = "") -> list[str]:
    """What differs between the snapshot's shape and the current one, one line each (empty: same)."""
    s, c = _alternatives(snapshot), _alternatives(current)
    where = path or "(top level)"
    if "any" in s.atoms:
        return []  # opaque
    problems = []
    if "absent" in c.atoms and "absent" not in s.atoms:
        problems.append(f"- missing key   {where}: missing from some list elements (was {describe(snapshot)})")
    if not s.has_value:
        return problems  # the snapshot never saw a value here: no type to compare with
    changed = [atom for atom in c.atoms - NO_VALUE if atom not in s.atoms]
    changed += [kind for kind, cur, snap in (("object", c.obj, s.obj), ("list", c.lst, s.lst),
                                              ("object with data keys", c.data, s.data))
                if cur is not None and snap is None]
    if changed or "any" in c.atoms:
        problems.append(f"~ type changed  {where}: {describe(snapshot)} -> {describe(current)}")
    if c.obj is not None and s.obj is not None:
        for key in sorted(c.obj.keys() - s.obj.keys(), key=str):
            problems.append(f"+ added key     {_join(path, key)}: {describe(c.obj[key])}")
        for key in sorted(s.obj.keys() - c.obj.keys(), key=str):
            if "absent" not in _alternatives(s.obj[key]).atoms:
                problems.append(f"- missing key   {_join(path, key)}: (was {describe(s.obj[key])})")
        for key in sorted(s.obj.keys() & c.obj.keys(), key=str):
            problems += compare(s.obj[key], c.obj[key], _join(path, key))
    if c.lst and s.lst:
        problems += compare(s.lst[0], c.lst[0], path + "[]")
    if c.data is not None and s.data is not None:
        problems += compare(s.data["*"], c.data["*"], _join(path, "*"))
    return problems


def unchecked(shape: Shape, path: str = "") -> list[str]:
    """Paths where a shape says nothing about the type: only null/absent seen, or only empty lists."""
    alts = _alternatives(shape)
    if "any" in alts.atoms:
        return []
    if not alts.has_value:
        return [path or "(top level)"]
    out = []
    if alts.obj is not None:
        for key, value in alts.obj.items():
            out += unchecked(value, _join(path, key))
    if alts.lst is not None:
        out += unchecked(alts.lst[0], path + "[]") if alts.lst else [path + "[]"]
    if alts.data is not None:
        out += unchecked(alts.data["*"], _join(path, "*"))
    return out


# --------------------------------------------------------------------------------------------------
# The commands, and which of their paths are dicts keyed by data
# --------------------------------------------------------------------------------------------------

RECORD_DATA_KEYS = (
    "config.knobs",  # knob name -> value
    "env.env_vars",  # the variables set in the environment
    "env.models[].parameter_dtypes",  # dtype -> count
    "env.models[].parameter_devices",  # device -> count
    "env.models[].module_types",  # module class name -> count
    "env.forward_state.autocast",  # device type -> dtype
    "trace.ranks[].steps[].sync_calls.by_name",  # sync call name -> figures
    "trace.ranks[].sync_calls.by_name",
    "trace.ranks[].device.temporal.exclusive_us",  # kernel-type combination -> us
    "memory.timeline.series",  # category -> bytes over time (only non-zero categories)
    "memory.snapshot_timeline.series",
    "compile.graph_break_reasons",  # reason -> count
    "distributed.slowest_by_step",  # rank -> share
    "distributed.runtime.batch_cost.heaviest_rank_by_step",  # rank -> share
    "accounting.flops_by_dtype",  # dtype -> FLOPs per step
    "accounting.peak_flops_per_s",  # dtype -> peak FLOP/s
    "probes.op_costs.flops_by_dtype",  # dtype -> FLOPs per step
    "probes.op_costs.peaks.flops_per_s",  # dtype -> peak FLOP/s
    "probes.op_costs.peaks.not_measured",  # dtype or "copy" -> why
)
RECORD_OPAQUE = ("findings[].evidence",)  # per rule: the figures it read (docs/rules.md)


@dataclass(frozen=True)
class Command:
    group: str  # the run that produces the document (see GROUPS)
    how: str  # what runs, in words (for the fixture and failure messages)
    data_keys: tuple[str, ...] = ()
    opaque: tuple[str, ...] = ()


_DIAG = "diagnose --nproc-per-node 2 (2 warm-up, 6 timed, 1 profiled steps) -- (DDP, DataLoader, DistributedSampler)"
COMMANDS: dict[str, Command] = {
    "diagnose": Command("diagnose", f"torchdoctor {_DIAG} --json", RECORD_DATA_KEYS, RECORD_OPAQUE),
    "runs_show": Command("diagnose", f"torchdoctor runs show RUN --json, RUN from `{_DIAG}`",
                         RECORD_DATA_KEYS, RECORD_OPAQUE),
    "report_json": Command("diagnose", f"torchdoctor report RUN -o PATH --format json, RUN from `{_DIAG}`",
                           RECORD_DATA_KEYS, RECORD_OPAQUE),
    "diagnose_trace": Command("trace", "torchdoctor diagnose --trace multirank-sampled/rank-0.json.gz "
                              "--trace multirank-sampled/rank-1.json.gz --json", RECORD_DATA_KEYS, RECORD_OPAQUE),
    "trace_analyze": Command("trace", "torchdoctor trace analyze multirank-sampled/rank-{0,1}.json.gz --top 3 "
                             "--json", ("ranks[].steps[].sync_calls.by_name", "ranks[].sync_calls.by_name",
                                        "ranks[].device.temporal.exclusive_us")),
    "trace_diff": Command("trace", "torchdoctor trace diff a100-ddp2-rank0.json.gz multirank-sampled/rank-0.json.gz "
                          "--json"),
    "lint_json": Command("lint", "torchdoctor lint TDL102.py TDL501.py broken.py notes.txt --format json"),
    "lint_sarif": Command("lint", "torchdoctor lint TDL102.py TDL501.py broken.py notes.txt --format sarif"),
    "bench": Command("bench", "torchdoctor bench --stmt 'x + 1' --stmt 'x * 2' --param N=8,64 (5 rounds) --json",
                     ("variants", "results[].median_s", "results[].samples_s", "results[].verdicts")),
    "infer": Command("infer", "torchdoctor infer --demo --variants inference_mode,export --batch-sizes 2 "
                     "--iters 6 --export-dir DIR --json", ("recommendation.by_batch_size",)),
    "memory": Command("memory", "torchdoctor memory --warmup-steps 2 --memory-budget 1GiB --json -- "
                      "zoo/healthy_mlp.py", RECORD_DATA_KEYS, RECORD_OPAQUE),
    "compile": Command("compile", "torchdoctor compile --warmup-steps 2 --steps 6 --modes default,reduce-overhead "
                       "--backend eager --json -- (an eager script with a graph break and changing shapes)",
                       ("compile.graph_break_reasons",)),
    "runs_compare": Command("compile", "torchdoctor runs compare EAGER COMPILED --json (the compile command's "
                            "two runs)", opaque=("env_diff[].a", "env_diff[].b", "config_diff[].a", "config_diff[].b")),
    "comm": Command("comm", "torchdoctor comm --backend gloo --nproc-per-node 2 --max-bytes 64 --step-factor 8 "
                    "--iters 2 --warmup 1 --json", ("collectives",)),
    "scale": Command("scale", "torchdoctor scale --max-nproc 2 --warmup-steps 2 --steps 3 --json -- "
                     "tests/observe/scripts/ddp_gloo.py",
                     ("sizes[].distributed.slowest_by_step",
                      "sizes[].distributed.runtime.batch_cost.heaviest_rank_by_step")),
    "tune": Command("tune", "torchdoctor tune --knobs zero_grad_set_to_none --max-trials 1 --warmup-steps 2 "
                    "--steps 6 --confirm-max-rounds 3 --json -- (zero_grad(set_to_none=False) of a large "
                    "gradient); the file `run --apply` reads",
                    ("kept", "trials[].knobs", "findings[].tried_on")),
    "load": Command("serve", "torchdoctor load URL --clients 4 --requests 20 --json, URL: torchdoctor serve --demo",
                    ("errors", "batch_sizes")),
    "serve_http": Command("serve", "torchdoctor serve --demo: GET /health and POST /predict (its example), "
                          "as {\"GET /health\": ..., \"POST /predict\": ...}"),
    "load_sweep": Command("sweep", "torchdoctor load --sweep torchdoctor.zoo.demo:model_and_example "
                          "--max-batch-sizes 2 --max-delays-ms 2 --clients 4 --requests 20 --json",
                          ("points[].load.errors", "points[].load.batch_sizes",
                           "recommended.load.errors", "recommended.load.batch_sizes")),
    "watch": Command("watch", "torchdoctor watch --warmup-steps 2 --steps 6 --no-profile --no-memory --json -- "
                     "(a loop with a checkpoint every 30 steps and a leak of 1 MiB a step)",
                     RECORD_DATA_KEYS, RECORD_OPAQUE),
    "watch_ranks": Command("watch_ranks", "torchdoctor watch --nproc-per-node 2 --warmup-steps 2 --steps 6 "
                           "--no-profile --no-memory --no-periodic-profile --json -- (two gloo ranks with an "
                           "all_reduce a step, rank 1 slower in steps 60-99)", RECORD_DATA_KEYS, RECORD_OPAQUE),
    "check": Command("check", "torchdoctor check --demo --json PATH (a caught regression: metrics, location)",
                     ("metrics", "samples_s")),
    "check_baseline": Command("check", "torchdoctor check --baseline base.json --json PATH -- DEMO (after "
                              "--save-baseline base.json: the stored baseline's figures against this tree)",
                              ("metrics", "samples_s")),
    "check_error": Command("check", "torchdoctor check --against no-such-ref-td --json PATH -- DEMO (a ref "
                           "that does not exist: exit 2, the error object)", ("metrics", "samples_s")),
}

# --------------------------------------------------------------------------------------------------
# Running the commands
# --------------------------------------------------------------------------------------------------

FAST_OBSERVE = ["--warmup-steps", "2", "--steps", "6", "--profile-wait", "0", "--profile-warmup", "1",
                "--profile-active", "1"]  # as tests/observe/helpers.py


def _traces() -> Path:
    # As tests/conftest.py: the project's shared/ folder lies beside the checkout.
    shared = Path(os.environ.get("TORCHDOCTOR_SHARED", REPO_ROOT.parent / "shared"))
    path = shared / "fixtures" / "traces"
    if not path.is_dir():
        raise FileNotFoundError(f"shared trace fixtures not found at {path}; set TORCHDOCTOR_SHARED")
    return path


def torchdoctor(*args: Any, cwd: Path, ok: tuple[int, ...] = (0,), timeout: float = 300,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m torchdoctor ARGS` as a user runs it; an unexpected exit status fails with its output."""
    argv = [str(a) for a in args]
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "COLUMNS": "200", **(env or {})})
    if proc.returncode not in ok:
        raise AssertionError(f"`torchdoctor {' '.join(argv)}` exited with {proc.returncode}:\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-4000:]}")
    return proc


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


DIAGNOSE_SCRIPT = '''\
"""DDP (gloo) over padded variable-length sequences from a shuffling DistributedSampler without
`set_epoch`, rank 1's sequences twice as long. Each step also sleeps 50 ms: the observed part then
lasts longer than the system sampler's first interval (0.2 s), so `system.summary` has its figures
(with no sample it is only `{"num_samples": 0}`)."""
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler


def pad(items):
    return torch.nn.utils.rnn.pad_sequence(items, batch_first=True)


dist.init_process_group("gloo")
generator = torch.Generator().manual_seed(0)
lengths = torch.randint(8, 64, (64,), generator=generator).tolist()
if dist.get_rank() == 1:
    lengths = [2 * n for n in lengths]
dataset = [torch.randn(n, 16, generator=generator) for n in lengths]
loader = DataLoader(dataset, batch_size=4, sampler=DistributedSampler(dataset, shuffle=True), collate_fn=pad)
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
try:
    for epoch in range(10):
        for batch in loader:
            optimizer.zero_grad()
            model(batch).mean().backward()
            optimizer.step()
            time.sleep(0.05)
finally:
    dist.destroy_process_group()
'''


def run_diagnose(work: Path) -> dict[str, Any]:
    store, out, script = work / "runs.db", work / "diagnose.json", work / "ddp_sampler.py"
    script.write_text(DIAGNOSE_SCRIPT)
    torchdoctor("diagnose", *FAST_OBSERVE, "--nproc-per-node", "2", "--json", out, "--store", store, "--", script,
                cwd=work)
    record = _load(out)
    torchdoctor("runs", "show", record["run_id"], "--store", store, "--json", work / "show.json", cwd=work)
    torchdoctor("report", record["run_id"], "--store", store, "-o", work / "report.out", "--format", "json", cwd=work)
    return {"diagnose": record, "runs_show": _load(work / "show.json"), "report_json": _load(work / "report.out")}


WATCH_SCRIPT = '''import time
import torch
model = torch.nn.Linear(16, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loader = torch.utils.data.DataLoader(torch.randn(3200, 16), batch_size=16)
kept = []

def save_checkpoint():
    time.sleep(0.2)

for epoch in range(2):
    for step, batch in enumerate(loader, 1):
        optimizer.zero_grad()
        model(batch).mean().backward()
        optimizer.step()
        kept.append(torch.ones(2**18))
        time.sleep(0.002)
        if step % 30 == 0:
            save_checkpoint()
'''


def run_watch(work: Path) -> dict[str, Any]:
    script, out = work / "train.py", work / "watch.json"
    script.write_text(WATCH_SCRIPT)
    torchdoctor("watch", "--warmup-steps", "2", "--steps", "6", "--no-profile", "--no-memory", "--json", out,
                "--store", work / "runs.db", "--", script, cwd=work)
    return {"watch": _load(out)}


WATCH_RANKS_SCRIPT = '''import time
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
model = torch.nn.Linear(16, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(160):
    optimizer.zero_grad()
    model(torch.randn(8, 16)).mean().backward()
    if dist.get_rank() == 1 and 60 <= step < 100:
        time.sleep(0.03)
    time.sleep(0.005)
    for p in model.parameters():
        dist.all_reduce(p.grad)
    optimizer.step()
dist.destroy_process_group()
'''


def run_watch_ranks(work: Path) -> dict[str, Any]:
    script, out = work / "ranks.py", work / "watch.json"
    script.write_text(WATCH_RANKS_SCRIPT)
    torchdoctor("watch", "--nproc-per-node", "2", "--warmup-steps", "2", "--steps", "6", "--no-profile",
                "--no-memory", "--no-periodic-profile", "--json", out, "--store", work / "runs.db", "--", script,
                cwd=work)
    return {"watch_ranks": _load(out)}


def run_trace(work: Path) -> dict[str, Any]:
    traces = _traces()
    pair = [traces / "multirank-sampled" / "rank-0.json.gz", traces / "multirank-sampled" / "rank-1.json.gz"]
    torchdoctor("diagnose", "--trace", pair[0], "--trace", pair[1], "--json", work / "record.json",
                "--store", work / "runs.db", cwd=work)
    torchdoctor("trace", "analyze", *pair, "--top", "3", "--json", work / "analyze.json", cwd=work)
    torchdoctor("trace", "diff", traces / "a100-ddp2-rank0.json.gz", pair[0], "--json", work / "diff.json", cwd=work)
    return {"diagnose_trace": _load(work / "record.json"), "trace_analyze": _load(work / "analyze.json"),
            "trace_diff": _load(work / "diff.json")}


def run_lint(work: Path) -> dict[str, Any]:
    fixtures = TESTS / "lint" / "fixtures"
    for name in ("TDL102.py", "TDL501.py"):  # violations, fixable or not
        shutil.copy(fixtures / name, work / name)
    (work / "broken.py").write_text("def broken(:\n")  # an unreadable file: `errors`
    (work / "notes.txt").write_text("not Python\n")  # a non-Python path given explicitly: `skipped`
    paths = ["TDL102.py", "TDL501.py", "broken.py", "notes.txt"]
    docs = {}
    for fmt in ("json", "sarif"):
        docs[f"lint_{fmt}"] = json.loads(torchdoctor("lint", *paths, "--format", fmt, cwd=work, ok=(1,)).stdout)
    return docs


def run_bench(work: Path) -> dict[str, Any]:
    torchdoctor("bench", "--stmt", "x + 1", "--stmt", "x * 2", "--setup", "x = torch.ones(N)", "--param", "N=8,64",
                "--round-s", "0.005", "--min-rounds", "5", "--max-rounds", "5", "--json", work / "bench.json", cwd=work)
    return {"bench": _load(work / "bench.json")}


def run_infer(work: Path) -> dict[str, Any]:
    torchdoctor("infer", "--demo", "--variants", "inference_mode,export", "--batch-sizes", "2", "--iters", "6",
                "--export-dir", work / "export", "--json", work / "infer.json", cwd=work)
    return {"infer": _load(work / "infer.json")}


def run_memory(work: Path) -> dict[str, Any]:
    torchdoctor("memory", "--warmup-steps", "2", "--memory-budget", "1GiB", "--json", work / "memory.json",
                "--store", work / "runs.db", "--", REPO_ROOT / "src" / "torchdoctor" / "zoo" / "healthy_mlp.py",
                cwd=work)
    return {"memory": _load(work / "memory.json")}


def run_compile(work: Path) -> dict[str, Any]:
    script, store = REPO_ROOT / "tests" / "compile" / "scripts" / "eager_breaks.py", work / "runs.db"
    # default: measured through the compile knob (eager backend: no code generation, quick);
    # reduce-overhead: not applicable on CPU (or measured on a GPU); either way a row of `modes`.
    torchdoctor("compile", "--warmup-steps", "2", "--steps", "6", "--modes", "default,reduce-overhead",
                "--backend", "eager", "--json", work / "compile.json", "--store", store, "--", script, cwd=work)
    result = _load(work / "compile.json")
    torchdoctor("runs", "compare", result["eager_run_id"], result["compiled_run_id"], "--store", store,
                "--json", work / "compare.json", cwd=work)
    return {"compile": result, "runs_compare": _load(work / "compare.json")}


def run_comm(work: Path) -> dict[str, Any]:
    torchdoctor("comm", "--backend", "gloo", "--nproc-per-node", "2", "--max-bytes", "64", "--step-factor", "8",
                "--iters", "2", "--warmup", "1", "--json", work / "comm.json", cwd=work)
    return {"comm": _load(work / "comm.json")}


def run_scale(work: Path) -> dict[str, Any]:
    torchdoctor("scale", "--max-nproc", "2", "--warmup-steps", "2", "--steps", "3", "--json", work / "scale.json",
                "--", TESTS / "observe" / "scripts" / "ddp_gloo.py", cwd=work)
    return {"scale": _load(work / "scale.json")}


TUNE_SCRIPT = '''\
"""Zeroes a large gradient that only the first step uses, every step (`zero_grad(set_to_none=False)`)."""
import torch

torch.manual_seed(0)
x_all, y_all = torch.randn(2048, 16), torch.randn(2048, 1)
model = torch.nn.Linear(16, 1)
table = torch.nn.Parameter(torch.zeros(4_000_000))  # 16 MB, in the loss of the first step only
optimizer = torch.optim.SGD([*model.parameters(), table], lr=1e-3)
for step in range(200):
    i = (step * 32) % 2048
    x, y = x_all[i : i + 32], y_all[i : i + 32]
    optimizer.zero_grad(set_to_none=False)
    loss = torch.nn.functional.mse_loss(model(x), y)
    if step == 0:
        loss = loss + 0.0 * table.sum()
    loss.backward()
    optimizer.step()
'''


def run_tune(work: Path) -> dict[str, Any]:
    # The knob wins by far (no 16 MB memset and SGD update per step), so it is kept run after run
    # and `kept`, `changes` and `diff` (what `run --apply` reads, and the edit) have values.
    script = work / "zero_grad.py"
    script.write_text(TUNE_SCRIPT)
    torchdoctor("tune", "--knobs", "zero_grad_set_to_none", "--max-trials", "1", "--warmup-steps", "2",
                "--steps", "6", "--confirm-max-rounds", "3", "--json", work / "tune.json", "--store", work / "runs.db",
                "--", script, cwd=work)
    return {"tune": _load(work / "tune.json")}


def _post(url: str, body: Any) -> Any:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def run_serve(work: Path) -> dict[str, Any]:
    server = subprocess.Popen([sys.executable, "-m", "torchdoctor", "serve", "--demo", "--port", "0",
                               "--max-batch-size", "4"], cwd=work, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    try:
        url, seen, deadline = None, [], time.monotonic() + 120
        while url is None and time.monotonic() < deadline and server.poll() is None:
            if select.select([server.stdout], [], [], 1)[0]:
                line = server.stdout.readline()
                seen.append(line)
                if "listening on " in line:
                    url = line.split("listening on ", 1)[1].strip()
        if url is None:
            raise AssertionError(f"`torchdoctor serve --demo` did not start (exit {server.poll()}): {seen}")
        with urllib.request.urlopen(url + "/health", timeout=60) as response:
            health = json.load(response)
        http = {"GET /health": health, "POST /predict": _post(url + "/predict", health["example"])}
        torchdoctor("load", url, "--clients", "4", "--requests", "20", "--duration", "10",
                    "--json", work / "load.json", cwd=work)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    return {"load": _load(work / "load.json"), "serve_http": http}


def run_sweep(work: Path) -> dict[str, Any]:
    torchdoctor("load", "--sweep", "torchdoctor.zoo.demo:model_and_example", "--max-batch-sizes", "2",
                "--max-delays-ms", "2", "--clients", "4", "--requests", "20", "--duration", "10",
                "--latency-budget-ms", "60000", "--json", work / "sweep.json", cwd=work)
    return {"load_sweep": _load(work / "sweep.json")}


def run_check(work: Path) -> dict[str, Any]:
    # Exit 1: the demo's slowdown is caught, so the regression's location is in the document too.
    torchdoctor("check", "--demo", "--json", work / "check.json", "--store", work / "runs.db", cwd=work, ok=(1,))
    from torchdoctor.zoo import demo_script

    demo = [demo_script(), "--batch-size", "4"]
    short = ["--warmup-steps", "2", "--steps", "6", "--timed-window", "0", "--min-rounds", "3"]
    torchdoctor("check", "--save-baseline", work / "base.json", *short, "--store", work / "runs.db", "--", *demo,
                cwd=work)
    # Any decision: the same code, but a stored baseline cannot cancel a change in the machine's load
    # since it was saved (docs/check.md), so on a busy machine even a regression is possible here.
    torchdoctor("check", "--baseline", work / "base.json", *short, "--max-rounds", "6", "--no-locate", "--json",
                work / "baseline.json", "--store", work / "runs.db", "--", *demo, cwd=work, ok=(0, 1, 2))
    # A ref that exists nowhere: an error whether the demo's file lies in a git checkout or not.
    torchdoctor("check", "--against", "no-such-ref-td", "--json", work / "error.json", "--store", work / "runs.db",
                "--", *demo, cwd=work, ok=(2,))
    return {"check": _load(work / "check.json"), "check_baseline": _load(work / "baseline.json"),
            "check_error": _load(work / "error.json")}


@dataclass(frozen=True)
class Group:
    run: Callable[[Path], dict[str, Any]]
    slow: bool
    cost: int  # rough seconds on an idle 2-core machine: the longest start first


GROUPS: dict[str, Group] = {
    "diagnose": Group(run_diagnose, slow=True, cost=15),
    "trace": Group(run_trace, slow=False, cost=4),
    "lint": Group(run_lint, slow=False, cost=2),
    "bench": Group(run_bench, slow=False, cost=3),
    "infer": Group(run_infer, slow=True, cost=4),
    "memory": Group(run_memory, slow=True, cost=7),
    "compile": Group(run_compile, slow=True, cost=14),
    "comm": Group(run_comm, slow=True, cost=6),
    "scale": Group(run_scale, slow=True, cost=18),
    "tune": Group(run_tune, slow=True, cost=18),
    "serve": Group(run_serve, slow=True, cost=5),
    "sweep": Group(run_sweep, slow=True, cost=5),
    "check": Group(run_check, slow=True, cost=30),
    "watch": Group(run_watch, slow=True, cost=20),
    "watch_ranks": Group(run_watch_ranks, slow=True, cost=25),
}


class Runs:
    """Runs the command groups in a few threads, each in its own folder under `work`; documents on demand."""

    def __init__(self, work: Path, groups: Iterable[str], workers: int = WORKERS) -> None:
        self._work = work
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="json-schemas")
        self._futures: dict[str, Future[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        for group in sorted(set(groups), key=lambda g: -GROUPS[g].cost):
            self._submit(group)

    def _submit(self, group: str) -> Future[dict[str, Any]]:
        with self._lock:
            if group not in self._futures:
                folder = self._work / group
                folder.mkdir(parents=True, exist_ok=True)
                self._futures[group] = self._pool.submit(GROUPS[group].run, folder)
            return self._futures[group]

    def document(self, command: str) -> Any:
        return self._submit(COMMANDS[command].group).result()[command]

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def snapshot_path(command: str) -> Path:
    return SNAPSHOTS / f"{command}.json"


def snapshot_of(command: str, documents: Iterable[Any]) -> tuple[dict[str, Any], list[str]]:
    """The fixture for `command`: the union of its documents' shapes (from runs of the same
    invocation), and the listed data-keyed/opaque paths that none of them contained."""
    spec = COMMANDS[command]
    matched: set[str] = set()
    shape: Shape = None
    for document in documents:
        one = shape_of(document, spec.data_keys, spec.opaque, matched=matched)
        shape = one if shape is None else merge(shape, one)
    fixture = {"command": command, "how": spec.how, "data_key_paths": list(spec.data_keys),
               "opaque_paths": list(spec.opaque), "unchecked": sorted(unchecked(shape)), "shape": shape}
    return fixture, [p for p in (*spec.data_keys, *spec.opaque) if p not in matched]


def _dumps(value: Any, indent: str = "") -> str:
    """JSON with sorted keys, one line per key, short values on one line (readable diffs)."""
    flat = json.dumps(value, sort_keys=True)
    if len(flat) + len(indent) <= 100 or not isinstance(value, (dict, list)) or not value:
        return flat
    inner = indent + "  "
    if isinstance(value, list):
        return "[\n" + ",\n".join(inner + _dumps(v, inner) for v in value) + "\n" + indent + "]"
    items = [f"{inner}{json.dumps(k)}: {_dumps(value[k], inner)}" for k in sorted(value)]
    return "{\n" + ",\n".join(items) + "\n" + indent + "}"


def write_snapshot(fixture: dict[str, Any]) -> Path:
    path = snapshot_path(fixture["command"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_dumps(fixture) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------------


def _groups_of(item: pytest.Item) -> set[str]:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "command" in callspec.params:
        return {COMMANDS[callspec.params["command"]].group}
    return set(getattr(getattr(item, "function", None), "json_groups", ()))


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Starts, at once, every command group that the selected tests of this module need."""
    needed = set()
    for item in request.session.items:
        if getattr(item, "module", None) is sys.modules[__name__]:
            needed |= _groups_of(item)
    started = Runs(tmp_path_factory.mktemp("json-schemas"), needed)
    yield started
    started.close()


def _command_params() -> list[Any]:
    return [pytest.param(name, marks=[pytest.mark.slow] if GROUPS[spec.group].slow else [], id=name)
            for name, spec in COMMANDS.items()]


@pytest.mark.timeout(900)  # the groups run side by side: a test may wait for others' runs
@pytest.mark.parametrize("command", _command_params())
def test_json_keeps_its_schema(command: str, runs: Runs) -> None:
    path = snapshot_path(command)
    assert path.is_file(), f"no snapshot {path.relative_to(REPO_ROOT)}: make it with `{REGENERATE} {command}`"
    fixture = json.loads(path.read_text(encoding="utf-8"))
    spec = COMMANDS[command]
    assert (fixture["how"], fixture["data_key_paths"], fixture["opaque_paths"]) == (
        spec.how, list(spec.data_keys), list(spec.opaque)), (
        f"the invocation or the data-keyed/opaque paths of `{command}` changed in this module since its "
        f"snapshot was taken: `{REGENERATE} {command}`")
    current = shape_of(runs.document(command), spec.data_keys, spec.opaque)
    problems = compare(fixture["shape"], current)
    assert not problems, (
        f"the JSON of `{command}` ({spec.how}) no longer has the schema in "
        f"{path.relative_to(REPO_ROOT)}:\n  " + "\n  ".join(problems) +
        f"\nIf the change is deliberate and documented (docs/*.md, schema_version), regenerate with "
        f"`{REGENERATE} {command}`.")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_run_apply_reads_the_tune_result(runs: Runs, tmp_path: Path) -> None:
    result = tmp_path / "tune.json"
    result.write_text(json.dumps(runs.document("tune")))
    script = tmp_path / "hello.py"
    script.write_text("import sys\nprint('ran with', sys.argv[1:])\n")
    # The result was made for the tuned script: applying it to another one needs --force.
    proc = torchdoctor("run", "--apply", result, "--force", "--", script, "--flag", cwd=tmp_path, timeout=120)
    assert "ran with ['--flag']" in proc.stdout and "applied anyway (--force)" in proc.stderr


test_run_apply_reads_the_tune_result.json_groups = ("tune",)  # type: ignore[attr-defined]


def test_every_command_has_its_snapshot_and_no_other_snapshot_is_left() -> None:
    assert sorted(p.stem for p in SNAPSHOTS.glob("*.json")) == sorted(COMMANDS)


def test_shapes_number_ints_and_floats_alike_and_normalise_data_keys() -> None:
    doc = {"n": 1, "x": 0.5, "ok": True, "s": "a", "none": None, "rows": [{"a": 1}, {"a": 2.5, "b": "x"}],
           "empty": [], "by_op": {"aten::mm": {"us": 1}, "aten::add": {"us": 2.0}}}
    shape = shape_of(doc, data_keys=["by_op"])
    assert shape == {"n": "number", "x": "number", "ok": "bool", "s": "string", "none": "null",
                     "rows": [{"a": "number", "b": "absent|string"}], "empty": [], "by_op": {"*": {"us": "number"}}}
    assert shape_of({"by_op": {"aten::bmm": {"us": 3}}}, data_keys=["by_op"]) == {"by_op": {"*": {"us": "number"}}}
    assert merge("number", "null") == "null|number"
    assert merge({"a": "number"}, "null") == {"oneOf": ["null", {"a": "number"}]}
    assert unchecked(shape) == ["none", "empty[]"]


def test_the_comparison_reports_missing_and_added_keys_and_changed_types() -> None:
    snapshot = shape_of({"a": 1, "b": "x", "c": {"d": [1.0]}, "e": None, "rows": [{"k": 1}]})
    assert compare(snapshot, snapshot) == []
    # null where the snapshot has a value, and a value where it only saw null, are allowed
    assert compare(snapshot, shape_of({"a": None, "b": "y", "c": {"d": []}, "e": 3, "rows": []})) == []
    problems = compare(snapshot, shape_of({"a": "1", "c": {"d": [True], "f": 0}, "e": None, "rows": [{"k": 1}, {}],
                                           "g": []}))  # fmt: skip
    assert problems == [
        "+ added key     g: list",
        "- missing key   b: (was string)",
        "~ type changed  a: number -> string",
        "+ added key     c.f: number",
        "~ type changed  c.d[]: number -> bool",
        "- missing key   rows[].k: missing from some list elements (was number)",
    ]
