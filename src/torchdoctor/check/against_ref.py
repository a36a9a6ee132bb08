"""`torchdoctor check --against REF`: the working tree (B) against REF (A), checked out into a
temporary worktree, interleaved on this machine."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from torchdoctor.check import worktree
from torchdoctor.check.config import CheckOptions
from torchdoctor.check.context import CheckContext, Collaborators
from torchdoctor.check.result import CheckResult
from torchdoctor.check.rounds import interleaved
from torchdoctor.check.runner import Runner
from torchdoctor.check.sides import Side, script_path
from torchdoctor.errors import CheckError


def compare_with_ref(script: str, args: Sequence[str], ref: str, options: CheckOptions,
                     collaborators: Collaborators, *, mode: str = "ref") -> CheckResult:
    """Compare the working tree (B) with REF (A), interleaved; the result of `mode` ("ref", "demo")."""
    context = CheckContext(mode, script, args, options, collaborators)

    def body(context: CheckContext) -> None:
        path = script_path(script)
        root = worktree.find_repo(path.parent)
        commit = worktree.resolve_ref(root, ref)
        side_b = _describe_sides(context, root, path, ref, commit)
        relative = path.relative_to(root)
        with worktree.temporary_worktree(root, commit) as tree:
            side_a = Side("A", context.result.a["label"], tree / relative, str(_a_cwd(context, root, tree)),
                          python_path=tree_paths(tree),
                          info={k: v for k, v in context.result.a.items() if k not in ("name", "label")})
            try:
                interleaved(context, Runner.started(context, [side_a, side_b], args))
            except CheckError as exc:
                if exc.side != "A" or context.options.same_cwd:
                    raise
                raise _with_checkout_hint(exc, root, ref) from None

    return context.run(body)


def _with_checkout_hint(exc: CheckError, root: Path, ref: str) -> CheckError:
    """REF's side failed in its checkout: when this folder holds files git does not track (data the
    script may read), the error says they are absent there and that `--same-cwd` runs REF's side
    here; otherwise the error as it was."""
    missing = worktree.not_in_git(root, Path.cwd())
    if not missing:
        return exc
    hint = (f"; REF's side runs in a checkout of {ref}, which lacks the files git does not track here "
            f"({', '.join(missing)}{', ...' if len(missing) == worktree.NOT_IN_GIT_SHOWN else ''}): if the script reads them, "
            "rerun with --same-cwd to run REF's side in this folder")
    return CheckError(f"{exc}{hint}", kind=exc.kind, side=exc.side, detail=exc.detail)


def _describe_sides(context: CheckContext, root: Path, path: Path, ref: str, commit: str) -> Side:
    """The result's A (REF at `commit`) and its dirty-tree marks; side B, the script at `path` in the
    working tree as it is. CheckError (kind "bad_ref") when the script does not exist at REF."""
    result, relative = context.result, path.relative_to(root)
    result.script = relative.as_posix()
    result.a = {"name": "A", "label": f"{ref} ({commit[:7]})", "ref": ref, "commit": commit,
                "subject": worktree.describe(root, commit)}
    result.dirty_files = worktree.dirty_files(root)
    result.dirty = bool(result.dirty_files)
    head = worktree.head_commit(root)
    b_label = "working tree" + (" (uncommitted changes)" if result.dirty else f" ({head[:7]})" if head else "")
    if result.dirty:
        result.warnings.append(
            f"the working tree has uncommitted changes ({len(result.dirty_files)} file(s)): the working tree, "
            f"as it is, is compared against {ref}")
    if not worktree.exists_at(root, commit, relative):
        raise CheckError(f"{relative.as_posix()} does not exist at {ref} ({commit[:7]}): nothing to compare "
                         "against", kind="bad_ref", side="A")
    return Side("B", b_label, path, str(Path.cwd().resolve()), python_path=tree_paths(root),
                info={"commit": head, "dirty": result.dirty})


def _a_cwd(context: CheckContext, root: Path, tree: Path) -> Path:
    """Where REF's side runs: the same folder of its tree as this one is of the repository (this
    folder itself with `same_cwd`, or when it lies outside the repository); the tree's root when
    that folder does not exist at REF."""
    cwd = Path.cwd().resolve()
    a_cwd = cwd if context.options.same_cwd or not cwd.is_relative_to(root) else tree / cwd.relative_to(root)
    return a_cwd if a_cwd.is_dir() else tree


def tree_paths(tree: Path) -> list[str]:
    """A tree's own code first on the import path: its src/ folder (src layout) and its root, so an
    editable install of the project does not make both sides run the working tree's code."""
    return [str(p) for p in (tree / "src", tree) if p.is_dir()]
