"""The demo of `torchdoctor check --demo`: a temporary git repository whose second commit slows
the built-in demo workload down, checked against its first with one intra-op thread."""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from torchdoctor.check import worktree
from torchdoctor.errors import CheckError

#: The demo's deliberate regression, a plausible change: the tokeniser hashes its character n-grams with
#: blake2b instead of crc32 ("fewer collisions"), which makes the data pipeline, and so every step of
#: this data-bound workload, about 50-80% slower.
_DEMO_SLOWDOWN = (
    ("import zlib\n", "import hashlib\nimport zlib\n"),
    ("        ids.append(sum(zlib.crc32(g.encode()) % 7919 for g in grams) % (VOCAB_SIZE - 1) + 1)\n",
     '        ids.append(sum(int.from_bytes(hashlib.blake2b(g.encode(), digest_size=4).digest(), "little") % 7919\n'
     "                       for g in grams) % (VOCAB_SIZE - 1) + 1)\n"),
)
DEMO_ARGS = ("--batch-size", "4")
#: The demo's script in its repository, and the ref it is checked against (commit 1).
DEMO_SCRIPT = "demo.py"
DEMO_REF = "HEAD~1"


@contextmanager
def demo_repository() -> Iterator[Path]:
    """A temporary git repository: commit 1 the demo script, commit 2 the same with a slower tokeniser."""
    from torchdoctor.zoo import demo_script

    holder = Path(tempfile.mkdtemp(prefix="torchdoctor-demo-"))
    try:
        repo = holder / "demo"
        repo.mkdir()
        source = demo_script().read_text()
        ident = ["-c", "user.name=torchdoctor", "-c", "user.email=demo@torchdoctor.invalid"]
        worktree.git(repo, "init", "--quiet")
        (repo / DEMO_SCRIPT).write_text(source)
        worktree.git(repo, "add", DEMO_SCRIPT)
        worktree.git(repo, *ident, "commit", "--quiet", "-m", "demo: a data-bound text classifier")
        (repo / DEMO_SCRIPT).write_text(slowed_down(source))
        worktree.git(repo, *ident, "commit", "--quiet", "-am", "tokeniser: blake2b n-gram hashes (fewer collisions)")
        yield repo
    finally:
        shutil.rmtree(holder, ignore_errors=True)


def slowed_down(source: str) -> str:
    """The demo script's source with the slower tokeniser; CheckError when the script changed."""
    for old, new in _DEMO_SLOWDOWN:
        if old not in source:
            raise CheckError("the demo script changed: the check demo cannot slow it down", kind="input")
        source = source.replace(old, new)
    return source


@contextmanager
def one_intra_op_thread() -> Iterator[None]:
    """OMP_NUM_THREADS=1 for the block, as CPU jobs on a shared runner should run: two threads on two
    busy cores wait for each other and turn the step time into noise."""
    saved = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = saved
