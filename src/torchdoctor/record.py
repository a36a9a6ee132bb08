"""The Record: everything one observation of a script (or one set of traces) produced, as a value.

A Record is plain data. `observe` creates it; analysers, rules, the store, the tuner and every
renderer take it (or part of it) and return new values, never reaching back into a live process.
It is JSON-serialisable; `schema_version` says which layout a saved Record has, and older layouts
go through one explicit upgrade step per version in :data:`_UPGRADES`.

Contract of the public JSON (documented in docs/record-schema.md): keys are only added within a
schema version; renaming or removing a key, or changing its meaning, bumps `SCHEMA_VERSION`.

A Record file may come from someone else, so reading one is bounded (nesting within
:data:`RECORD_LIMITS`, checked on the bytes before parsing) and every field is checked against its
annotation before a dataclass is built (torchdoctor.jsonfields): a wrong type is a RecordFormatError naming the field,
never a traceback later in a renderer.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson

from torchdoctor.errors import RecordFormatError
from torchdoctor.finding import Finding, Fix
from torchdoctor.inputs import read_capped
from torchdoctor.jsonfields import checked_fields
from torchdoctor.jsonguard import JsonBoundError, JsonLimits, loads_bounded
from torchdoctor.outputs import dumps_json, write_atomic

SCHEMA_VERSION = 2
#: Records that torchdoctor writes nest 9 deep at most (a trace section's top operators); 64
#: leaves room for new sections and keeps every reader (renderers, HTML) far from Python's
#: recursion limit. A million objects and lists is past any Record under MAX_RECORD_BYTES that
#: torchdoctor writes, and keeps the parsed Record within about 100 MB.
RECORD_LIMITS = JsonLimits(max_depth=64, max_containers=1_000_000)
#: A Record is a few megabytes at most (its steps and findings); a larger file is not one and is
#: not read whole.
MAX_RECORD_BYTES = 64 * 1024 * 1024

#: How a step boundary was detected, in order of preference.
STEP_DETECTIONS = ("marker", "optimizer", "backward", "forward")

#: Why the observed script stopped.
EXIT_REASONS = (
    "completed",  # every window was measured and torchdoctor stopped the script
    "script_finished",  # the script returned on its own (possibly before the windows completed)
    "script_error",  # the script raised; its traceback is in `traceback`
    "sys_exit",  # the script called sys.exit / raised SystemExit
    "os_exit",  # the script called os._exit
    "interrupted",  # Ctrl-C, or SIGTERM/SIGHUP passed on by torchdoctor (`signal` says which)
    "timeout",  # the --timeout expired and torchdoctor stopped the script
    "no_steps",  # the script never reached a step
    "killed",  # the process died from a signal (`signal`) or never reported back
    "setup_error",  # torchdoctor could not set up the observation (e.g. a knob failed to apply)
)


@dataclass(slots=True)
class StepSample:
    """One measured step of the timing window. Times are host wall-clock seconds."""

    index: int
    wall_s: float
    data_wait_s: float = 0.0
    data_wait_cpu_s: float | None = None  # main thread's CPU time inside those waits; None in old Records
    forward_s: float = 0.0
    backward_s: float = 0.0
    optimizer_s: float = 0.0
    batch_size: int | None = None
    loss: float | None = None
    hooks_s: float | None = None  # torchdoctor's hooks' own time in the step, left out of wall_s; None in old Records


@dataclass(slots=True)
class Summary:
    """Robust figures over the timing window; fractions are of the summed step wall time."""

    num_steps: int = 0
    step_s: float | None = None  # median step wall time
    step_s_p10: float | None = None
    step_s_p90: float | None = None
    window_s: float | None = None  # window wall time, device synchronised at both edges
    samples_per_s: float | None = None
    data_wait_fraction: float | None = None
    forward_fraction: float | None = None
    backward_fraction: float | None = None
    optimizer_fraction: float | None = None
    other_fraction: float | None = None


@dataclass(slots=True)
class ExitInfo:
    """How the observed script ended; `status` is the exit code torchdoctor itself returns."""

    status: int = 0
    reason: str = "completed"
    message: str = ""
    traceback: str | None = None
    signal: str | None = None  # the signal that stopped or ended the script (SIGINT, SIGKILL, ...), if one did


@dataclass(slots=True)
class _Artifacts:
    """The keys of `Record.artifacts` that torchdoctor reads, checked on load (others are kept)."""

    traces: list[str] = field(default_factory=list)


def new_run_id() -> str:
    """A sortable, unique run id: local time to the second, then six random hex digits."""
    return _dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def _now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass(slots=True)
class Record:
    """One observation. Optional analysis sections are None until their analyser ran."""

    script: str | None = None
    argv: list[str] = field(default_factory=list)
    cwd: str = ""
    kind: str = "script"  # "script" (a run was observed) or "traces" (trace files only)
    run_id: str = field(default_factory=new_run_id)
    created_at: str = field(default_factory=_now_iso)
    schema_version: int = SCHEMA_VERSION
    config: dict[str, Any] = field(default_factory=dict)
    exit: ExitInfo = field(default_factory=ExitInfo)
    step_detection: str | None = None
    steps: list[StepSample] = field(default_factory=list)
    summary: Summary = field(default_factory=Summary)
    env: dict[str, Any] = field(default_factory=dict)
    system: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, Any] = field(default_factory=dict)
    ranks: list[dict[str, Any]] = field(default_factory=list)
    trace: dict[str, Any] | None = None
    memory: dict[str, Any] | None = None
    compile: dict[str, Any] | None = None
    # each in-run probe's value by its name (observe/probes/), only those that measured; read through
    # torchdoctor.probe_values
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    lint: dict[str, Any] | None = None
    distributed: dict[str, Any] | None = None  # torchdoctor.distributed.analysis.rank_analysis
    accounting: dict[str, Any] | None = None  # the speed-of-light accounting (torchdoctor.accounting)
    whole_run: dict[str, Any] | None = None  # `torchdoctor watch`: torchdoctor.goodput.WholeRun
    findings: list[Finding] = field(default_factory=list)
    # what changes how every figure reads (a cut trace, a busy machine): torchdoctor.analyse.caveats
    caveats: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    # -- serialisation -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON shape as Python values; each finding as `Finding.to_dict` writes it."""
        data = dataclasses.asdict(dataclasses.replace(self, findings=[]))
        data["findings"] = [f.to_dict() for f in self.findings]
        return data

    def to_json(self, *, indent: bool = False) -> bytes:
        option = orjson.OPT_SERIALIZE_NUMPY | (orjson.OPT_INDENT_2 if indent else 0)
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # the others serialise as they are
        fields["findings"] = [f.to_dict() for f in self.findings]
        return dumps_json(fields, option=option, default=_json_default)

    def save(self, path: str | Path, *, what: str = "the Record") -> Path:
        """Write the Record's JSON to `path`, whole or not at all; OutputError naming `what`."""
        return write_atomic(path, self.to_json(indent=True), what=what)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        """The Record of a (saved) dict; RecordFormatError if a field has the wrong type."""
        data = upgrade(dict(data))
        kwargs = checked_fields(cls, data, "")
        kwargs["exit"] = ExitInfo(**checked_fields(ExitInfo, data.get("exit") or {}, "exit"))
        kwargs["summary"] = Summary(**checked_fields(Summary, data.get("summary") or {}, "summary"))
        checked_fields(_Artifacts, data.get("artifacts") or {}, "artifacts")
        steps = data.get("steps") or []
        kwargs["steps"] = [StepSample(**checked_fields(StepSample, s, f"steps[{i}]")) for i, s in enumerate(steps)]
        kwargs["findings"] = [_finding(f, f"findings[{i}]") for i, f in enumerate(data.get("findings") or [])]
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: bytes | str) -> Record:
        try:
            data = loads_bounded(text.encode() if isinstance(text, str) else text, RECORD_LIMITS)
        except JsonBoundError as exc:
            raise RecordFormatError(f"not a torchdoctor Record (refused: {exc})") from None
        except orjson.JSONDecodeError as exc:
            raise RecordFormatError(f"not a torchdoctor Record (invalid JSON: {exc})") from None
        if not isinstance(data, dict) or "schema_version" not in data:
            raise RecordFormatError("not a torchdoctor Record: no 'schema_version' key")
        return cls.from_dict(data)

    @classmethod
    def load(cls, path: str | Path) -> Record:
        try:
            return cls.from_json(read_capped(path, MAX_RECORD_BYTES))
        except OSError as exc:
            raise RecordFormatError(f"cannot read Record {path}: {exc.strerror}") from None


