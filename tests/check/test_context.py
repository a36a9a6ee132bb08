"""One check being run: a refused input or a failed side becomes an "error" result that says which
side and why; the work folder is kept only when something was written to it."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.check.config import CheckOptions
from torchdoctor.check.context import CheckContext
from torchdoctor.check.decisions import ERROR
from torchdoctor.check.servers import ForkServers
from torchdoctor.errors import CheckError
from tests.check.values import collaborators


def test_a_check_error_becomes_an_error_result_naming_its_kind_and_side(tmp_path: Path) -> None:
    def body(context: CheckContext) -> None:
        (context.work_dir / "001-A-pilot.log").write_text("Traceback ...")
        raise CheckError("side A (main) failed", kind="side_failed", side="A", detail="Traceback ...")

    with ForkServers() as servers:
        context = CheckContext("ref", "train.py", ["--fast"], CheckOptions(), collaborators(tmp_path, servers))
        result = context.run(body)
    assert result.decision == ERROR and result.exit_code == 2 and result.reason == "side A (main) failed"
    assert result.error == {"kind": "side_failed", "side": "A", "message": "side A (main) failed",
                            "detail": "Traceback ..."}
    assert result.argv == ["--fast"] and result.settings == CheckOptions().settings()
    assert result.work_dir == str(context.work_dir) and context.work_dir.parent == tmp_path
