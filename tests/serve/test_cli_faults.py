"""`torchdoctor serve` and `load` on bad options and unreachable servers: one line, exit 2, never
a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest


def _torchdoctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torchdoctor", *args], capture_output=True, text=True, timeout=120)


def _assert_one_line_error(proc: subprocess.CompletedProcess[str], words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr and "Traceback" not in proc.stderr


def test_serve_refuses_a_port_that_does_not_exist() -> None:
    _assert_one_line_error(_torchdoctor("serve", "--demo", "--port", "99999"), "a port is 0..65535")


def test_serve_on_a_port_in_use_says_so() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _torchdoctor("serve", "tests.serve.models:moody", "--port", str(port))
    _assert_one_line_error(proc, f"cannot listen on 127.0.0.1:{port}")


def test_load_against_a_closed_port_says_nobody_answers() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        proc = _torchdoctor("load", f"http://127.0.0.1:{port}", "--requests", "1")
    _assert_one_line_error(proc, f"no torchdoctor server answers at http://127.0.0.1:{port}")


@pytest.mark.parametrize("option", [["--clients", "0"], ["--rate", "0"], ["--rate", "nan"], ["--duration", "-3"]])
def test_load_refuses_counts_and_rates_that_are_not_positive(option: list[str]) -> None:
    _assert_one_line_error(_torchdoctor("load", "http://127.0.0.1:9", *option), "must be positive")


@pytest.mark.parametrize("option", [["--timeout-ms", "nan"], ["--timeout-ms", "0"], ["--max-delay-ms", "-1"]])
def test_serve_refuses_delays_and_timeouts_that_are_not_numbers_of_the_right_sign(option: list[str]) -> None:
    _assert_one_line_error(_torchdoctor("serve", "--demo", *option), "--max-delay-ms must be >= 0")
