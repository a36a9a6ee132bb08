"""Each torchrun launch of ours names its own log folder and removes it; a user's `--log-dir` is theirs.
(The launch itself, with nothing left in the temporary folder: tests/launch/test_torchrun.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.distributed.launch import log_dir_option, own_log_dir


@pytest.mark.parametrize("theirs", [["--log-dir", "/mine"], ["--log-dir=/mine"], ["--log_dir", "/mine"],
                                    ["--standalone", "--log_dir=/mine"]])
def test_a_log_folder_the_user_chose_is_kept(theirs: list[str]) -> None:
    assert log_dir_option(theirs, "/ours") == []


def test_without_one_the_launch_gets_ours() -> None:
    assert log_dir_option(["--standalone", "--rdzv-id=logs"], "/ours") == ["--log-dir=/ours"]


def test_our_log_folder_is_removed_when_the_launch_ends() -> None:
    with own_log_dir([]) as option:
        (folder,) = [Path(o.split("=", 1)[1]) for o in option]
        (folder / "attempt_0" / "0").mkdir(parents=True)  # what torchrun's agent writes there
        (folder / "attempt_0" / "0" / "error.json").write_text("{}")
    assert not folder.exists()
    with own_log_dir(["--log-dir=/mine"]) as option:
        assert option == []
