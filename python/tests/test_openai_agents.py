"""The OpenAI Agents SDK (openai-agents, pinned): a real `Runner` with a
scripted OpenAI-compatible model on 127.0.0.1, mnemo's tools and session."""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

import mnemo
from mnemo.openai_agents import MnemoSession, memory_tools

FACT = "The user's daughter is allergic to peanuts"
set_tracing_disabled(True)


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    call = {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return {"tool_calls": [call]}


def agent(memory: Any, llm: Any) -> Agent:
    client = AsyncOpenAI(base_url=llm.url, api_key="scripted")
    model = OpenAIChatCompletionsModel(model="scripted", openai_client=client)
    return Agent(name="Assistant", instructions="Use your memory.", model=model, tools=memory_tools(memory))


async def test_an_agent_remembers_recalls_and_resumes(memory: mnemo.Memory, llm: Any) -> None:
    llm.script = [tool_call("remember", fact=FACT), {"content": "I'll remember that."}]
    first = await Runner.run(agent(memory, llm), "My daughter is allergic to peanuts.", session=MnemoSession("a1", memory))
    assert first.final_output == "I'll remember that."
    assert memory.recall("peanuts")["hits"][0]["content"] == FACT

    # A new process would start here: the session reads back from mnemo.
    llm.script = [tool_call("recall", query="daughter allergy"), {"content": "Peanuts."}]
    session = MnemoSession("a1", memory)
    second = await Runner.run(agent(memory, llm), "What is my daughter allergic to?", session=session)
    assert second.final_output == "Peanuts."
    # The model saw the first run's conversation, and the recall tool's answer.
    assert "My daughter is allergic to peanuts." in json.dumps(llm.asked[-2]["messages"])
    assert FACT in json.dumps(llm.asked[-1]["messages"])

    items = await session.get_items()
    assert items[0]["content"] == "My daughter is allergic to peanuts."
    assert await session.get_items(limit=2) == items[-2:]
    # Popping withdraws the last item; clearing empties the session. The
    # turns stay in mnemo, with what withdrew them.
    assert await session.pop_item() == items[-1]
    assert await session.get_items() == items[:-1]
    await session.clear_session()
    assert await session.get_items() == []
    assert await session.pop_item() is None
    assert len(memory.session("a1")["episodes"]) == len(items) + 2


async def test_the_session_awaits_an_async_client(server: str) -> None:
    async with mnemo.AsyncClient(server) as c:
        session = MnemoSession("a2", c)
        await session.add_items([{"role": "user", "content": "hello"}])
        assert await session.get_items() == [{"role": "user", "content": "hello"}]
