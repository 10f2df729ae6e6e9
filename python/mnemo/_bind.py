"""The calls of `_calls.py` as methods: `Api` runs them on a synchronous
transport (the in-process engine, or httpx), `AsyncApi` awaits them on an
asynchronous one. Each method keeps its call's signature and result type,
for type checkers and `help()` alike.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any, Awaitable, Callable, Concatenate, ParamSpec, Protocol, Self, TypeVar

from . import _calls
from ._calls import Call
from .errors import from_answer

P = ParamSpec("P")
T = TypeVar("T")
NAMESPACE_HEADER = "X-Namespace"


class Answer(Protocol):
    status: int
    body: bytes


def request_parts(call: Call[Any], namespace: str | None) -> tuple[list[tuple[str, str]], bytes | None]:
    """The headers and body bytes a call sends."""
    headers = [("accept", "application/json")]
    if namespace is not None:
        headers.append((NAMESPACE_HEADER, namespace))
    if call.body is None:
        return headers, None
    if call.sends_lines:
        headers.append(("content-type", "application/x-ndjson"))
        return headers, str(call.body).encode()
    headers.append(("content-type", "application/json"))
    return headers, json.dumps(call.body).encode()


def decode(call: Call[T], status: int, body: bytes) -> T:
    """The call's result, or its typed exception."""
    if status >= 400:
        raise from_answer(status, body)
    if call.answer == "text":
        return body.decode()  # type: ignore[return-value]
    return json.loads(body) if body else None  # type: ignore[no-any-return]


def _sync(build: Callable[P, Call[T]]) -> Callable[Concatenate[Any, P], T]:
    @functools.wraps(build)
    def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._run(build(*args, **kwargs))

    return method


def _async(build: Callable[P, Call[T]]) -> Callable[Concatenate[Any, P], Awaitable[T]]:
    @functools.wraps(build)
    async def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._run(build(*args, **kwargs))

    return method


class Namespaced:
    """The namespace calls go to, and views of the same engine or
    connection in another one."""

    namespace: str

    def in_namespace(self, namespace: str) -> Self:
        """The same engine or connection, calling into another namespace."""
        view = copy.copy(self)
        view.namespace = namespace
        return view


class Api(Namespaced):
    """Every call of the API, run synchronously (`Memory`, `Client`)."""

    def _run(self, call: Call[T]) -> T:  # pragma: no cover - each transport defines it
        raise NotImplementedError

    remember = _sync(_calls.remember)
    add_turn = _sync(_calls.add_turn)
    recall = _sync(_calls.recall)
    search = _sync(_calls.search)
    context = _sync(_calls.context)
    resume = _sync(_calls.resume)
    get = _sync(_calls.get)
    list_memories = _sync(_calls.list_memories)
    edit = _sync(_calls.edit)
    history = _sync(_calls.history)
    forget = _sync(_calls.forget)
    restore = _sync(_calls.restore)
    trash = _sync(_calls.trash)
    facts = _sync(_calls.facts)
    add_fact = _sync(_calls.add_fact)
    entity = _sync(_calls.entity)
    consolidate = _sync(_calls.consolidate)
    stats = _sync(_calls.stats)
    session = _sync(_calls.session)
    export = _sync(_calls.export)
    import_lines = _sync(_calls.import_lines)


class AsyncApi(Namespaced):
    """Every call of the API, awaited (`AsyncClient`)."""

    async def _run(self, call: Call[T]) -> T:  # pragma: no cover - each transport defines it
        raise NotImplementedError

    remember = _async(_calls.remember)
    add_turn = _async(_calls.add_turn)
    recall = _async(_calls.recall)
    search = _async(_calls.search)
    context = _async(_calls.context)
    resume = _async(_calls.resume)
    get = _async(_calls.get)
    list_memories = _async(_calls.list_memories)
    edit = _async(_calls.edit)
    history = _async(_calls.history)
    forget = _async(_calls.forget)
    restore = _async(_calls.restore)
    trash = _async(_calls.trash)
    facts = _async(_calls.facts)
    add_fact = _async(_calls.add_fact)
    entity = _async(_calls.entity)
    consolidate = _async(_calls.consolidate)
    stats = _async(_calls.stats)
    session = _async(_calls.session)
    export = _async(_calls.export)
    import_lines = _async(_calls.import_lines)
