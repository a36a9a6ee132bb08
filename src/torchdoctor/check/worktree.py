"""The git side of `torchdoctor check --against REF`: the repository of the script, REF resolved to
a commit, the working tree's uncommitted changes, and REF checked out into a temporary worktree
(`git worktree add --detach`, with its submodules, removed again however the check ends)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from torchdoctor.errors import CheckError

#: torchdoctor's own folder (store, check artefacts) never makes a tree dirty.
OWN_FOLDER = ".torchdoctor"
#: how many untracked paths an error names
NOT_IN_GIT_SHOWN = 5


def git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise CheckError("git is not installed; --against REF needs it", kind="git") from None
    if check and proc.returncode != 0:
        raise CheckError(f"git {' '.join(args)} failed: {proc.stderr.strip()}", kind="git")
    return proc


def find_repo(path: Path) -> Path:
    """The root of the git repository holding `path` (a folder)."""
    proc = git(path, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0:
        raise CheckError(f"{path} is not inside a git repository; --against REF compares two versions of "
                         "one (use --against-python or --baseline otherwise)", kind="not_a_repo")
    return Path(proc.stdout.strip()).resolve()


def resolve_ref(root: Path, ref: str) -> str:
    """The full commit id REF names; CheckError when it names none."""
    proc = git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise CheckError(f"REF {ref!r} is not a commit of the repository at {root} (try `git log --oneline` "
                         "or `git fetch` first: a CI checkout is often shallow, see `fetch-depth`)",
                         kind="bad_ref")
    return proc.stdout.strip()


def head_commit(root: Path) -> str | None:
    proc = git(root, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
    return proc.stdout.strip() or None


def describe(root: Path, commit: str) -> str:
    """'abc1234 subject line'."""
    proc = git(root, "log", "-1", "--format=%h %s", commit, check=False)
    return proc.stdout.strip() or commit[:7]


def dirty_files(root: Path) -> list[str]:
    """Files changed, added or untracked (not ignored) in the working tree, torchdoctor's own left out."""
    proc = git(root, "status", "--porcelain", "--untracked-files=normal", "--", ".", f":(exclude){OWN_FOLDER}")
    return [line[3:] for line in proc.stdout.splitlines() if line.strip()]


def not_in_git(root: Path, folder: Path, *, most: int = NOT_IN_GIT_SHOWN) -> list[str]:
    """Up to `most` files and folders under `folder` that git does not track, ignored ones included
    (data sets, downloaded weights, build outputs): a checkout of another commit lacks them.
    torchdoctor's own folder and Python's caches are left out."""
    proc = git(root, "ls-files", "--others", "--directory", "--no-empty-directory", "--", str(folder),
               f":(exclude){OWN_FOLDER}", ":(exclude,glob)**/__pycache__/**", check=False)
    return [line for line in proc.stdout.splitlines() if line.strip()][:most]


def exists_at(root: Path, commit: str, relative: Path) -> bool:
    return git(root, "cat-file", "-e", f"{commit}:{relative.as_posix()}", check=False).returncode == 0


@contextmanager
def temporary_worktree(root: Path, commit: str) -> Iterator[Path]:
    """REF's files in a temporary folder, for as long as the block runs."""
    holder = Path(tempfile.mkdtemp(prefix="torchdoctor-check-"))
    tree = holder / "tree"
    try:
        git(root, "worktree", "add", "--detach", "--quiet", str(tree), commit)
        _check_out_submodules(tree, commit)
        yield tree
    finally:
        git(root, "worktree", "remove", "--force", str(tree), check=False)
        shutil.rmtree(holder, ignore_errors=True)
        git(root, "worktree", "prune", check=False)


def _check_out_submodules(tree: Path, commit: str) -> None:
    """Check out the submodules REF names (`git submodule update --init --recursive`): a new
    worktree has empty folders where they go, and the script at REF would fail on them. Git fetches
    them from the URLs in REF's .gitmodules (a local path needs git's `protocol.file.allow`); when
    it cannot, the check stops here and says why."""
    if not (tree / ".gitmodules").is_file():
        return
    proc = git(tree, "submodule", "update", "--init", "--recursive", "--quiet", check=False)
    if proc.returncode != 0:
        why = " ".join(proc.stderr.split())[-400:] or f"git exit status {proc.returncode}"
        raise CheckError(f"the checkout of {commit[:12]} has git submodules, and checking them out failed: {why}",
                         kind="git")
