"""A check's fork servers: one per interpreter, started on first use, and every one closed when the
check's `with` block ends, however it ends."""

from __future__ import annotations

import pytest

from torchdoctor.check import servers as servers_module
from torchdoctor.check.servers import ForkServers


class FakeServer:
    """A fork server that starts no process; it records whether it was closed."""

    started: list[FakeServer] = []

    def __init__(self, python: str) -> None:
        self.python, self.closed = python, False

    def start(self) -> FakeServer:
        FakeServer.started.append(self)
        return self

    @property
    def alive(self) -> bool:
        return not self.closed

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake_servers(monkeypatch: pytest.MonkeyPatch) -> list[FakeServer]:
    FakeServer.started = []
    monkeypatch.setattr(servers_module, "ForkServer", FakeServer)
    return FakeServer.started


def test_one_server_per_interpreter_all_closed_when_the_block_ends(fake_servers: list[FakeServer]) -> None:
    with ForkServers() as servers:
        first = servers.for_python("/usr/bin/python3")
        assert servers.for_python("/usr/bin/python3") is first
        other = servers.for_python("/opt/other/python")
        assert not first.closed and not other.closed
    assert [s.python for s in fake_servers] == ["/usr/bin/python3", "/opt/other/python"]
    assert first.closed and other.closed


def test_the_servers_are_closed_when_the_block_ends_by_an_exception(fake_servers: list[FakeServer]) -> None:
    with pytest.raises(RuntimeError, match="a side broke"):
        with ForkServers() as servers:
            servers.for_python("/usr/bin/python3")
            raise RuntimeError("a side broke")
    assert fake_servers and all(s.closed for s in fake_servers)


def test_a_server_that_died_is_replaced(fake_servers: list[FakeServer]) -> None:
    with ForkServers() as servers:
        dead = servers.for_python("/usr/bin/python3")
        dead.close()
        assert servers.for_python("/usr/bin/python3") is not dead
    assert len(fake_servers) == 2 and all(s.closed for s in fake_servers)
