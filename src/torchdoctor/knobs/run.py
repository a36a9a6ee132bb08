"""Run a script as `python SCRIPT ARGS` would, with the knobs of the environment variable
`TORCHDOCTOR_KNOBS` (JSON name -> value) applied and undone on exit, and nothing measured
(`torchdoctor run --apply`). `command(SCRIPT, ARGS)` is the command line that does it.

It is launched with `python -c` (see LAUNCH), not `python -m torchdoctor.knobs.run`: importing the
`torchdoctor.knobs` package registers its knobs by importing every submodule, this one included,
so `-m` would find the module already imported and runpy would warn on every run."""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

import orjson

from torchdoctor.knobs.order import apply_knobs

KNOBS_ENV = "TORCHDOCTOR_KNOBS"
LAUNCH = "import sys; from torchdoctor.knobs.run import main; main(sys.argv[1:])"


def command(script: str | Path, args: list[str]) -> list[str]:
    """The command that runs SCRIPT ARGS with the knobs of `KNOBS_ENV` applied."""
    return [sys.executable, "-c", LAUNCH, str(script), *args]


def main(argv: list[str]) -> None:
    if not argv:
        print("usage: torchdoctor run --apply RESULT.json -- SCRIPT [ARGS...]", file=sys.stderr)
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
