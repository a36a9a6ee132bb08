"""Every relative link of the docs, the README and the dated results resolves: to a file that
exists and, where the link names a heading (`page.md#heading`), to a heading of that page, with
the anchor GitHub derives from it (lower case, punctuation dropped, spaces as hyphens). A page
moved or a heading renamed would otherwise leave readers at a dead end."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: A Markdown link, not an image: [text](target).
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
#: A target with a scheme (https:, mailto:) is not a relative link.
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading's text."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def prose(text: str) -> list[str]:
    """The lines of `text`, those of fenced code blocks blanked (line numbers kept)."""
    lines, fenced = [], False
    for line in text.splitlines():
        fence = line.lstrip().startswith("```")
        lines.append("" if fenced or fence else line)
        fenced ^= fence
    return lines


def anchors(page: Path) -> set[str]:
    """The anchors of `page`'s headings."""
    return {anchor(line.lstrip("#")) for line in prose(page.read_text(encoding="utf-8"))
            if line.startswith("#")}


def broken_links(page: Path) -> list[str]:
    """'line: target (why)' for each relative link of `page` that does not resolve; a link's text
    may run over a line break."""
    text, found = "\n".join(prose(page.read_text(encoding="utf-8"))), []
    for link in LINK.finditer(text):
        target = link.group(1)
        if SCHEME.match(target):
            continue
        path, _, heading = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        number = text.count("\n", 0, link.start(1)) + 1
        if not linked.exists():
            found.append(f"{number}: {target} (no such file)")
        elif heading and linked.suffix == ".md" and heading not in anchors(linked):
            found.append(f"{number}: {target} (no such heading)")
    return found


def pages() -> list[Path]:
    """The Markdown pages whose links are checked."""
    return sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"),
                   *(ROOT / "benchmarks" / "results").glob("*.md")])


def test_anchor_is_the_one_github_derives() -> None:
    assert anchor(" `--json` keys (schema_version 3)") == "--json-keys-schema_version-3"
    assert anchor("The confirmation's span") == "the-confirmations-span"
    assert anchor("Determinism: `--seed`") == "determinism---seed"


def test_a_link_to_a_missing_page_or_heading_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n## A heading\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("[ok](other.md#a-heading) [web](https://example.org/x.md)\n"
                    "[gone](missing.md) [no heading](other.md#nowhere)\n"
                    "```\n[in code](missing.md)\n```\n"
                    "[text over\ntwo lines](gone.md)\n", encoding="utf-8")
    assert broken_links(page) == ["2: missing.md (no such file)", "2: other.md#nowhere (no such heading)",
                                  "7: gone.md (no such file)"]


def test_every_relative_link_of_the_docs_resolves() -> None:
    broken = [f"{page.relative_to(ROOT)}:{where}" for page in pages() for where in broken_links(page)]
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)
