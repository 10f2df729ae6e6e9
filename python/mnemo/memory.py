"""In-process mode: `Memory` runs the engine `mnemo serve` runs — the core
component in wasmtime, a SQLite file (or Postgres), the local model — inside
this Python process, with no server and no network.

Requests go through the server's own router in memory (`_native.Engine`),
so validation, results and errors are the HTTP API's. The GIL is released
while the engine works; embedding backfill and the scheduled cycles run on
the engine's own threads.
"""

from __future__ import annotations

import os
from typing import Any, TypeVar

from ._bind import Api, decode, request_parts
from ._calls import Call
from .errors import MnemoError
from .model import bundled_model_dir

T = TypeVar("T")


class Memory(Api):
    """mnemo in this process.

    `path` is the database (a SQLite file, created if missing, or a
    `postgres://` URL); by default `<data dir>/memory.db`. `namespace` is
    the namespace calls use. `config` names a TOML config file. Any other
    keyword is a setting of docs/reference/configuration.md, over the
    environment's `MNEMO_*` (e.g. `embedder="hash"`, `llm_url=...`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        namespace: str = "default",
        config: str | os.PathLike[str] | None = None,
        **settings: Any,
    ) -> None:
        from ._native import Engine

        given = {k: _setting(v) for k, v in settings.items() if v is not None}
        # The model that came with the package, unless another is named.
        if "model_dir" not in given and not os.environ.get("MNEMO_MODEL_DIR"):
            bundled = bundled_model_dir()
            if bundled is not None:
                given["model_dir"] = str(bundled)
        self._engine = Engine(
            str(path) if path is not None else None,
            str(config) if config is not None else None,
            sorted(given.items()),
        )
        self.namespace = namespace

    def _run(self, call: Call[T]) -> T:
        headers, body = request_parts(call, self.namespace)
        status, answer = self._engine.request(call.method, call.target(), headers, body)
        return decode(call, status, answer)

    def close(self) -> None:
        """Stops the engine (every view of it) and closes the database once
        the work in flight is done; later calls raise."""
        if not self._engine.close():
            raise MnemoError("the engine did not stop in time; the database may still be open", code="unavailable", status=503)

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _setting(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
