"""The terminal report's caveats (report/console.py): a busy machine's come before every figure."""

from __future__ import annotations

from tests.analyse.test_caveats import loaded_run
from torchdoctor.report.console import TextRenderer


def test_a_busy_machine_is_said_before_the_figures_it_disturbs():
    text = TextRenderer().render(loaded_run(100.0))
    assert text.startswith("Caveats that change how the figures below read (findings are low confidence):")
    assert text.index("other processes used 1.1 of the machine's 2 cores") < text.index("median step")


def test_a_quiet_machine_has_no_caveat():
    assert "Caveats" not in TextRenderer().render(loaded_run(48.0))
