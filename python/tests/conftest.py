"""Fixtures: mnemo in-process on a temporary file, and a real `mnemo serve`
on 127.0.0.1 for client mode (MNEMO_BIN names the binary), both on the
hash embedder (the local model's own test is test_quickstart.py); and a
scripted OpenAI-compatible chat server on 127.0.0.1 for the agent tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

import mnemo

BIN = os.environ.get("MNEMO_BIN", "mnemo")


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data directory for every test: the compiled core component is
    cached there once. Each test has its own database file."""
    return tmp_path_factory.mktemp("data")


@pytest.fixture
def memory(tmp_path: Path, data_dir: Path) -> Iterator[mnemo.Memory]:
    m = mnemo.Memory(tmp_path / "memory.db", data_dir=data_dir, embedder="hash")
    yield m
    m.close()


@contextlib.contextmanager
def serving(db: Path, data_dir: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """A real `mnemo serve` on `db` (hash embedder, a free port), its URL
    while the block runs; `env` adds settings."""
    env = {"PATH": os.environ["PATH"], "MNEMO_DATA_DIR": str(data_dir), "MNEMO_EMBEDDER": "hash", **(env or {})}
    proc = subprocess.Popen([BIN, "serve", "--db", str(db), "--port", "0"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        assert proc.stderr is not None
        for line in proc.stderr:
            if m := re.search(r"listening on (http://127\.0\.0\.1:\d+)", line):
                url = m.group(1)
                break
        assert url, "mnemo serve did not start"
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def server(tmp_path: Path, data_dir: Path) -> Iterator[str]:
    with serving(tmp_path / "server.db", data_dir) as url:
        yield url


@pytest.fixture
def client(server: str) -> Iterator[mnemo.Client]:
    c = mnemo.Client(server)
    yield c
    c.close()


@pytest.fixture(params=["memory", "client"])
def api(request: pytest.FixtureRequest) -> Any:
    """Each test of the shared API runs in both modes."""
    return request.getfixturevalue(request.param)


class Scripted:
    """An OpenAI-compatible `/chat/completions` that answers from a script
    (each answer a message dict: content, or tool_calls) and keeps what it
    was asked."""

    def __init__(self) -> None:
        self.script: list[dict[str, Any]] = []
        self.asked: list[dict[str, Any]] = []
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                scripted.asked.append(body)
                message = scripted.script.pop(0) if scripted.script else {"content": "ok"}
                answer = {
                    "id": f"chatcmpl-{len(scripted.asked)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "scripted"),
                    "choices": [{
                        "index": 0,
                        "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                        "message": {"role": "assistant", "content": None, **message},
                    }],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def llm() -> Iterator[Scripted]:
    s = Scripted()
    yield s
    s.httpd.shutdown()
