"""The OpenAI Agents SDK: a session that keeps an agent's conversation in
mnemo, and tools an agent calls to remember and recall.

    from agents import Agent, Runner
    from mnemo import Memory
    from mnemo.openai_agents import MnemoSession, memory_tools

    memory = Memory("memory.db")
    agent = Agent(name="Assistant", tools=memory_tools(memory))
    result = await Runner.run(agent, "Hi", session=MnemoSession("chat-1", memory))

Needs `openai-agents` (`pip install "mnemo-rs[openai-agents]"`). `memory` is a
`Memory`, `Client` or `AsyncClient`.
"""

from __future__ import annotations

import json
from typing import Any

from agents import FunctionTool, function_tool

from . import _log

# Recall hits a tool answer lists.
TOOL_HITS = 5


def _text(item: dict[str, Any]) -> str:
    """What an item says, for the turn's text (what recall searches)."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") or p.get("refusal") or "" for p in content if isinstance(p, dict)]
        return " ".join(p for p in parts if p)
    if item.get("type") == "function_call":
        return f"{item.get('name', 'tool')}({item.get('arguments', '')})"
    if item.get("type") == "function_call_output":
        out = item.get("output")
        return out if isinstance(out, str) else json.dumps(out)
    return ""


def _plain(item: Any) -> dict[str, Any]:
    if hasattr(item, "model_dump"):
        return item.model_dump(exclude_unset=True)
    return dict(item)


class MnemoSession:
    """The Agents SDK's `Session` over one mnemo session: items are turns
    (they reach long-term memory), read back exactly; `pop_item` and
    `clear_session` add a turn that withdraws or clears (nothing is
    deleted)."""

    session_settings = None

    def __init__(self, session_id: str, memory: Any) -> None:
        self.session_id = session_id
        self.memory = memory

    async def _live(self) -> list[tuple[str, Any]]:
        return _log.replay(await _log.aturns(self.memory, self.session_id))

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items = [item for _, item in await self._live()]
        return items[-limit:] if limit else items

    async def add_items(self, items: list[Any]) -> None:
        for item in map(_plain, items):
            role = str(item.get("role") or item.get("type") or "item")
            turn = _log.item_turn(item, _text(item), role)
            await _log.call(self.memory, "add_turn", session_id=self.session_id, **turn)

    async def pop_item(self) -> Any | None:
        live = await self._live()
        if not live:
            return None
        turn_id, item = live[-1]
        withdraw = _log.withdraw_turn(turn_id, _text(item))
        await _log.call(self.memory, "add_turn", session_id=self.session_id, **withdraw)
        return item

    async def clear_session(self) -> None:
        await _log.call(self.memory, "add_turn", session_id=self.session_id, **_log.clear_turn())


def memory_tools(memory: Any, *, hits: int = TOOL_HITS) -> list[FunctionTool]:
    """`remember` and `recall` as tools the agent calls."""

    @function_tool
    async def remember(fact: str) -> str:
        """Store a fact about the user or the task in long-term memory.

        Args:
            fact: The fact, as one self-contained sentence.
        """
        written = await _log.call(memory, "remember", fact)
        return json.dumps({"id": written["id"], "stored": written["content"]})

    @function_tool
    async def recall(query: str) -> str:
        """Search long-term memory for what is relevant to a question.

        Args:
            query: What to look for, in plain words.
        """
        answer = await _log.call(memory, "recall", query, limit=hits)
        return json.dumps([{"content": h["content"], "score": round(h["score"], 3)} for h in answer["hits"]])

    return [remember, recall]
