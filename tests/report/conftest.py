"""A real diagnosed Record whose script path and trace carry hostile names, for the report tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.observe.helpers import run_diagnose
from torchdoctor.finding import Finding, Fix
from torchdoctor.record import Record

HOSTILE = "</script><img src=x onerror=alert(1)>"
HOSTILE_FILE = "<img src=x onerror=alert(2)>.py"  # a file name cannot hold '/'
SCRIPT = Path(__file__).resolve().parent / "scripts" / "hostile_train.py"


def hostile_finding(upside: float = 0.3, finding_id: str = "TD-TEST-001") -> Finding:
    return Finding(finding_id, "compute", "problem", f"operator {HOSTILE} dominates", upside,
                   {"op": HOSTILE, "share_fraction": 0.61234}, HOSTILE, Fix(HOSTILE, f"x = '{HOSTILE}'\nprint(x)"))


@pytest.fixture(scope="session")
def hostile_record(tmp_path_factory: pytest.TempPathFactory) -> Record:
    """`diagnose` of a script named like an HTML tag whose trace has an annotation named like one,
    plus a finding made of hostile strings (the renderer must escape what rules copy from the Record)."""
    tmp = tmp_path_factory.mktemp("hostile")
    script = tmp / HOSTILE_FILE
    shutil.copy(SCRIPT, script)
    proc, record = run_diagnose(tmp, str(script))
    assert record is not None and record.exit.status == 0, proc.stdout + proc.stderr
    record.findings = [hostile_finding()]
    return record
