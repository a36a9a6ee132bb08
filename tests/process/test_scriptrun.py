"""A script runs under torchdoctor's children as under `python SCRIPT ARGS`: a file, a folder with
`__main__.py` and a zip application alike (here through `run --apply`'s program, launch.apply)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from torchdoctor.launch.apply import command
from torchdoctor.process.scriptrun import ScriptDoesNotCompile, enter_main

APP = 'import sys\nprint("argv", sys.argv, "main", __name__, "frames", len(__import__("traceback").extract_stack()))\n'


@pytest.fixture(params=["file", "folder", "zip"])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "file":
        (tmp_path / "app.py").write_text(APP)
        return str(tmp_path / "app.py")
    if request.param == "folder":
        (tmp_path / "app").mkdir()
        (tmp_path / "app" / "__main__.py").write_text(APP)
        return str(tmp_path / "app")
    with zipfile.ZipFile(tmp_path / "app.zip", "w") as archive:
        archive.writestr("__main__.py", APP)
    return str(tmp_path / "app.zip")


def test_a_file_a_folder_and_a_zip_app_see_what_plain_python_shows_them(app: str) -> None:
    plain = subprocess.run([sys.executable, app, "x"], capture_output=True, text=True, timeout=60)
    ours = subprocess.run(command(app, ["x"]), capture_output=True, text=True, timeout=60)
    assert ours.returncode == plain.returncode == 0, ours.stderr
    argv, frames = plain.stdout.rsplit(" ", 1)
    if app.endswith(".py"):  # a file runs one frame below ours; runpy adds its own for the others
        assert ours.stdout == f"{argv} {int(frames) + 1}\n"
    else:
        assert ours.stdout.rsplit(" ", 1)[0] == argv


@pytest.mark.parametrize("source, where", [
    (b"def f(:\n    pass\n", ":1: SyntaxError: invalid syntax"),
    (b"#!/bin/sh\necho hi\n", ":2: SyntaxError: invalid syntax"),
    (b"\x7fELF\x02\x01\x01\x00\x00\x00", ": SyntaxError: source code string cannot contain null bytes"),
])  # fmt: skip
def test_a_file_that_is_not_python_says_so_as_python_does_without_our_frames(tmp_path, source, where):
    script = tmp_path / "app.py"
    script.write_bytes(source)
    with pytest.raises(ScriptDoesNotCompile) as raised:
        enter_main(str(script), [str(script)])
    assert raised.value.where == f"{script}{where}"
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert plain.stderr.splitlines()[-1].startswith("SyntaxError: ")  # the error Python names
    applied = subprocess.run(command(script, []), capture_output=True, text=True)
    assert (applied.returncode, applied.stderr) == (1, raised.value.text)
    assert "Traceback" not in applied.stderr
