"""The analyse stage: fill a Record's analysis sections from its artefacts and its script.

Each analyser is a pure function of its input (trace files, source files) owned by its package;
this module only decides which run on a given Record and records, as a warning, an analysis that
could not run, so the rest of the report still renders.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from torchdoctor.errors import TorchDoctorError
from torchdoctor.record import Record


def analyse_record(record: Record, *, lint: bool = True) -> Record:
    """A new Record with `trace`, `distributed` and `lint` filled where their inputs exist."""
    record = replace(record, warnings=list(record.warnings))
    traces = [t for t in record.artifacts.get("traces", []) if Path(t).exists()]
    if traces:
        from torchdoctor.trace import analyse_traces

        try:
            record.trace = analyse_traces(traces).to_dict()
        except TorchDoctorError as exc:
            record.trace = None  # an analysis of other files than these must not stand in for theirs
            record.warnings.append(f"trace analysis skipped: {exc}")
    if record.ranks:
        from torchdoctor.distributed.analysis import rank_analysis
        from torchdoctor.distributed.section import DistributedSection

        record.distributed = rank_analysis(record.ranks)
        if record.distributed is not None:
            record.warnings.extend(DistributedSection.from_dict(record.distributed).warnings)
    if lint and record.script and Path(record.script).exists():
        from torchdoctor.lint import lint_script_with_local_imports

        record.lint = lint_script_with_local_imports(Path(record.script)).to_dict()
    return record

