"""Open a page in real headless Chromium and collect what happened, over the DevTools protocol.

Chromium (Debian's `chromium` package) runs with a fresh profile, no background networking and
`--remote-debugging-port=0`; we read the port it chose from `DevToolsActivePort`, attach to the
page with websocket-client, and record console messages, exceptions, dialogs and every network
request while the page loads.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websocket

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--remote-debugging-port=0",
         "--window-size=1400,1000", "--hide-scrollbars"]  # fmt: skip


@dataclass
class PageVisit:
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)  # expression -> value


class _Session:
    def __init__(self, ws_url: str) -> None:
        self.ws = websocket.create_connection(ws_url, timeout=30, suppress_origin=True)
        self.next_id, self.events = 0, []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method: str, timeout_s: float = 30) -> None:
        deadline = time.monotonic() + timeout_s
        while not any(e.get("method") == method for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} within {timeout_s} s")
            self.events.append(json.loads(self.ws.recv()))


def _devtools_port(profile: Path, proc: subprocess.Popen[bytes], timeout_s: float = 30) -> int:
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout_s
    while not (marker.exists() and marker.read_text().strip()):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"chromium did not start: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
        time.sleep(0.05)
    return int(marker.read_text().split()[0])


def visit(page: Path, profile: Path, screenshot: Path, expressions: list[str]) -> PageVisit:
    """Load `page`, evaluate `expressions` after load, save a full-page PNG screenshot."""
    proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        port = _devtools_port(profile, proc)
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        session = _Session(next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"])
        for domain in ("Page", "Runtime", "Log", "Network"):
            session.call(f"{domain}.enable")
        session.call("Page.navigate", url=page.resolve().as_uri())
        session.wait_for("Page.loadEventFired")
        visit = PageVisit()
        for expression in expressions:
            visit.results[expression] = session.call("Runtime.evaluate", expression=expression,
                                                     returnByValue=True)["result"].get("value")  # fmt: skip
        _screenshot(session, screenshot)
        _collect(session.events, visit)
        session.ws.close()
        return visit
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _screenshot(session: _Session, path: Path) -> None:
    size = session.call("Page.getLayoutMetrics")["cssContentSize"]
    session.call("Emulation.setDeviceMetricsOverride", width=1400, height=int(size["height"]),
                 deviceScaleFactor=1, mobile=False)  # fmt: skip
    data = session.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
    path.write_bytes(base64.b64decode(data))


def _collect(events: list[dict[str, Any]], visit: PageVisit) -> None:
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            visit.console_errors.append(json.dumps(params["exceptionDetails"])[:500])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
            visit.console_errors.append(json.dumps(params.get("args"))[:500])
        elif method == "Log.entryAdded" and params["entry"].get("level") in ("error", "warning"):
            visit.console_errors.append(params["entry"].get("text", ""))
        elif method == "Network.requestWillBeSent":
            visit.requests.append(params["request"]["url"])
        elif method == "Page.javascriptDialogOpening":
            visit.dialogs.append(params.get("message", ""))
