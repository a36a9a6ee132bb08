"""Fork servers, one per interpreter, for the observations of one check: started on first use,
closed when the check's `with` block ends, however it ends."""

from __future__ import annotations

from types import TracebackType

from torchdoctor.launch.forkserver import ForkServer


class ForkServers:
    """The fork servers of one check, by interpreter. Use as a `with` block: every server started
    in it is closed when it ends, on an exception too (no server outlives its check)."""

    def __init__(self) -> None:
        self._servers: dict[str, ForkServer] = {}

    def __enter__(self) -> ForkServers:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def for_python(self, python: str) -> ForkServer:
        """The server of interpreter `python`, started (not yet ready) if none is running."""
        server = self._servers.get(python)
        if server is None or not server.alive:
            if server is not None:
                server.close()
            server = self._servers[python] = ForkServer(python).start()
        return server

    def close(self) -> None:
        """Stop every server started so far."""
        for server in self._servers.values():
            server.close()
        self._servers.clear()
