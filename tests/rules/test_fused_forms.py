"""The rules on computations written out where torch has one operator or one argument for them
(rules/fused_forms.py), on synthetic probe values: the call and the operators from the same
function of the script that each needs, so that the call alone, or the operators alone, stay
silent."""

from __future__ import annotations

from torchdoctor.record import Record

from tests.rules.test_host_calls import _call, _only, _record

FORWARD = "model.py:27 (forward)"


def _op(name: str, shapes: str, self_s: float, source: str = FORWARD) -> dict:
    return {"name": name, "dtype": "fp32", "shapes": shapes, "count": 1.0, "self_s": self_s, "source": source}


def _with_ops(record: Record, ops: list[dict]) -> Record:
    record.probes["op_costs"]["ops"] = ops
    return record


def test_a_diagonal_matrix_multiplied_every_step_is_advised_to_broadcast():
    calls = [_call("diag", FORWARD, 1, 0.01, in_model=True, ops_s=0.01)]
    ops = [_op("aten::mm", "[128, 1024]x[1024, 1024]", 0.03, "model.py:28 (forward)"),
           _op("aten::diag_embed", "[1024]", 0.01)]
    finding = _only(_with_ops(_record(calls), ops), "TD-COMP-055")
    assert finding.upside == 0.4 and "1024 x 1024" in finding.title and "v[:, None] * " in finding.fix.code


def test_a_diagonal_between_two_products_claims_the_one_product_it_adds():
    calls = [_call("diag", FORWARD, 1, 0.001, in_model=True, ops_s=0.001)]
    whitening = [_op("aten::mm", "[1024, 256]x[256, 256]", 0.04)]  # X @ Q @ diag(w) @ Q.T: three products
    whitening[0]["count"] = 3.0
    finding = _only(_with_ops(_record(calls), whitening), "TD-COMP-055")
    assert round(finding.upside, 4) == round(0.04 / 3 / 0.1, 4) and finding.evidence["diagonals_per_step"] == 1


def test_a_diagonal_read_from_a_matrix_or_a_square_product_elsewhere_is_no_diagonal_product():
    calls = [_call("diag", FORWARD, 1, 0.01, in_model=True, ops_s=0.01)]
    rectangular = [_op("aten::mm", "[128, 1024]x[1024, 512]", 0.03)]
    elsewhere = [_op("aten::mm", "[128, 1024]x[1024, 1024]", 0.03, "train.py:40 (main)")]
    assert _only(_with_ops(_record(calls), rectangular), "TD-COMP-055") is None
    assert _only(_with_ops(_record(calls), elsewhere), "TD-COMP-055") is None
    assert _only(_with_ops(_record([]), elsewhere), "TD-COMP-055") is None


ATTENTION_OPS = [_op("aten::bmm", "[32, 256, 16]x[32, 16, 256]", 0.01), _op("aten::div", "[8, 4, 256, 256]x[]", 0.01),
                 _op("aten::_softmax", "[8, 4, 256, 256]", 0.02),
                 _op("aten::bmm", "[32, 256, 256]x[32, 256, 16]", 0.01),
                 _op("aten::addmm", "[192]x[2048, 64]x[64, 192]", 0.02)]


def test_a_softmax_between_two_chained_batched_products_is_attention_written_out():
    calls = [_call("softmax", FORWARD, 2, 0.03, in_model=True, ops_s=0.03)]
    finding = _only(_with_ops(_record(calls), ATTENTION_OPS), "TD-COMP-057")
    assert finding.evidence["scores"] == [256, 256] and finding.upside == 0.3
    assert "scaled_dot_product_attention" in finding.fix.text


def test_a_softmax_without_chained_products_or_beside_a_fused_kernel_is_not_attention_written_out():
    calls = [_call("softmax", FORWARD, 2, 0.03, in_model=True, ops_s=0.03)]
    classifier = [_op("aten::addmm", "[10]x[64, 256]x[256, 10]", 0.02), _op("aten::_softmax", "[64, 10]", 0.01)]
    fused = [*ATTENTION_OPS, _op("aten::_scaled_dot_product_flash_attention_for_cpu", "[8, 4, 256, 16]", 0.02)]
    assert _only(_with_ops(_record(calls), classifier), "TD-COMP-057") is None
    assert _only(_with_ops(_record(calls), fused), "TD-COMP-057") is None


def test_multihead_attention_computing_its_weights_is_advised_need_weights_false():
    call = _call("nn.Module: MultiheadAttention", FORWARD, 2, 0.06, in_model=True, ops_s=0.06)
    weights = [*ATTENTION_OPS, _op("aten::mean", "[8, 4, 256, 256]", 0.005)]
    finding = _only(_with_ops(_record([call]), weights), "TD-COMP-058")
    assert finding.upside == 0.35 and "need_weights=False" in finding.fix.text
    fused = [_op("aten::_scaled_dot_product_flash_attention_for_cpu", "[8, 4, 256, 16]", 0.02),
             _op("aten::addmm", "[192]x[2048, 64]x[64, 192]", 0.02)]
    assert _only(_with_ops(_record([call]), fused), "TD-COMP-058") is None


def test_an_embedding_averaged_over_the_bag_is_an_embedding_bag():
    call = _call("nn.Module: Embedding", "model.py:12 (forward)", 1, 0.03, in_model=True, ops_s=0.03)
    ops = [_op("aten::embedding", "[50000, 64]x[256, 200]", 0.02, "model.py:12 (forward)"),
           _op("aten::mean", "[256, 200, 64]", 0.01, "model.py:12 (forward)")]
    finding = _only(_with_ops(_record([call]), ops), "TD-COMP-059")
    assert finding.upside == 0.3 and 'mode="mean"' in finding.fix.text
    unreduced = ops[:1] + [_op("aten::mean", "[256, 64]", 0.01, "model.py:12 (forward)")]  # a mean of something else
    assert _only(_with_ops(_record([call]), unreduced), "TD-COMP-059") is None


def test_an_unfold_multiplied_by_a_weight_is_a_convolution_and_an_unfold_alone_is_not():
    call = _call("torch.nn.functional.unfold", FORWARD, 2, 0.02, in_model=True, ops_s=0.015)
    product = [_op("aten::matmul", "[32, 27]x[16, 27, 1024]", 0.02)]
    finding = _only(_with_ops(_record([call]), product), "TD-COMP-060")
    assert finding.upside == 0.15 and "F.conv2d" in finding.fix.text
    assert _only(_with_ops(_record([call]), []), "TD-COMP-060") is None


def test_a_parametrized_weight_read_in_a_loop_recomputes_all_but_one_read():
    reads = _call("torch.nn.utils.parametrize.get_parametrized", FORWARD, 40, 0.05, in_model=True, ops_s=0.05)
    finding = _only(_record([reads]), "TD-COMP-061")
    assert finding.evidence["reads_per_forward"] == 40 and round(finding.upside, 4) == 0.4875
    assert "parametrize.cached()" in finding.fix.text
    once = _call("torch.nn.utils.parametrize.get_parametrized", FORWARD, 1, 0.05, in_model=True, ops_s=0.05)
    assert _only(_record([once]), "TD-COMP-061") is None
