"""`python -m torchdoctor.knobs.run SCRIPT [ARGS...]`: run a script as `python SCRIPT ARGS` would,
with the knobs of the environment variable `TORCHDOCTOR_KNOBS` (JSON name -> value) applied and
undone on exit, and nothing measured (`torchdoctor run --apply`, which checked the values and
owns this process: it forwards its stop signals here, and the process ends should it die)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import orjson

from torchdoctor.knobs.order import apply_knobs
from torchdoctor.lifeline import die_with_torchdoctor
from torchdoctor.scriptrun import run_as_main

KNOBS_ENV = "TORCHDOCTOR_KNOBS"


def main(argv: list[str]) -> None:
    if not argv:
        print("usage: python -m torchdoctor.knobs.run SCRIPT [ARGS...]", file=sys.stderr)
        sys.exit(2)
    die_with_torchdoctor(signal.SIGTERM)
    sys.path[0] = str(Path(argv[0]).resolve().parent)
    undo = apply_knobs(orjson.loads(os.environ.get(KNOBS_ENV, "{}")))
    try:
        run_as_main(argv[0], argv)
    finally:
        undo()


if __name__ == "__main__":
    main(sys.argv[1:])
