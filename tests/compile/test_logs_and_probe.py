"""Parsing Dynamo's log texts, and the capability probes."""

from __future__ import annotations

from torchdoctor.compile import logs, probe


def test_a_graph_break_record_gives_file_line_and_the_first_reason_line():
    message = ("Graph break in user code at /x/train.py:42\nGraph Break Reason: Encountered graph break when "
               "attempting to trace CALL\n\nUnsupported Tensor.item() call\n  Explanation: ...")
    found = logs.parse_graph_break(message)
    assert (found.filename, found.lineno) == ("/x/train.py", 42)
    assert found.reason == "Unsupported Tensor.item() call"  # the specific line, not the generic header


def test_a_deduplicated_graph_break_record_is_still_read():
    found = logs.parse_graph_break("Graph break (user stack suppressed due to duplicate graph break) in user "
                                   "code at /x/a.py:7\nGraph Break Reason: r")
    assert found.lineno == 7


def test_the_recompile_limit_warning_is_recognised():
    assert logs.parse_limit("torch._dynamo hit config.recompile_limit (8)\n function: 'f'") == ("recompile_limit", 8)
    assert logs.parse_limit("something else") is None


def test_probes_pass_on_this_torch_and_name_the_version_when_an_api_is_missing():
    assert probe.compilation_metrics_support() is None and probe.logging_support() is None
    assert probe._probe("x", lambda: (_ for _ in ()).throw(AttributeError("gone"))) == \
        f"x unavailable on torch {probe.torch_version()}"


def test_explain_names_each_break_with_the_users_line():
    import torch

    from torchdoctor.compile.explain import explain

    def fn(x: torch.Tensor) -> torch.Tensor:
        y = x.relu()
        print("logged")  # the break
        return y * 2

    result = explain(fn, torch.randn(3))
    assert result["graph_count"] == 2 and result["graph_break_count"] == 1
    (brk,) = result["breaks"]
    assert brk["lineno"] == fn.__code__.co_firstlineno + 2
    assert brk["reason"] == "Failed to trace builtin operator"
