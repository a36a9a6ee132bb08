"""Stored baselines: the document, checked when read, kept in a file or a store, within bounds."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

from torchdoctor.check.baseline import (BaselineOrigin, baseline_document, baseline_source, load_baseline,
                                         read_baseline, write_baseline)
from torchdoctor.check.figures import observation_figures
from torchdoctor.environment import Cpu, Environment
from torchdoctor.errors import CheckError
from torchdoctor.jsonguard import BASELINE_LIMITS
from tests.check.values import record


def test_baseline_documents_round_trip_and_bad_ones_are_refused() -> None:
    observations = [observation_figures(record([0.010 + 0.001 * (i % 2)] * 3)) for i in range(6)]
    document = baseline_document(BaselineOrigin("main", "train.py", ["--x"], "now", "abc", False),
                                 Environment.of(cpu=Cpu.of(model="Xeon")), {"steps": 3}, observations)
    assert read_baseline(document, "b") is document
    assert document["noise"] == pytest.approx(0.1)  # alternate observations: 10 ms and 11 ms
    with pytest.raises(ValueError, match="not a torchdoctor check baseline"):
        read_baseline({"kind": "something"}, "b")
    with pytest.raises(ValueError, match="schema_version 99"):
        read_baseline({**document, "schema_version": 99}, "b")
    # A baseline of median steps cannot be compared with the pace: it is recorded again.
    with pytest.raises(ValueError, match="median step.*record the baseline again"):
        read_baseline({**document, "schema_version": 1}, "b")
    with pytest.raises(ValueError, match="no measured observation"):
        read_baseline({**document, "observations": []}, "b")


class MemoryStore:
    """A baseline store in memory, as the check sees `store.RunStore`."""

    def __init__(self) -> None:
        self.path = Path("memory.db")
        self.documents: dict[str, dict[str, Any]] = {}
        self.opened = 0

    @contextmanager
    def open(self) -> Iterator[MemoryStore]:
        self.opened += 1
        yield self

    def save_baseline(self, name: str, document: dict[str, Any]) -> None:
        self.documents[name] = document

    def load_baseline(self, name: str) -> dict[str, Any] | None:
        return self.documents.get(name)

    def baselines(self) -> list[str]:
        return sorted(self.documents)


def _document() -> dict[str, Any]:
    observations = [observation_figures(record([0.010] * 3)) for _ in range(4)]
    return baseline_document(BaselineOrigin("main", "train.py", [], "now", None, False), Environment(), {"steps": 3},
                             observations)


def test_a_name_with_a_path_or_json_suffix_is_a_file_any_other_lives_in_the_store() -> None:
    assert baseline_source("main") == "store"
    assert baseline_source("main.json") == baseline_source("ci/main") == "file"


def test_a_stored_baseline_is_written_and_read_through_the_store_opened_only_then(tmp_path: Path) -> None:
    store = MemoryStore()
    assert write_baseline("main", _document(), store.open) == "memory.db (baseline 'main')"
    assert load_baseline("main", store.open)["name"] == "main" and store.opened == 2
    with pytest.raises(CheckError, match=r"no baseline 'nightly' in memory.db \(stored: main\)"):
        load_baseline("nightly", store.open)
    path = tmp_path / "ci" / "main.json"
    assert write_baseline(str(path), _document(), store.open) == str(path)
    assert load_baseline(str(path), store.open)["kind"] == "torchdoctor.check.baseline" and store.opened == 3


def test_a_baseline_file_beyond_the_bounds_or_not_json_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * (BASELINE_LIMITS.max_depth + 1) + b"]" * (BASELINE_LIMITS.max_depth + 1))
    with pytest.raises(CheckError, match="not JSON within bounds") as refused:
        load_baseline(str(deep), MemoryStore().open)
    assert refused.value.kind == "bad_baseline"
    with pytest.raises(CheckError, match="cannot read baseline"):
        load_baseline(str(tmp_path / "missing.json"), MemoryStore().open)
