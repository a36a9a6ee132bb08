"""The ladder on tiny models with real torch.export, ONNX Runtime and torchao."""

from __future__ import annotations

import onnxruntime as ort
import orjson
import pytest
import torch

from torchdoctor.infer import InferConfig, load_model, run_ladder
from torchdoctor.infer.errors import InferConfigError, InputRejectedError

FAST = dict(iters=6, rounds=2, warmup=1)


@pytest.fixture(scope="module")
def classifier_result(tmp_path_factory):
    export_dir = tmp_path_factory.mktemp("artefacts")
    config = InferConfig(variants=("inference_mode", "export", "onnxruntime", "int8_dynamic"),
                         batch_sizes=(1, 4), export_dir=export_dir, **FAST)
    return run_ladder(load_model("tests.infer.models:classifier"), config), export_dir


def test_every_variant_is_measured_at_every_batch_size_and_stays_correct(classifier_result) -> None:
    result, _ = classifier_result
    assert [v.name for v in result.variants] == ["eager", "inference_mode", "export", "onnxruntime", "int8_dynamic"]
    for variant in result.variants:
        assert variant.status == "ok", variant.reason
        assert [m.batch_size for m in variant.measurements] == [1, 4]
        for m in variant.measurements:
            assert m.n_samples == 6 and 0 < m.latency_s_p50 <= m.latency_s_p99
            assert m.accuracy.top1_agreement == 1.0
            assert (m.vs_eager is None) == (variant.name == "eager")
    assert result.variant("int8_dynamic").measurements[1].accuracy.max_abs_error > 0


def test_the_result_is_versioned_json_with_a_recommendation(classifier_result) -> None:
    result, _ = classifier_result
    data = orjson.loads(result.to_json())
    assert data["schema_version"] == 1
    assert data["variants"][2]["measurements"][0]["vs_eager"]["verdict"] in (
        "faster", "slower", "no clear difference")
    assert data["recommendation"]["variant"] in {v.name for v in result.variants}


def test_exported_artefacts_are_written_and_load_again(classifier_result) -> None:
    result, export_dir = classifier_result
    session = ort.InferenceSession(result.variant("onnxruntime").artifact_path)
    tokens = torch.randint(0, 100, (3, 8))
    (logits,) = session.run(None, {session.get_inputs()[0].name: tokens.numpy()})
    assert logits.shape == (3, 4)
    program = torch.export.load(result.variant("export").artifact_path)
    assert program.module()(tokens).shape == (3, 4)
    assert (export_dir / "eager").exists() is False  # eager has no artefact


def test_a_model_that_cannot_be_exported_is_reported_with_the_exporters_reason() -> None:
    config = InferConfig(variants=("export", "onnxruntime", "no_grad"), batch_sizes=(2,), **FAST)
    result = run_ladder(load_model("tests.infer.models:unexportable"), config)
    assert result.variant("export").status == "failed"
    assert "data-dependent" in result.variant("export").reason
    assert result.variant("onnxruntime").status == "failed"
    assert "torch.export" in result.variant("onnxruntime").reason
    assert result.variant("no_grad").status == "ok"


def test_a_variant_outside_tolerance_is_kept_and_marked_diverged() -> None:
    config = InferConfig(variants=("int8_dynamic",), batch_sizes=(4,), tolerance=0.0, **FAST)
    result = run_ladder(load_model("tests.infer.models:classifier"), config)
    int8 = result.variant("int8_dynamic")
    assert int8.status == "diverged" and "exceeds the tolerance 0" in int8.reason
    assert int8.measurements and result.recommendation.variant != "int8_dynamic"


def test_torch_compile_is_measured_and_its_compile_time_counted() -> None:
    config = InferConfig(variants=("compile",), batch_sizes=(4,), **FAST)
    result = run_ladder(load_model("tests.infer.models:classifier"), config)
    compiled = result.variant("compile")
    assert compiled.status == "ok", compiled.reason
    assert compiled.prepare_s > result.variant("eager").prepare_s
    assert compiled.measurements[0].accuracy.max_rel_error < 1e-4


def test_an_example_the_model_rejects_stops_the_run_with_the_models_error() -> None:
    with pytest.raises(InputRejectedError, match="mat1 and mat2 shapes cannot be multiplied"):
        run_ladder(load_model("tests.infer.models:wrong_example"), InferConfig(**FAST))


def test_unknown_variants_and_bad_batch_sizes_are_config_errors() -> None:
    with pytest.raises(InferConfigError, match="unknown variant 'turbo'"):
        InferConfig(variants=("inference_mode", "turbo"))
    with pytest.raises(InferConfigError, match="positive"):
        InferConfig(batch_sizes=(0,))
