"""The code, its tests, benchmarks and docs are written for a reader who was not there: they say
why the code is as it is in terms of the code and of measurements, never by the project's own
history (a numbered session, stop or issue of the project: the planted lines below show the forms).

A measurement is cited by the dated file it is recorded in (`benchmarks/results/YYYY-MM-DD-*.md`,
where dated history belongs and which is not scanned) or by the doc that states it. References to
another project's tracker stay: the word before "issue" names that project ("kineto issue #688",
"HTA issue #250"), and "owner/repo#123" is never matched. "session" and "stop" are only matched
with a number after them, so an observation session, an ONNX Runtime session, `start_new_session`
or an HTTP session pass.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Development-history wording: a numbered session, stop or issue of this project.
HISTORY = re.compile(r"\bsessions?\s+#?\d+|\bstops?\s+#?\d+|\bissues?[\s-]*#?\d+", re.IGNORECASE)

#: Projects whose trackers may be cited ("kineto issue #688"): the word right before "issue".
UPSTREAM = frozenset({
    "kineto", "pytorch", "torch", "hta", "holistictraceanalysis", "tensorboard", "tb_plugin", "triton",
    "cpython", "python", "numpy", "scipy", "onnx", "onnxruntime", "lightning", "transformers",
    "accelerate", "deepspeed", "vllm", "sglang", "tracelens", "rich", "typer", "click", "psutil",
    "libcst", "aiohttp", "uvicorn", "hypothesis", "pytest", "orjson", "github", "nvidia", "cuda", "rocm",
    "gvisor", "linux", "glibc",
})

#: What is scanned, relative to the repository root: (folder, recursive glob patterns).
SCANNED = (
    ("src", ("*.py", "*.md", "*.txt", "*.j2", "*.toml")),
    ("tests", ("*.py", "*.md", "*.txt", "*.sh", "*.toml")),
    ("benchmarks", ("*.py", "*.sh")),
    ("docs", ("*.md",)),
    ("examples", ("*.py", "*.md", "*.sh")),
)
#: Single files scanned.
SCANNED_FILES = ("README.md", "Makefile", "pyproject.toml")
#: Left out: dated results may tell their history, and this file plants the wording it forbids.
EXCLUDED = ("benchmarks/results/", "tests/test_written_for_readers.py")


def history_references(text: str) -> list[tuple[int, str]]:
    """(line number, the matched words) of every development-history reference in `text`: a
    numbered session, stop or issue not preceded by the name of an upstream project."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in HISTORY.finditer(line):
            before = re.findall(r"[\w.-]+", line[:match.start()])
            owner = before[-1].lower().removesuffix("'s") if before else ""
            if match.group().lower().startswith("issue") and owner in UPSTREAM:
                continue
            found.append((number, match.group()))
    return found


def scanned_files(root: Path) -> list[Path]:
    """The files under `root` that are held to the rule, sorted."""
    files = {root / name for name in SCANNED_FILES if (root / name).is_file()}
    for folder, patterns in SCANNED:
        for pattern in patterns:
            files.update(p for p in (root / folder).rglob(pattern) if p.is_file())
    return sorted(p for p in files
                  if not any(p.relative_to(root).as_posix().startswith(skip) for skip in EXCLUDED))


def _offences(root: Path) -> list[str]:
    return [f"{path.relative_to(root)}:{line}: {words!r}"
            for path in scanned_files(root)
            for line, words in history_references(path.read_text(encoding="utf-8", errors="replace"))]


def test_the_tree_explains_itself_by_code_and_measurements_not_by_its_history() -> None:
    offences = _offences(ROOT)
    assert not offences, ("say what the code does and why, citing benchmarks/results/ or docs/ for a "
                          "figure, instead of:\n" + "\n".join(offences))


def test_a_planted_history_reference_is_found_and_upstream_ones_are_not(tmp_path: Path) -> None:
    # The forms of a history reference, with the word filled in here so that this file itself reads
    # as the rule it tests, not as history.
    planted = [template.format(session="session", stop="stop", issue="issue") for template in (
        "# fixed in {session} 30: the interval was too narrow",
        '"""Hostile traces ({issue} 16): bounded parsing."""',
        "# Seen in CI ({stop} 31), within one minute",
        "    # Measured on the tables of {session}s 20-23",
        "# {session} 31's grad-inference confirmation",
        '"""torch.compile rules ({issue} 7 item 3)."""',
        "#   num_workers=0 (the {issue}-14 case)",
    )]
    allowed = [
        "# kineto issue #688: torch 1.13 records the step as user_annotation",
        "# HTA issue #250 and pytorch/pytorch#12345 describe the same",
        "session = ort.InferenceSession(path)  # an ONNX Runtime session",
        "subprocess.Popen(argv, start_new_session=True)",
        "# the observation session stops after its windows",
        "async with aiohttp.ClientSession(url) as session:",
        "# run 30 (2026-12-04) in benchmarks/results/2026-12-04-tune-zoo.md",
    ]
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "module.py").write_text("\n".join(allowed + planted) + "\n")
    found = history_references((tmp_path / "src" / "module.py").read_text())
    assert [line for line, _ in found] == list(range(len(allowed) + 1, len(allowed) + len(planted) + 1))
    offences = _offences(tmp_path)
    assert len(offences) == len(planted) and all(o.startswith("src/module.py:") for o in offences)
    # dated results may keep their history
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "results" / "2026-12-04-tune-zoo.md").write_text(planted[0] + "\n")
    assert len(_offences(tmp_path)) == len(planted)
