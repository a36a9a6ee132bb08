"""The blind corpus is well formed: what `benchmarks/blind_corpus.py` relies on.

Each problem script has a healthy twin, cites its public thread in its docstring, has a manifest
entry with non-empty lowercase `expect` keywords, and every script compiles. Diagnosing the
scripts is the benchmark's job (minutes per script), not this test's.
"""

import ast
import json
import re
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent
PROBLEMS = sorted(p.stem for p in (CORPUS / "problems").glob("*.py"))
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())["problems"]
URL = re.compile(r"https?://\S+")


def docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(), str(path))) or ""


def test_the_corpus_holds_at_least_twenty_problems():
    assert len(PROBLEMS) >= 20


def test_every_problem_has_a_healthy_twin_and_no_twin_is_orphaned():
    twins = sorted(p.stem for p in (CORPUS / "healthy").glob("*.py"))
    assert twins == PROBLEMS


def test_manifest_lists_exactly_the_problem_scripts_once_each():
    names = [entry["name"] for entry in MANIFEST]
    assert sorted(names) == PROBLEMS
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda e: e["name"])
def test_manifest_entry_has_a_thread_a_description_and_lowercase_keywords(entry):
    assert URL.fullmatch(entry["thread"]["url"])
    assert entry["thread"]["title"].strip()
    assert entry["description"].strip()
    assert entry["expect"], "a problem nobody could find"
    assert all(k and k == k.lower() for k in entry["expect"])


@pytest.mark.parametrize("name", PROBLEMS)
def test_problem_docstring_cites_its_thread_and_states_the_fix(name):
    doc = docstring(CORPUS / "problems" / f"{name}.py")
    entry = next(e for e in MANIFEST if e["name"] == name)
    assert entry["thread"]["url"] in URL.findall(doc) or entry["thread"]["url"] in doc
    assert "Problem:" in doc and "Expected fix:" in doc


@pytest.mark.parametrize("name", PROBLEMS)
def test_twin_names_its_problem_and_differs_from_it(name):
    problem = (CORPUS / "problems" / f"{name}.py").read_text()
    twin = (CORPUS / "healthy" / f"{name}.py").read_text()
    assert docstring(CORPUS / "healthy" / f"{name}.py").startswith(f"Healthy twin of problems/{name}.py")
    assert problem.split('"""', 2)[2] != twin.split('"""', 2)[2], "the twin's code is the problem's"


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*/*.py")), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_script_compiles_and_has_a_main_entry(path):
    source = path.read_text()
    compile(source, str(path), "exec")
    assert 'if __name__ == "__main__":' in source
