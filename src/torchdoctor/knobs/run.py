"""`python -m torchdoctor.knobs.run SCRIPT [ARGS...]`: run a script as `python SCRIPT ARGS` would,
with the knobs of the environment variable `TORCHDOCTOR_KNOBS` (JSON name -> value) applied and
undone on exit, and nothing measured (`torchdoctor run --apply`)."""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

import orjson

from torchdoctor.knobs.order import apply_knobs

KNOBS_ENV = "TORCHDOCTOR_KNOBS"


def main(argv: list[str]) -> None:
    if not argv:
        print("usage: python -m torchdoctor.knobs.run SCRIPT [ARGS...]", file=sys.stderr)
        sys.exit(2)
    script = Path(argv[0]).resolve()
    sys.argv = list(argv)
    sys.path[0] = str(script.parent)
    undo = apply_knobs(orjson.loads(os.environ.get(KNOBS_ENV, "{}")))
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        undo()


if __name__ == "__main__":
    main(sys.argv[1:])
