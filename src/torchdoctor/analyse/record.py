"""The analyse stage: fill a Record's analysis sections from its artefacts and its script.

Each analyser is a pure function of its input (trace files, source files) owned by its package;
this module only decides which run on a given Record and records, as a warning, an analysis that
could not run, so the rest of the report still renders.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from torchdoctor.errors import TorchDoctorError
from torchdoctor.finding import Finding
from torchdoctor.record import Record


def accounting_section(record: Record) -> dict[str, Any] | None:
    """The Record's speed-of-light accounting (torchdoctor.accounting) as its JSON; None when there is
    nothing to account for."""
    from torchdoctor.accounting import account_record

    accounting = account_record(record)
    return accounting.to_dict() if accounting is not None else None


def analyse_record(record: Record, *, lint: bool = True) -> Record:
    """A new Record with `trace`, `distributed`, `accounting` and `lint` filled where their inputs exist."""
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
    record.accounting = accounting_section(record)
    if lint and record.script and Path(record.script).exists():
        from torchdoctor.lint import lint_script_with_local_imports

        record.lint = lint_script_with_local_imports(Path(record.script)).to_dict()
    return record



def explained_section(section: dict[str, Any] | None, findings: list[Finding]) -> dict[str, Any] | None:
    """The accounting's JSON with each slice's `explained_by` set from the diagnosis' findings; an
    absent or unreadable section is left as it is."""
    from torchdoctor.accounting import Accounting
    from torchdoctor.accounting.explain import explained
    from torchdoctor.jsonfields import readable

    accounting = readable(Accounting.from_dict, section)
    return explained(accounting, findings).to_dict() if accounting is not None else section
