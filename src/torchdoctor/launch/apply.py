"""Run a script as `python SCRIPT ARGS` would, with the knobs of the environment variable
`TORCHDOCTOR_KNOBS` (JSON name -> value) applied and undone on exit, and nothing measured
(`torchdoctor run --apply`, which checked the values and owns this process: it forwards its stop
signals here, and the process ends should it die). `command(SCRIPT, ARGS)` is the command line
that does it."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Callable

import orjson

from torchdoctor.knobs.order import apply_knobs
from torchdoctor.process.lifeline import die_with_torchdoctor
from torchdoctor.process.scriptrun import MainScript, ScriptDoesNotCompile, enter_main, leave_main

KNOBS_ENV = "TORCHDOCTOR_KNOBS"
#: The script's code runs in this program's own frame, one frame from the top as under `python
#: SCRIPT` (scriptrun.MainScript: code that walks the stack pays as it does plainly).
LAUNCH = """import sys
from torchdoctor.launch.apply import begin
script, undo = begin(sys.argv[1:])
try:
    exec(script.code, script.namespace)
finally:
    undo()
"""


def command(script: str | Path, args: list[str]) -> list[str]:
    """The command that runs SCRIPT ARGS with the knobs of `KNOBS_ENV` applied."""
    return [sys.executable, "-c", LAUNCH, str(script), *args]


def begin(argv: list[str]) -> tuple[MainScript, Callable[[], None]]:
    """Apply the knobs and make the script ready to run; returns it and what undoes both."""
    if not argv:
        print("usage: torchdoctor run --apply RESULT.json -- SCRIPT [ARGS...]", file=sys.stderr)
        sys.exit(2)
    die_with_torchdoctor(signal.SIGTERM)
    sys.path[0] = str(Path(argv[0]).resolve().parent)
    undo_knobs = apply_knobs(orjson.loads(os.environ.get(KNOBS_ENV, "{}")))
    try:
        script = enter_main(argv[0], argv)
    except ScriptDoesNotCompile as exc:  # as Python says it, without our frames
        undo_knobs()
        sys.stderr.write(exc.text)
        sys.exit(1)

    def undo() -> None:
        leave_main(script)
        undo_knobs()

    return script, undo
