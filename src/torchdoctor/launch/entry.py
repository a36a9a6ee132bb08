"""The observed child's command line: `python -c LAUNCH SCRIPT ARGS`, the program that runs the
bootstrap (observe.bootstrap) and then the script in its own top frame.

Why `-c` and this program rather than `python -m torchdoctor.observe.bootstrap`: the script's frames
then sit one above where `python SCRIPT` puts them (scriptrun.MainScript), not seven (runpy's two,
the bootstrap's functions). Code that walks the stack pays for every frame: autograd's anomaly mode
formats the stack at every node, and a third-party script that leaves it on ran 13% slower observed
than plain (7.10 ms for 6.29 ms, docs/field.md). A module of its own because the parent builds this
command and must not import the bootstrap (it imports torch).
"""

from __future__ import annotations

from typing import Sequence

#: Set up (`begin`), run the script's code right here, say how it ended, write the results and exit.
LAUNCH = """import sys
from torchdoctor.observe.bootstrap import begin
observed = begin(sys.argv[1:])
try:
    if observed.script is not None:
        exec(observed.script.code, observed.script.namespace)
except BaseException as exc:
    observed.ended(exc)
else:
    observed.ended(None)
finally:
    observed.exit()
"""


def command(python: str, script: str, args: Sequence[str]) -> list[str]:
    """The command line that observes SCRIPT ARGS in a new interpreter `python`."""
    return [python, "-c", LAUNCH, script, *args]
