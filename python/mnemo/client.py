"""Client mode: `Client` (synchronous) and `AsyncClient` (asyncio) speak to
a running `mnemo serve` — one or many behind a balancer, SQLite or Postgres
behind them — over its HTTP API with httpx. Same methods, arguments,
results and exceptions as the in-process `Memory`.
"""

from __future__ import annotations

from typing import Any, TypeVar

import httpx

from ._bind import Api, AsyncApi, decode, request_parts
from ._calls import Call
from .errors import Unreachable

T = TypeVar("T")
# Seconds a call may take (a consolidation cycle with an LLM can be slow).
DEFAULT_TIMEOUT = 120.0


def _headers(api_key: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


class Client(Api):
    """A `mnemo serve` at `url` (e.g. `http://127.0.0.1:7878`)."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        namespace: str = "default",
        timeout: float = DEFAULT_TIMEOUT,
        http: httpx.Client | None = None,
    ) -> None:
        self._http = http or httpx.Client(base_url=url, headers=_headers(api_key), timeout=timeout)
        self.namespace = namespace

    def _run(self, call: Call[T]) -> T:
        headers, body = request_parts(call, self.namespace)
        try:
            r = self._http.request(call.method, call.target(), headers=headers, content=body)
        except httpx.TransportError as e:
            raise Unreachable(f"{self._http.base_url}: {e}", code="unreachable", status=0) from e
        return decode(call, r.status_code, r.content)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncClient(AsyncApi):
    """A `mnemo serve` at `url`, for asyncio code: every method is awaited."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        namespace: str = "default",
        timeout: float = DEFAULT_TIMEOUT,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self._http = http or httpx.AsyncClient(
            base_url=url, headers=_headers(api_key), timeout=timeout
        )
        self.namespace = namespace

    async def _run(self, call: Call[T]) -> T:
        headers, body = request_parts(call, self.namespace)
        try:
            r = await self._http.request(call.method, call.target(), headers=headers, content=body)
        except httpx.TransportError as e:
            raise Unreachable(f"{self._http.base_url}: {e}", code="unreachable", status=0) from e
        return decode(call, r.status_code, r.content)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
