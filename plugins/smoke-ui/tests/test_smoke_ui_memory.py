"""Memory of a real server process under a flood and an oversize body
(issue 21, row 7). The server runs in its own process (``flood_server.py``) so
its resident memory can be read from ``/proc/<pid>/status``."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

SERVER = Path(__file__).with_name("flood_server.py")
MiB = 1024 * 1024
TIMEOUT = 120


def memory(pid: int) -> dict[str, int]:
    """VmRSS (now) and VmHWM (peak) of ``pid``, in bytes."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, Any]]:
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to read the server's memory")
    proc = subprocess.Popen([sys.executable, str(SERVER)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"the flood server did not start: {proc.communicate(timeout=30)[1]}")
        info = json.loads(line)
        yield info
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


class Reader:
    """An event-stream reader that behaves like the page: it reads every
    event and, when the server ends its stream (it fell behind), reconnects
    with ``Last-Event-ID``."""

    def __init__(self, client: httpx.Client, token: str) -> None:
        self.client = client
        self.token = token
        self.last_id = 0
        self.reconnects = -1

    def until_run_ends(self, session_id: str) -> str:
        while True:
            self.reconnects += 1
            headers = {"X-Smoke-Token": self.token, "Last-Event-ID": str(self.last_id)}
            with self.client.stream("GET", "/api/events", headers=headers) as response:
                assert response.status_code == 200
                for line in response.iter_lines():
                    if line.startswith("id: "):
                        self.last_id = int(line[4:])
                    elif line.startswith("data: ") and '"type": "run.' in line[:40] and session_id in line:
                        event = json.loads(line[6:])
                        if event["type"] in ("run.completed", "run.failed", "run.interrupted"):
                            return str(event["type"])


def stalled_stream(url: str, token: str) -> socket.socket:
    """An open event stream whose reader never reads (a frozen tab)."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(f"GET /api/events?token={token} HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n".encode())
    return sock


def run(client: httpx.Client, reader: Reader, token: str, task: str) -> None:
    res = client.post("/api/runs", json={"task": task}, headers={"X-Smoke-Token": token})
    assert res.status_code == 202, res.text
    assert reader.until_run_ends(res.json()["session_id"]) == "run.completed"


@pytest.mark.slow
def test_three_flood_runs_keep_the_server_within_twice_its_idle_memory(server: dict[str, Any]) -> None:
    pid, token = server["pid"], server["token"]
    with httpx.Client(base_url=server["url"], timeout=TIMEOUT) as client:
        reader = Reader(client, token)
        run(client, reader, token, "flood 100 4096")  # warm up: every lazy import is done
        idle = memory(pid)["VmRSS"]
        frozen = stalled_stream(server["url"], token)
        try:
            for _ in range(3):  # 3 x 20,000 chunks x 4 KiB = 240 MiB of output
                run(client, reader, token, "flood 20000 4096")
            after = memory(pid)
        finally:
            frozen.close()
        state = client.get("/api/state", headers={"X-Smoke-Token": token}).json()
    assert state["status"] == "completed"
    print(f"\nidle {idle / MiB:.1f} MiB, after 3 floods {after['VmRSS'] / MiB:.1f} MiB, "
          f"peak {after['VmHWM'] / MiB:.1f} MiB, reader reconnects {reader.reconnects}")
    assert after["VmRSS"] <= 2 * idle, (idle, after)
    assert after["VmHWM"] <= 2 * idle, (idle, after)  # not even the peak went past it


@pytest.mark.slow
def test_an_oversize_body_gets_413_without_the_memory_jumping(server: dict[str, Any]) -> None:
    pid, token = server["pid"], server["token"]
    parts = urlsplit(server["url"])
    with httpx.Client(base_url=server["url"], timeout=TIMEOUT) as client:
        assert client.get("/api/state", headers={"X-Smoke-Token": token}).status_code == 200
        before = memory(pid)["VmHWM"]

        # 1. a declared 300 MB body: refused from its Content-Length, before it is read
        with socket.create_connection((parts.hostname, parts.port), timeout=TIMEOUT) as sock:
            sock.sendall(
                (f"POST /api/runs HTTP/1.1\r\nHost: {parts.netloc}\r\nX-Smoke-Token: {token}\r\n"
                 "Content-Type: application/json\r\nContent-Length: 300000000\r\n\r\n").encode()
                + b'{"task": "' + b"x" * 65536
            )
            answer = b""
            while chunk := sock.recv(65536):  # the server closes after its answer
                answer += chunk
            head = answer.decode("latin-1")
        assert head.startswith("HTTP/1.1 413"), head[:200]
        assert "request body too large (300,000,000 bytes)" in head

        # 2. 48 MiB sent chunked (no length given): counted as it arrives, never held
        sent = threading.Event()

        def body() -> Iterator[bytes]:
            yield b'{"task": "'
            for _ in range(48 * 16):
                yield b"y" * 65536
            yield b'"}'
            sent.set()

        res = client.post("/api/runs", content=body(), headers={"X-Smoke-Token": token,
                                                                  "Content-Type": "application/json"})
        assert res.status_code == 413 and "too large" in res.json()["error"]
        assert sent.is_set()
        after = memory(pid)["VmHWM"]
        state = client.get("/api/state", headers={"X-Smoke-Token": token}).json()
    assert state["status"] == "idle" and not state["running"]
    print(f"\npeak before {before / MiB:.1f} MiB, after {after / MiB:.1f} MiB")
    assert after - before < 8 * MiB, (before, after)
