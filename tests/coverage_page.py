"""docs/coverage.md, written from docs/coverage.toml: what torchdoctor covers of each public
PyTorch performance guide, item by item.

The TOML is the data a maintainer edits; the page is generated so that its counts and its rule index
cannot drift from the rows. tests/test_coverage.py checks the page against this rendering and every
id the rows name against torchdoctor's registries. After editing the TOML, from the repository root:

    python -m tests.coverage_page        # rewrite docs/coverage.md
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest depends on tomli below 3.11
    import tomli as tomllib

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = REPO_ROOT / "docs" / "coverage.toml"
PAGE = REPO_ROOT / "docs" / "coverage.md"

STATUSES = ("covered", "partly", "not covered")
REASONS = {
    "out of scope": "correctness, numerics, debugging or installation, not the speed of a run",
    "model choice": "a change to the model or the training recipe whose worth one run cannot judge",
    "not observed": "needs a measurement torchdoctor does not take",
    "not built": "measurable and in scope, but no check exists yet",
}


@dataclass(frozen=True)
class Item:
    """One actionable piece of advice and what covers it."""

    advice: str
    status: str
    by: tuple[str, ...] = ()
    reason: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Source:
    """One guide: where to read it and its items, in the guide's order."""

    id: str
    title: str
    items: tuple[Item, ...]
    url: str | None = None
    reference: str | None = None
    read: str | None = None
    summary: bool = True


def load(text: str) -> list[Source]:
    """The sources of a coverage TOML document (docs/coverage.toml's layout). Raises TypeError on a
    key a Source or an Item does not have."""
    sources = []
    for raw in tomllib.loads(text)["source"]:
        fields = {k: v for k, v in raw.items() if k != "item"}
        items = tuple(Item(**{**item, "by": tuple(item.get("by", ()))}) for item in raw.get("item", ()))
        sources.append(Source(**fields, items=items))
    return sources


def covering(item: Item) -> tuple[str, ...]:
    """The references that cover the item (a 'not covered' item's are only related)."""
    return () if item.status == "not covered" else item.by


def reference_label(ref: str) -> str:
    """How the page writes a reference: a rule or lint code as code, a knob and a command by kind."""
    kind, _, name = ref.partition(":")
    if kind == "knob" and name:
        return f"knob `{name}`"
    if kind == "command" and name:
        return f"`torchdoctor {name}`"
    return f"`{ref}`"


def counts(source: Source) -> Counter[str]:
    """The number of the source's items in each status."""
    return Counter(item.status for item in source.items)


def summary_line(source: Source) -> str:
    """'N items: a covered, b partly, c not covered.'"""
    found = counts(source)
    return f"{len(source.items)} items: " + ", ".join(f"{found[s]} {s}" for s in STATUSES) + "."


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _status(item: Item) -> str:
    return f"{item.status} ({item.reason})" if item.reason else item.status


def _source_section(source: Source) -> list[str]:
    lines = [f"## {source.title}", ""]
    if source.url:
        lines.append(f"<{source.url}>" + (f" (read from `{source.read}`)" if source.read else ""))
    else:
        lines.append(f"Source: {source.reference}.")
    lines += ["", summary_line(source), "", "| advice | status | covered by | note |", "|---|---|---|---|"]
    for item in source.items:
        by = ", ".join(reference_label(ref) for ref in item.by)
        by = f"see {by}" if by and item.status == "not covered" else by
        lines.append(f"| {_cell(item.advice)} | {_status(item)} | {by} | {_cell(item.note or '')} |")
    return lines + [""]


def _summary_table(sources: list[Source]) -> list[str]:
    lines = ["| source | items | covered | partly | not covered |", "|---|---|---|---|---|"]
    total: Counter[str] = Counter()
    for source in (s for s in sources if s.summary):
        found = counts(source)
        total.update(found)
        lines.append(f"| [{source.title}](#{_anchor(source.title)}) | {len(source.items)} | "
                     + " | ".join(str(found[s]) for s in STATUSES) + " |")
    lines.append(f"| all | {sum(total.values())} | " + " | ".join(str(total[s]) for s in STATUSES) + " |")
    return lines


def _anchor(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def _rule_index(sources: list[Source]) -> list[str]:
    cited: dict[str, list[str]] = {}
    for source in sources:
        for ref in sorted({ref for item in source.items for ref in covering(item) if ref.startswith("TD-")}):
            cited.setdefault(ref, []).append(source.title)
    lines = ["| finding | covers items of |", "|---|---|"]
    for ref in sorted(cited):
        lines.append(f"| `{ref}` | " + "; ".join(cited[ref]) + " |")
    return lines


INTRO = """\
# Coverage of the public PyTorch performance advice

Every actionable item of the guides below, one row each, with what in torchdoctor covers it: a
diagnosis rule or a command's finding (`TD-...`, [rules.md](rules.md)), a lint check (`TDL...`,
[lint.md](lint.md)), a tune knob ([tune.md](tune.md)) or a command. An item is **covered** when
torchdoctor finds the problem or tries the fix, **partly** when some of the advice is handled (the
note says what is not), **not covered** otherwise ("see" then names what is related), for one of
these reasons:
"""

FOOTER = """\
This page is generated from [coverage.toml](coverage.toml) (`python -m tests.coverage_page`);
`tests/test_coverage.py` fails when the page is stale, when a row names a rule, lint code, knob or
command that does not exist, or when a registered rule, lint check or knob covers no row.
"""


def render(sources: list[Source]) -> str:
    """The whole Markdown page."""
    lines = [INTRO] + [f"- *{reason}*: {meaning}." for reason, meaning in REASONS.items()]
    lines += ["", FOOTER, "## Summary", ""] + _summary_table(sources) + [""]
    for source in sources:
        lines += _source_section(source)
    lines += ["## Findings and the guides whose items they cover", ""] + _rule_index(sources)
    return "\n".join(lines) + "\n"


def main() -> int:
    PAGE.write_text(render(load(DATA.read_text(encoding="utf-8"))), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
