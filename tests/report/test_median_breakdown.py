"""The breakdown's per-step figures are one statistic: the median of each part, the median step,
and "other" making up the difference, the figures the data findings quote."""

from __future__ import annotations

from io import StringIO

from rich.console import Console

from torchdoctor.observe.summary import summarise
from torchdoctor.record import Record, StepSample
from torchdoctor.report.console import breakdown_table
from torchdoctor.report.format import fmt_count, median_step_parts


def _record() -> Record:
    # Typical steps wait 80 ms of 100 ms for data; one long step (an epoch start) is mostly forward.
    steps = [StepSample(index=i, wall_s=0.1, data_wait_s=0.08, forward_s=0.01, backward_s=0.005, optimizer_s=0.001)
             for i in range(5)]
    steps.append(StepSample(index=5, wall_s=1.0, data_wait_s=0.02, forward_s=0.9, backward_s=0.005, optimizer_s=0.001))
    record = Record(steps=steps, step_detection="optimizer")
    record.summary = summarise(steps)
    return record


def test_the_table_shows_the_median_of_each_part_over_the_median_step():
    record = _record()
    assert record.summary.data_wait_fraction < 0.3  # the mean share the table used to scale
    medians = median_step_parts(record.steps)
    assert medians["data_wait"] == 0.08 and medians["step"] == 0.1
    assert abs(medians["other"] - (0.1 - 0.08 - 0.01 - 0.005 - 0.001)) < 1e-12
    out = StringIO()
    Console(file=out, width=120, color_system=None).print(breakdown_table(record))
    text = out.getvalue()
    assert "80.0%" in text and "80.00 ms" in text  # what TD-DATA-001's data_wait_ms_median says
    assert "4.00 ms" in text  # other: the median step less the part medians


def test_counts_per_step_are_whole_when_they_are_whole():
    assert (fmt_count(20.0), fmt_count(2.5), fmt_count(1 / 3), fmt_count(None)) == ("20", "2.5", "0.3", "-")


def test_a_table_in_a_narrow_pipe_wraps_long_names_instead_of_cropping_them():
    from torchdoctor.memory import MemoryBreakdown, ModuleMemory
    from torchdoctor.report.memory import _modules

    names = [f"GPT.transformer.h.{i}.attention_block_with_a_long_name" for i in range(3)]
    breakdown = MemoryBreakdown("mem_tracker", "cuda:0", 2**23, modules=[
        ModuleMemory(n, parameter_bytes=2**20, output_bytes=2**10, activation_bytes=2**20, peak_forward_bytes=2**21,
                     peak_backward_bytes=2**22) for n in names])
    out = StringIO()
    Console(file=out, width=80, color_system=None).print(_modules(breakdown))  # what a pipe gets
    text = out.getvalue()
    assert "…" not in text
    column = "".join(line.split("│")[1].strip() for line in text.splitlines() if line.count("│") > 2)
    assert all(n in column for n in names), column
