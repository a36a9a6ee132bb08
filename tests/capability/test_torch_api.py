"""The capability table's torch versions: what each API needs, what a Record or a trace's dialect
says about the torch that recorded it, and the sentence advice carries where it may lack one."""

from __future__ import annotations

import pytest

from torchdoctor.capability import API, TorchVersion, parse_version, requirement, supports


@pytest.mark.parametrize(("text", "version"), [("2.5.1+cu121", (2, 5)), ("1.9.0a0+gitabc", (1, 9)),
                                               ("2.11.0", (2, 11)), ("nightly", None), (None, None)])
def test_versions_parse_to_major_and_minor(text: str | None, version: tuple[int, int] | None) -> None:
    assert parse_version(text) == version


def test_each_api_names_the_version_that_first_has_it() -> None:
    assert {name: needed for name, (needed, _) in API.items()} == {
        "compile": (2, 0), "autocast": (1, 10), "cuda_amp": (1, 6), "amp_grad_scaler": (2, 3),
        "float32_matmul_precision": (1, 12), "fsdp": (1, 11), "fully_shard": (2, 6), "async_save": (2, 4)}


def test_an_exact_version_decides() -> None:
    assert supports("compile", TorchVersion.exact("2.0.1")) is True
    assert supports("compile", TorchVersion.exact("1.13.1")) is False
    assert supports("compile", TorchVersion.exact("2.10.0")) is True  # 2.10 > 2.9, not "2.1"


@pytest.mark.parametrize(("categories", "step", "text"), [
    ("legacy", "operator", "1.9 or earlier"), ("current", "operator", "1.10 to 1.12"),
    ("current", "annotation", "1.13 or later"), ("unknown", "none", "not known")])
def test_a_traces_dialect_bounds_its_torch(categories: str, step: str, text: str) -> None:
    assert TorchVersion.of_dialect(categories, step).text == text


def test_a_bound_that_does_not_decide_is_none() -> None:
    later = TorchVersion.of_dialect("current", "annotation")
    assert supports("compile", later) is None and supports("autocast", later) is True


def test_advice_names_the_version_it_needs_and_the_one_that_recorded_the_run() -> None:
    legacy = TorchVersion.of_dialect("legacy", "operator")
    assert requirement("compile", legacy) == ("torch.compile needs torch >= 2.0; "
                                              "this run was recorded with torch 1.9 or earlier")
    assert requirement("compile", TorchVersion.exact("1.9.0")).endswith("recorded with torch 1.9")
    assert "is not known" in requirement("async_save", TorchVersion())
    assert requirement("compile", TorchVersion.exact("2.4.0")) == ""
