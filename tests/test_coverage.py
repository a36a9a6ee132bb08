"""docs/coverage.md: every item of the public PyTorch performance guides, with what in torchdoctor
covers it. The page is generated from docs/coverage.toml; these tests keep both from rotting: the
page matches its data, every id a row names exists in torchdoctor's registries, and every registered
rule, lint check and knob covers some row."""

from __future__ import annotations

import re
from functools import cache

import pytest

from tests.coverage_page import DATA, PAGE, REASONS, REPO_ROOT, STATUSES, Item, Source, covering, load, render


@cache
def sources() -> tuple[Source, ...]:
    return tuple(load(DATA.read_text(encoding="utf-8")))


@cache
def known_references() -> frozenset[str]:
    """Every id a row may name: rules, the findings only a command reports, lint codes, knobs and
    commands, each read from where torchdoctor registers it."""
    from torchdoctor.cli import app
    from torchdoctor.distributed import comm, scale
    from torchdoctor.knobs import REGISTRY
    from torchdoctor.lint.registry import all_checks
    from torchdoctor.rules import all_rules

    findings = {r.id for r in all_rules()} | {
        scale.SINGLE_PROCESS_FIRST, scale.RUN_FAILED, scale.LOW_EFFICIENCY_FINDING,
        comm.UNSUPPORTED, comm.INCORRECT, comm.FAR_BELOW_THEORETICAL}
    commands = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    return frozenset(findings | {c.code for c in all_checks()} | {f"knob:{k}" for k in REGISTRY}
                     | {f"command:{name}" for name in commands if name})


def unknown_references(rows: tuple[Source, ...], known: frozenset[str]) -> list[str]:
    """'source: reference' for each reference no registry knows."""
    return [f"{source.id}: {ref}" for source in rows for item in source.items for ref in item.by
            if ref not in known]


def malformed(item: Item) -> str | None:
    """Why an item breaks the page's conventions, or None."""
    if item.status not in STATUSES:
        return f"status {item.status!r} is not one of {STATUSES}"
    if item.status == "not covered":
        if item.reason not in REASONS or not item.note:
            return "a 'not covered' item needs a reason from the list and a note"
    elif item.reason is not None:
        return "only a 'not covered' item has a reason"
    if item.status != "not covered" and not item.by:
        return f"a {item.status!r} item names what covers it"
    if item.status == "partly" and not item.note:
        return "a 'partly' item says in its note what is missing"
    return None


def test_the_page_is_the_rendering_of_its_data() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(list(sources())), (
        "docs/coverage.md is stale: run `python -m tests.coverage_page` after editing docs/coverage.toml")


def test_every_id_a_row_names_exists() -> None:
    assert unknown_references(sources(), known_references()) == []


def test_a_misspelt_or_removed_id_is_caught() -> None:
    planted = load('[[source]]\nid = "x"\ntitle = "X"\nurl = "https://example.org"\n'
                   '[[source.item]]\nadvice = "a"\nstatus = "covered"\n'
                   'by = ["TD-COMP-001", "TD-COMP-999", "TDL999", "knob:warp_drive", "command:fix"]\n')
    assert unknown_references(tuple(planted), known_references()) == [
        "x: TD-COMP-999", "x: TDL999", "x: knob:warp_drive", "x: command:fix"]


@pytest.mark.parametrize("kind, prefix", [("rule", "TD-"), ("lint check", "TDL"), ("knob", "knob:")])
def test_every_registered_check_covers_some_row(kind: str, prefix: str) -> None:
    from torchdoctor.knobs import REGISTRY
    from torchdoctor.lint.registry import all_checks
    from torchdoctor.rules import all_rules

    registered = {"rule": {r.id for r in all_rules()}, "lint check": {c.code for c in all_checks()},
                  "knob": {f"knob:{k}" for k in REGISTRY}}[kind]
    cited = {ref for source in sources() for item in source.items for ref in covering(item)
             if ref.startswith(prefix)}
    assert sorted(registered - cited) == [], f"add a row that each {kind} covers to docs/coverage.toml"


def test_every_item_follows_the_conventions() -> None:
    problems = [f"{source.id}: {item.advice[:50]!r}: {why}"
                for source in sources() for item in source.items if (why := malformed(item))]
    assert problems == []


def test_a_not_covered_item_without_its_reason_is_refused() -> None:
    assert malformed(Item("a", "not covered", note="why")) is not None
    assert malformed(Item("a", "partly", by=("TD-COMP-001",))) is not None
    assert malformed(Item("a", "covered")) is not None
    assert malformed(Item("a", "not covered", reason="model choice", note="why")) is None


def test_every_source_is_cited_and_its_ids_are_unique() -> None:
    ids = [source.id for source in sources()]
    assert len(ids) == len(set(ids))
    for source in sources():
        assert (source.url or "").startswith("https://") or source.reference, source.id
        assert source.items, source.id


def test_the_page_is_linked_from_the_rules_catalogue_and_the_readme() -> None:
    assert re.search(r"\]\(coverage\.md\)", (REPO_ROOT / "docs" / "rules.md").read_text(encoding="utf-8"))
    assert re.search(r"\]\(docs/coverage\.md\)", (REPO_ROOT / "README.md").read_text(encoding="utf-8"))
