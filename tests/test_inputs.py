"""A file given to torchdoctor is opened only when it is a regular file, and read only up to its
reader's bound, whatever size the file system reports for it."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchdoctor.inputs import InputTooLargeError, NotRegularFileError, open_regular, read_capped


def test_a_fifo_is_refused_at_once_instead_of_blocking_the_open(tmp_path: Path):
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)  # no writer: a plain open() would block forever
    with pytest.raises(NotRegularFileError, match="a FIFO, not a regular file"):
        open_regular(fifo)


@pytest.mark.parametrize("path, kind", [("/dev/zero", "a character device"), ("/", "a directory")])
def test_devices_and_folders_are_refused_with_their_kind(path: str, kind: str):
    with pytest.raises(NotRegularFileError, match=kind):
        read_capped(path, 10)


def test_a_socket_is_refused(tmp_path: Path):
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(NotRegularFileError, match="a socket"):
            read_capped(path, 10)


def test_a_proc_file_reported_empty_is_read_whole():
    assert os.stat("/proc/self/status").st_size == 0
    assert b"VmHWM" in read_capped("/proc/self/status", 1 << 20)


@settings(max_examples=30, deadline=None)
@given(size=st.integers(0, 300), limit=st.integers(0, 300))
def test_a_file_is_read_whole_up_to_its_limit_and_refused_past_it(tmp_path_factory, size: int, limit: int):
    path = tmp_path_factory.mktemp("capped") / "f"
    path.write_bytes(b"x" * size)
    if size <= limit:
        assert read_capped(path, limit) == b"x" * size
    else:
        with pytest.raises(InputTooLargeError, match=f"larger than {limit:,} bytes"):
            read_capped(path, limit)


def test_the_errors_are_oserrors_whose_strerror_fits_a_cannot_read_message(tmp_path: Path):
    (tmp_path / "big").write_bytes(b"x" * 11)
    with pytest.raises(OSError) as raised:
        read_capped(tmp_path / "big", 10)
    assert raised.value.strerror == "larger than 10 bytes, the most this reader accepts"
