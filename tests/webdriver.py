"""A small W3C WebDriver client over the standard library, driving Debian's chromium through its chromedriver.

Enough for the viewer's browser tests (open a file, find, click, type keys, run a script, take a screenshot),
without a Python dependency: the protocol is JSON over HTTP to a chromedriver this module starts on loopback.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import tempfile
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the key W3C WebDriver names an element by
KEYS = {"Enter": "\ue007", "End": "\ue010", "ArrowDown": "\ue015", "ArrowUp": "\ue013"}
CHROMIUM = "/usr/bin/chromium"


def available() -> str | None:
    """None when chromium and chromedriver are installed, else what is missing."""
    missing = [name for name in ("chromium", "chromedriver") if shutil.which(name) is None]
    return ", ".join(missing) + " not installed (apt-get install chromium chromium-driver)" if missing else None


class WebDriverError(RuntimeError):
    pass


class Browser:
    """One headless chromium session."""

    def __init__(self, base: str, session: str) -> None:
        self.base = f"{base}/session/{session}"

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                return json.loads(reply.read())["value"]
        except urllib.error.HTTPError as exc:
            raise WebDriverError(exc.read().decode(errors="replace")[:2000]) from None

    def open(self, url: str) -> None:
        self._call("POST", "/url", {"url": url})

    def find(self, css: str) -> str:
        return str(self._call("POST", "/element", {"using": "css selector", "value": css})[ELEMENT])

    def find_all(self, css: str) -> list[str]:
        return [str(e[ELEMENT]) for e in self._call("POST", "/elements", {"using": "css selector", "value": css})]

    def click(self, css: str) -> None:
        self._call("POST", f"/element/{self.find(css)}/click", {})

    def text(self, css: str) -> str:
        return str(self._call("GET", f"/element/{self.find(css)}/text"))

    def script(self, source: str, *args: Any) -> Any:
        return self._call("POST", "/execute/sync", {"script": source, "args": list(args)})

    def keys(self, *names: str) -> None:
        """Press and release each key (a character, or a name in KEYS) on whatever has the focus."""
        actions = []
        for name in names:
            value = KEYS.get(name, name)
            actions += [{"type": "keyDown", "value": value}, {"type": "keyUp", "value": value}]
        self._call("POST", "/actions", {"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})

    def select(self, css: str, value: str) -> None:
        """Choose an option of a <select> by value, as a person's pick does (the change event fires)."""
        self.script("var s = document.querySelector(arguments[0]); s.value = arguments[1];"
                    "s.dispatchEvent(new Event('change'));", css, value)

    def screenshot(self, path: Path) -> Path:
        path.write_bytes(base64.b64decode(self._call("GET", "/screenshot")))
        return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def chromium(width: int = 1600, height: int = 1000) -> Iterator[Browser]:
    """A headless chromium (no network: the flags keep it from calling home) driven through chromedriver."""
    port = _free_port()
    driver = subprocess.Popen(["chromedriver", f"--port={port}"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        assert driver.stdout is not None
        for line in driver.stdout:  # chromedriver says when it listens: read until then, no polling
            if "started successfully" in line:
                break
        else:
            raise WebDriverError("chromedriver exited before it started")
        base = f"http://127.0.0.1:{port}"
        with tempfile.TemporaryDirectory(prefix="lg-chromium-") as profile:
            args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", f"--user-data-dir={profile}", f"--window-size={width},{height}"]
            caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
                "binary": CHROMIUM, "args": args}}}}
            request = urllib.request.Request(f"{base}/session", data=json.dumps(caps).encode(), method="POST",
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=120) as reply:
                session = json.loads(reply.read())["value"]["sessionId"]
            browser = Browser(base, session)
            try:
                yield browser
            finally:
                browser._call("DELETE", "")
    finally:
        driver.terminate()
        driver.wait(timeout=30)
        if driver.stdout is not None:
            driver.stdout.close()
