"""Re-diagnose a blind corpus's kept Records with this checkout's accounting and rules, no new run.

    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/blind_rescore.py CORPUS KEEP_DIR

CORPUS: a corpus folder (its manifest.json); KEEP_DIR: the `--keep` folder of a
benchmarks/blind_corpus.py run (`NAME.problem.json`, `NAME.healthy.json`). Prints the same table
and summary as blind_corpus.py. What it shows: what a change of the accounting or of the rules
does on the evidence of an earlier run (evidence recorded only from a later change is absent).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import blind_corpus as bc

from torchdoctor.analyse.record import accounting_section
from torchdoctor.record import Record
from torchdoctor.rules import diagnose


def rescored(path: Path) -> bc.Run:
    """The findings of a kept Record diagnosed again, or a not-run row when it is missing."""
    if not path.exists():
        return bc.Run((), 0.0, "not run")
    record = Record.from_dict(json.loads(path.read_text()))
    record.accounting = accounting_section(record)
    return bc.Run(tuple(f.to_dict() for f in diagnose(record).findings), 0.0, None)


def main() -> None:
    corpus, keep = Path(sys.argv[1]), Path(sys.argv[2])
    rows = [bc.score(p, rescored(keep / f"{p['name']}.problem.json"), rescored(keep / f"{p['name']}.healthy.json"))
            for p in bc.load_manifest(corpus, [])]
    print(f"{bc.table(rows)}\n\n{bc.summary(rows)}")


if __name__ == "__main__":
    main()
