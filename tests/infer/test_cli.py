"""`torchdoctor infer` as a user runs it: a subprocess, a table on stdout, JSON on request."""

from __future__ import annotations

import subprocess
import sys

import orjson


def test_infer_prints_the_ladder_and_writes_json(tmp_path, repo_root) -> None:
    out = tmp_path / "infer.json"
    command = [sys.executable, "-m", "torchdoctor", "infer", "tests.infer.models:classifier",
               "--variants", "inference_mode,onnxruntime", "--batch-sizes", "2", "--iters", "6",
               "--json", str(out)]
    done = subprocess.run(command, cwd=repo_root, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "onnxruntime" in done.stdout and "recommended:" in done.stdout
    data = orjson.loads(out.read_bytes())
    assert [v["name"] for v in data["variants"]] == ["eager", "inference_mode", "onnxruntime"]


def test_a_bad_factory_is_one_line_of_error_and_a_nonzero_exit(repo_root) -> None:
    done = subprocess.run([sys.executable, "-m", "torchdoctor", "infer", "no_such_module:f"],
                          cwd=repo_root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "cannot import 'no_such_module'" in done.stderr and "Traceback" not in done.stderr
