"""The load other processes put on the machine during a tune's runs, and the kept knobs whose
effect depends on it (threads, workers): reported with that load, no permanent edit offered."""

from __future__ import annotations

from torchdoctor.record import Record
from torchdoctor.tune.load import decided_under_load, load_notes, load_seen
from torchdoctor.tune.trial import KEPT, Run, Trial


def _run(machine: float, own: float) -> Run:
    record = Record(system={"summary": {"machine_cpu_percent_mean": machine, "process_cpu_percent_mean": own}},
                    env={"cpu": {"logical_cores": 2}})
    return Run(knobs={}, role="candidate", record=record)


def test_other_processes_load_is_the_machines_cpu_less_the_scripts_own_in_cores() -> None:
    load = load_seen([_run(machine=100.0, own=50.0), _run(machine=90.0, own=40.0), Run(knobs={}, role="baseline")])
    assert load.other_cores == 1.45 and load.cores == 2 and load.runs == 2 and load.loaded
    assert load.text() == "other processes kept 1.4 of the 2 cores busy (median of 2 runs)"
    assert not load_seen([_run(machine=50.0, own=95.0)]).loaded


def test_a_threads_knob_kept_under_load_is_reported_with_that_load_and_no_permanent_edit() -> None:
    loaded = [_run(machine=100.0, own=40.0)] * 2
    threads = Trial(index=1, knob="threads", value=1, knobs={"threads": 1}, status=KEPT, runs=loaded, reference=loaded)
    optimizer = Trial(index=2, knob="optimizer_impl", value="foreach", knobs={}, status=KEPT, runs=loaded,
                      reference=loaded)
    quiet = Trial(index=3, knob="num_workers", value=2, knobs={}, status=KEPT,
                  runs=[_run(machine=60.0, own=110.0)], reference=[_run(machine=55.0, own=100.0)])
    found = decided_under_load([threads, optimizer, quiet])
    assert list(found) == ["threads"]  # load-independent knobs, and those decided quiet, are left alone
    note = load_notes(found, {"threads": 1})[0]
    assert note["note"].startswith("threads=1 was decided while other processes kept 1.6 of the 2 cores busy")
    assert "no permanent edit is offered; re-confirm it on a quieter machine (tune --knobs threads)" in note["note"]


def test_a_knob_searched_under_load_but_confirmed_on_a_quiet_machine_keeps_its_edit() -> None:
    loaded = [_run(machine=100.0, own=40.0)] * 2  # a neighbour took the cores during the search's trial
    workers = Trial(index=1, knob="num_workers", value=1, knobs={"num_workers": 1}, status=KEPT, runs=loaded,
                    reference=loaded)
    quiet_confirmation = [_run(machine=55.0, own=100.0), _run(machine=60.0, own=110.0)]
    assert decided_under_load([workers], quiet_confirmation) == {}
    busy_confirmation = [_run(machine=100.0, own=50.0)] * 2
    assert list(decided_under_load([workers], busy_confirmation)) == ["num_workers"]
