"""The blind corpora are well formed: what `benchmarks/blind_corpus.py` relies on.

Five corpora share one layout: `tests/field/blind/` and the held-out `tests/field/blind_holdout/`,
`tests/field/blind_third/`, `tests/field/blind_fourth/` and `tests/field/blind_fifth/`.
In each, every problem script has a healthy twin, cites its public thread in its docstring, has a
manifest entry with non-empty lowercase `expect` keywords, and every script compiles. Diagnosing
the scripts is the benchmark's job (minutes per script), not this test's.
"""

import ast
import json
import re
from pathlib import Path

import pytest

FIELD = Path(__file__).resolve().parent.parent
CORPORA = tuple(FIELD / name for name in ("blind", "blind_holdout", "blind_third", "blind_fourth",
                                          "blind_fifth"))
URL = re.compile(r"https?://\S+")


def problems(corpus: Path) -> list[str]:
    return sorted(p.stem for p in (corpus / "problems").glob("*.py"))


def manifest(corpus: Path) -> list[dict]:
    return json.loads((corpus / "manifest.json").read_text())["problems"]


def docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(), str(path))) or ""


def per_corpus(items) -> list:
    """`pytest.param(corpus, item)` for every item `items(corpus)` yields, in every corpus."""
    return [pytest.param(corpus, item, id=f"{corpus.name}/{label}")
            for corpus in CORPORA for label, item in items(corpus)]


ENTRIES = per_corpus(lambda c: [(e["name"], e) for e in manifest(c)])
NAMES = per_corpus(lambda c: [(n, n) for n in problems(c)])
SCRIPTS = per_corpus(lambda c: [(f"{p.parent.name}/{p.stem}", p) for p in sorted(c.glob("*/*.py"))])


@pytest.mark.parametrize("corpus", CORPORA, ids=lambda c: c.name)
def test_the_corpus_holds_at_least_twenty_problems(corpus):
    assert len(problems(corpus)) >= 20


@pytest.mark.parametrize("corpus", CORPORA, ids=lambda c: c.name)
def test_every_problem_has_a_healthy_twin_and_no_twin_is_orphaned(corpus):
    twins = sorted(p.stem for p in (corpus / "healthy").glob("*.py"))
    assert twins == problems(corpus)


@pytest.mark.parametrize("corpus", CORPORA, ids=lambda c: c.name)
def test_manifest_lists_exactly_the_problem_scripts_once_each(corpus):
    names = [entry["name"] for entry in manifest(corpus)]
    assert sorted(names) == problems(corpus)
    assert len(set(names)) == len(names)


def test_no_two_corpora_share_a_script_name():
    names = [set(problems(corpus)) for corpus in CORPORA]
    for i, earlier in enumerate(names):
        for later in names[i + 1:]:
            assert not earlier & later


@pytest.mark.parametrize(("corpus", "entry"), ENTRIES)
def test_manifest_entry_has_a_thread_a_description_and_lowercase_keywords(corpus, entry):
    assert URL.fullmatch(entry["thread"]["url"])
    assert entry["thread"]["title"].strip()
    assert entry["description"].strip()
    assert entry["expect"], "a problem nobody could find"
    assert all(k and k == k.lower() for k in entry["expect"])


@pytest.mark.parametrize(("corpus", "name"), NAMES)
def test_problem_docstring_cites_its_thread_and_states_the_fix(corpus, name):
    doc = docstring(corpus / "problems" / f"{name}.py")
    entry = next(e for e in manifest(corpus) if e["name"] == name)
    assert entry["thread"]["url"] in URL.findall(doc) or entry["thread"]["url"] in doc
    assert "Problem:" in doc and "Expected fix:" in doc


@pytest.mark.parametrize(("corpus", "name"), NAMES)
def test_twin_names_its_problem_and_differs_from_it(corpus, name):
    problem = (corpus / "problems" / f"{name}.py").read_text()
    twin = (corpus / "healthy" / f"{name}.py").read_text()
    assert docstring(corpus / "healthy" / f"{name}.py").startswith(f"Healthy twin of problems/{name}.py")
    assert problem.split('"""', 2)[2] != twin.split('"""', 2)[2], "the twin's code is the problem's"


@pytest.mark.parametrize(("corpus", "path"), SCRIPTS)
def test_every_script_compiles_and_has_a_main_entry(corpus, path):
    source = path.read_text()
    compile(source, str(path), "exec")
    assert 'if __name__ == "__main__":' in source
