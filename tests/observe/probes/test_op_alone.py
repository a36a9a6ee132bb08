"""Each operator of the profiled steps run alone on the same inputs (observe/probes/op_alone.py):
its arguments rebuilt from the profiler's record of shapes and dtypes, its time from the same
profiler, the script's random stream left as it was."""

from __future__ import annotations

import torch

from torchdoctor.observe.probes.op_alone import alone_seconds, rebuilt_args


def _recorded(run) -> list[dict]:
    """The operator groups of one profiled call of `run`, as the operator-costs probe keeps them."""
    with torch.profiler.profile(record_shapes=True) as prof:
        run()
    return [{"name": e.name(), "inputs": [[list(s), d] for s, d in zip(e.shapes(), e.dtypes())]}
            for e in prof.profiler.kineto_results.events() if e.name().startswith("aten::")]


def test_arguments_are_rebuilt_up_to_the_first_the_record_cannot_rebuild():
    args = rebuilt_args([[4, 8], [], [3]], ["float", "Scalar", "long int"])
    assert [a.shape if isinstance(a, torch.Tensor) else a for a in args] == [(4, 8), 1, (3,)]
    assert args[2].dtype == torch.int64 and not args[2].any()  # zeros: a valid index
    conv = rebuilt_args([[2, 3, 8, 8], [4, 3, 3, 3], [4], [], []], ["float", "float", "float", "ScalarList", "Scalar"])
    assert len(conv) == 3  # stride, padding, ... left to their defaults
    assert rebuilt_args([[], []], ["ScalarList", "Scalar"]) is None  # no tensor to run on


def test_an_operator_is_timed_alone_and_one_that_cannot_be_rebuilt_is_none():
    x, w, b = torch.rand(64, 256), torch.rand(256, 256), torch.rand(256)
    ops = _recorded(lambda: (torch.nn.functional.gelu(x), torch.addmm(b, x, w),
                             torch.nn.functional.max_pool2d(x[None], 2)))
    by_name = {op["name"]: op for op in ops}
    picked = [by_name[n] for n in ("aten::gelu", "aten::addmm", "aten::max_pool2d_with_indices")]
    gelu, addmm, pool = alone_seconds(picked)
    assert gelu is not None and gelu > 0
    assert addmm is not None and addmm > 0  # beta and alpha are keyword-only: dropped, then it runs
    assert pool is None  # its kernel size is an int list the record does not keep


def test_replaying_a_random_operator_leaves_the_scripts_random_stream_as_it_was():
    probabilities = torch.rand(32, 32)
    ops = _recorded(lambda: torch.bernoulli(probabilities))
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    assert alone_seconds([o for o in ops if o["name"] == "aten::bernoulli"])[0] is not None
    assert torch.equal(torch.rand(3), expected)
