"""The whole run's terminal output while the script runs: the live panel (80 columns, untrusted
text shown as text) and the plain progress line of a pipe; after it, the periodic profiler
windows' operators; a torchrun job's goodput by rank and its stragglers."""

from __future__ import annotations

import io

from rich.console import Console

from torchdoctor.goodput.live import LiveView
from torchdoctor.goodput.section import OpTime, ProfileWindow, RankRun, Straggler, WholeRun
from torchdoctor.report.watch import live_panel, progress_line, render_whole_run

VIEW = LiveView(elapsed_s=754.0, steps=48210, steps_per_s=66.8, samples_per_s=2137.6, step_s=0.0149,
                memory_bytes=1.2 * 2**30, goodput_fraction=0.81, epoch=3, epoch_step=120, epoch_length=1563,
                epoch_eta_s=21.5, last_badput="step 48000: save_checkpoint (train.py:212), 11800 ms")


def _console() -> Console:
    return Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None)


def test_the_live_panel_shows_the_run_so_far_in_80_columns():
    console = _console()
    console.print(live_panel(VIEW))
    out = console.file.getvalue()
    for text in ("48210", "66.8", "2138", "epoch", "3: step 120/1563, ends in 21.500 s", "1.20 GiB", "81.0%",
                 "save_checkpoint (train.py:212)"):
        assert text in out, text
    assert all(len(line) <= 80 for line in out.splitlines())


def test_untrusted_text_in_the_panel_is_shown_as_text():
    console = _console()
    hostile = LiveView(**{**{f: getattr(VIEW, f) for f in VIEW.__slots__},
                          "last_badput": "step 3: [bold red]x[/] (\x1b[2Jtrain.py:1)"})
    console.print(live_panel(hostile))
    out = console.file.getvalue()
    assert "[bold red]x[/]" in out and "\x1b[2J" not in out


def test_a_pipe_gets_one_plain_line_with_the_same_figures():
    line = progress_line(VIEW)
    assert line.startswith("torchdoctor watch: 12.6 min, 48210 steps, 66.8 steps/s, 2138 samples/s, ")
    assert "goodput so far 81.0%" in line and "last badput" not in line


def test_the_first_and_the_last_profiler_windows_operators_are_printed():
    def window(t_s: float, step: int, share: float) -> ProfileWindow:
        return ProfileWindow(t_s, step, step + 6, 5, "device", 0.1,
                             [OpTime("aten::mm", share * 0.1, share), OpTime("[red]aten::cat", 0.01, 0.1)])

    run = WholeRun(wall_s=100.0, ended="script_finished", steps=1000, step_s=0.01, goodput_s=90.0, parts=[],
                   trends=[], profiles=[window(10.0, 100, 0.6), window(50.0, 500, 0.5), window(90.0, 900, 0.2)],
                   profiles_seen=7)
    console = _console()
    render_whole_run(run, console)
    out = console.file.getvalue()
    assert "periodic profiler windows: 7, 3 kept (share of device self time)" in out
    assert "step 100: aten::mm 60.0%, [red]aten::cat 10.0%" in out and "step 900: aten::mm 20.0%" in out
    assert "step 500" not in out


def test_a_torchrun_job_prints_each_ranks_goodput_and_each_straggler_in_80_columns():
    ranks = [RankRun(rank=r, wall_s=100.0, ended="\x1b[2J[red]x[/]" if r else "script_finished", steps=3000,
                     step_s=0.02, goodput_s=60.0 - 10 * r) for r in (0, 1)]
    late = Straggler(rank=1, first_step=1200, last_step=1499, start_s=31.5, end_s=43.5, step_s=0.04,
                     others_step_s=0.0125, lost_s=8.25)
    console = _console()
    render_whole_run(WholeRun(wall_s=100.0, ended="script_finished", steps=3000, step_s=0.02, goodput_s=60.0,
                              parts=[], trends=[], ranks=ranks, stragglers=[late]), console)
    out = console.file.getvalue()
    assert "goodput by rank (the table above is rank 0's)" in out and "50.000 s  50.0%" in out
    assert "[red]x[/]" in out and "\x1b[2J" not in out
    assert ("straggler: rank 1, steps 1200-1499 (at 31.500 s to 43.500 s): 40.00 ms a step, 3.2x the others' "
            "12.50 ms; 8.250 s of the run (8.2%)") in " ".join(out.split())
    assert all(len(line) <= 80 for line in out.splitlines())
