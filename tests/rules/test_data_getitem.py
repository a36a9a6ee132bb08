"""TD-DATA-012 (rules/data_getitem.py) on synthetic probe values: what the script's dataset code
does while the step waits for its batch."""

from __future__ import annotations

from tests.rules.test_host_calls import _call, _only, _record


def _loading(calls: list[dict], *, loading_s: float, wait_s: float, batch: int = 32):
    """A Record of 100 ms steps that wait `wait_s` each for data, whose profiled step of 100 ms spent
    `loading_s` in the script's dataset code, which made `calls`."""
    record = _record([{**c, "in_loading": True} for c in calls], batch=batch)
    for step in record.steps:
        object.__setattr__(step, "data_wait_s", wait_s)
    record.probes["op_costs"]["script_calls"]["loading_s"] = loading_s
    return record


def test_a_file_read_for_every_sample_is_named_with_its_fix_to_open_it_once():
    calls = [_call("torch.from_numpy", "data.py:20 (__getitem__)", 32, 0.002),
             _call("numpy.lib._npyio_impl.load", "data.py:20 (__getitem__)", 32, 0.05)]
    finding = _only(_loading(calls, loading_s=0.06, wait_s=0.08), "TD-DATA-012")
    assert finding.upside == 0.6  # the dataset code's 60 ms of the profiled step, within the 80% wait
    assert finding.evidence["reads_file"] and "numpy.lib._npyio_impl.load() 1 time(s) a sample" in finding.title
    assert "mmap_mode" in finding.fix.code


def test_python_preprocessing_per_sample_is_named_by_its_longest_calls_and_capped_by_the_wait():
    calls = [_call("sub", "data.py:30 (tokenize)", 32, 0.01), _call("dict.get", "data.py:31 (<listcomp>)", 1280, 0.02),
             _call("tensor", "data.py:32 (tokenize)", 32, 0.005)]
    finding = _only(_loading(calls, loading_s=0.05, wait_s=0.03), "TD-DATA-012")
    assert finding.upside == 0.3 and not finding.evidence["reads_file"]
    assert [c["callee"] for c in finding.evidence["calls"]] == ["dict.get", "sub", "tensor"]
    assert "tokenise the whole corpus once" in finding.fix.text


def test_cheap_dataset_code_or_no_wait_for_data_raises_nothing():
    calls = [_call("numpy.lib._npyio_impl.load", "data.py:20 (__getitem__)", 32, 0.05)]
    assert _only(_loading(calls, loading_s=0.05, wait_s=0.005), "TD-DATA-012") is None  # workers keep up
    assert _only(_loading(calls, loading_s=0.005, wait_s=0.08), "TD-DATA-012") is None  # the wait is elsewhere


def test_a_tensors_method_named_like_a_file_read_is_not_one():
    from torchdoctor.rules.data_getitem import reads_file

    assert reads_file("open") and reads_file("torch.serialization.load") and reads_file("PIL.Image.open")
    assert not reads_file("torch.nn.modules.module.load_state_dict") and not reads_file("Tensor.load")