def _finding(data: Any, where: str) -> Finding:
    """The Finding of a saved finding, its fields and its fix's checked as a Record's are."""
    checked = checked_fields(Finding, data, where)
    return Finding.from_dict({**checked, "fix": checked_fields(Fix, checked["fix"], f"{where}.fix")})


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if dataclasses.is_dataclass(obj):
        return dataclasses.asdict(obj)
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} in a Record")


#: Schema 1's field of each probe, and the probe's name in schema 2's `probes`.
_SCHEMA_1_PROBE_FIELDS = {"threads_probe": "threads", "anomaly_probe": "anomaly",
                          "compile_probe": "compile_speed", "handoff_probe": "handoff"}


def _probes_into_one_mapping(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 -> 2: the four probe fields (null when not probed) become `probes`' entries."""
    kept = {key: value for key, value in data.items() if key not in _SCHEMA_1_PROBE_FIELDS}
    probes = {name: data[old] for old, name in _SCHEMA_1_PROBE_FIELDS.items() if data.get(old) is not None}
    return {**kept, "probes": probes}


#: Upgrade steps: _UPGRADES[n] turns a schema-n dict into a schema-(n+1) dict.
_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _probes_into_one_mapping}


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a saved Record's dict to the current schema, one version at a time."""
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RecordFormatError(f"Record has an invalid schema_version: {version!r}")
    if version > SCHEMA_VERSION:
        raise RecordFormatError(
            f"Record has schema_version {version}, newer than this torchdoctor understands "
            f"({SCHEMA_VERSION}); upgrade torchdoctor to read it"
        )
    while version < SCHEMA_VERSION:
        data = _UPGRADES[version](data)
        version += 1
        data["schema_version"] = version
    return data


@dataclass(frozen=True, slots=True)
class RunRow:
    """The searchable columns of a stored Record: one line of `runs list`."""

    run_id: str
    created_at: str
    kind: str
    script: str | None
    argv: list[str]
    exit_status: int
    exit_reason: str
    step_s: float | None
    samples_per_s: float | None
    tag: str | None
    damaged: str | None = None
    """Why the stored row cannot be read as a run (a column of the wrong type), None when it can;
    a damaged row keeps what could be read, its other columns as text."""
