"""The `torchdoctor` command: one thin typer app; each command calls the library.

Heavy imports (torch, numpy) happen inside the commands, so `torchdoctor lint --help` is quick.
"""

from __future__ import annotations

import sys

import typer

from torchdoctor.cli import help as _help
from torchdoctor.errors import TorchDoctorError

_help.install()

app = typer.Typer(
    name="torchdoctor",
    help="Measure, locate, optimise and measure again: make PyTorch training and inference fast.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

# Each command module registers itself on `app`; the order here is the order in --help.
from torchdoctor.cli import diagnose as _diagnose  # noqa: E402
from torchdoctor.cli import watch as _watch  # noqa: E402
from torchdoctor.cli import runs as _runs  # noqa: E402
from torchdoctor.cli import trace as _trace  # noqa: E402
from torchdoctor.cli import lint as _lint  # noqa: E402
from torchdoctor.cli import infer as _infer  # noqa: E402
from torchdoctor.cli import serve as _serve  # noqa: E402
from torchdoctor.cli import bench as _bench  # noqa: E402
from torchdoctor.cli import memory as _memory  # noqa: E402
from torchdoctor.cli import compile as _compile  # noqa: E402
from torchdoctor.cli import tune as _tune  # noqa: E402
from torchdoctor.cli import report as _report  # noqa: E402
from torchdoctor.cli import comm as _comm  # noqa: E402
from torchdoctor.cli import scale as _scale  # noqa: E402
from torchdoctor.cli import check as _check  # noqa: E402

_diagnose.register(app)
_watch.register(app)
app.add_typer(_runs.app, name="runs")
app.add_typer(_trace.app, name="trace")
_lint.register(app)
_infer.register(app)
_serve.register(app)
_bench.register(app)
_memory.register(app)
_compile.register(app)
_tune.register(app)
_report.register(app)
_comm.register(app)
_scale.register(app)
_check.register(app)


def main() -> None:
    """Entry point of the console script: user errors print one line, never a traceback."""
    try:
        app()
    except TorchDoctorError as exc:
        from torchdoctor.report.console import print_error

        print_error(str(exc))
        sys.exit(exc.exit_code)
