"""A framework's conversation kept as a mnemo session, for the adapters.

Each message or item is a dialogue turn whose attributes carry the
framework's own form of it (`mnemo_log.item`), so it reads back exactly.
Frameworks also remove: popping the last item, clearing the conversation.
mnemo keeps what it was told, so a removal is one more turn that withdraws
(`mnemo_log.withdraws`, an earlier turn's id) or clears (`mnemo_log.clears`)
what came before; reading replays the session. The withdrawn turns stay in
long-term memory, listed in the session with what withdrew them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ._bind import AsyncApi

KEY = "mnemo_log"
WITHDRAWN = "withdrawn"
# A session's turns read per request.
PAGE = 200


async def call(api: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """Calls `name` on `api`: awaited on an AsyncClient, on a thread otherwise."""
    if isinstance(api, AsyncApi):
        return await getattr(api, name)(*args, **kwargs)
    return await asyncio.to_thread(getattr(api, name), *args, **kwargs)


def turns(api: Any, session_id: str) -> list[dict[str, Any]]:
    """Every turn of a session, in order (synchronous `api`)."""
    out: list[dict[str, Any]] = []
    while True:
        try:
            page = api.session(session_id, limit=PAGE, offset=len(out))["episodes"]
        except LookupError:  # no turn yet: no session
            return out
        out += page
        if len(page) < PAGE:
            return out


async def aturns(api: Any, session_id: str) -> list[dict[str, Any]]:
    """Every turn of a session, in order (any `api`, through `call`)."""
    out: list[dict[str, Any]] = []
    while True:
        try:
            page = (await call(api, "session", session_id, limit=PAGE, offset=len(out)))["episodes"]
        except LookupError:  # no turn yet: no session
            return out
        out += page
        if len(page) < PAGE:
            return out


def replay(episodes: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """The live items: (turn id, item), in order, after withdrawals and clears."""
    live: dict[str, Any] = {}
    for e in episodes:
        log = (e.get("attributes") or {}).get(KEY)
        if not isinstance(log, dict):
            continue
        if log.get("clears"):
            live.clear()
        elif "withdraws" in log:
            live.pop(str(log["withdraws"]), None)
        elif "item" in log:
            live[e["id"]] = log["item"]
    return list(live.items())


def item_turn(item: Any, text: str, role: str) -> dict[str, Any]:
    """The keyword arguments of `add_turn` that keep `item`."""
    return {"content": text or f"({role})", "role": role, "attributes": {KEY: {"item": item}}}


def withdraw_turn(turn_id: str, text: str) -> dict[str, Any]:
    return {
        "content": f"(withdrawn) {text}".strip(),
        "role": WITHDRAWN,
        "attributes": {KEY: {"withdraws": turn_id}},
    }


def clear_turn() -> dict[str, Any]:
    return {
        "content": "(the conversation so far was cleared)",
        "role": WITHDRAWN,
        "attributes": {KEY: {"clears": True}},
    }
