"""`mnemo mcp` and `/mcp` driven by the official Python SDK (`mcp`, pinned in
requirements.lock), over stdio (both protocol eras: the 2025-11-25 handshake
and the 2026-07-28 per-request form) and over streamable HTTP against a real
`mnemo serve` on 127.0.0.1.

The SDK checks every tool result against the tool's declared outputSchema
(it raises otherwise), so calling the tools is the structured-output test.
Run by `.ci/run` through tests/mcp-sdk/run; MNEMO_BIN names the binary.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

BIN = os.environ["MNEMO_BIN"]
FACT = "The user's daughter is allergic to peanuts"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def env(data: str, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "MNEMO_DATA_DIR": data, "MNEMO_EMBEDDER": "hash", **extra}


@asynccontextmanager
async def stdio(mode: str, **kw) -> AsyncIterator[Client]:
    extra = kw.pop("env", {})
    with tempfile.TemporaryDirectory() as data:
        params = StdioServerParameters(command=BIN, args=["mcp"], env=env(data, **extra))
        async with Client(params, mode=mode, **kw) as c:
            yield c


@asynccontextmanager
async def http() -> AsyncIterator[Client]:
    with tempfile.TemporaryDirectory() as data:
        server = subprocess.Popen(
            [BIN, "serve", "--port", "0"], env=env(data), stderr=subprocess.PIPE, text=True
        )
        try:
            url = None
            for line in server.stderr:
                if m := re.search(r"listening on (http://\S+)", line):
                    url = m.group(1)
                    break
            assert url, "mnemo serve did not start"
            async with Client(f"{url}/mcp") as c:
                yield c
        finally:
            server.terminate()
            server.wait(timeout=10)


def structured(result: types.CallToolResult) -> dict:
    assert not result.is_error, result
    assert result.structured_content is not None
    # Older clients read the text block: the same JSON.
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def every_tool_is_annotated_and_answers_its_schema(c: Client) -> None:
    tools = (await c.list_tools()).tools
    assert len(tools) >= 34
    for t in tools:
        assert t.title, t.name
        a = t.annotations
        assert a is not None and a.read_only_hint is not None and a.open_world_hint is not None, t.name
        if not a.read_only_hint:
            assert a.destructive_hint is not None and a.idempotent_hint is not None, t.name
        assert t.output_schema and t.output_schema.get("type") == "object", t.name
    by = {t.name: t.annotations for t in tools}
    assert by["search_memory"].destructive_hint is False
    assert by["forget"].destructive_hint is True
    assert by["get_memory"].read_only_hint is True

    saved = structured(await c.call_tool("remember_fact", {"content": FACT, "tags": ["health"]}))
    mid = saved["id"]
    # Each call's structured content is validated by the SDK against the
    # tool's outputSchema.
    calls = {
        "search_memory": {"query": "peanuts"},
        "recall": {"query": "peanuts", "dry": True},
        "get_memory": {"id": mid},
        "history": {"id": mid},
        "edit_memory": {"id": mid, "importance": 0.8},
        "confirm_fact": {"id": mid},
        "memory_stats": {},
        "context": {"prompt": "what should I cook for my daughter?"},
        "resume": {},
        "topics": {},
        "triggers": {},
        "recent": {},
        "ingest_turn": {"session_id": "s1", "role": "user", "content": "We moved to Porto last spring"},
        "sessions": {},
        "consolidate": {"dry": True},
        "add_fact": {"subject": "user", "predicate": "lives_in", "object": "Porto"},
        "query_facts": {"entity": "user"},
        "fact_graph": {"entity": "user"},
        "list_memories": {},
        "decisions": {},
        "llm_usage": {},
        "export": {},
        "fade": {},
        "enrich": {},
    }
    for name, args in calls.items():
        structured(await c.call_tool(name, args))
    corrected = structured(await c.call_tool("correct_fact", {"id": mid, "content": "The user's daughter is allergic to tree nuts"}))
    assert corrected["supersedes"] == mid
    forgotten = structured(await c.call_tool("forget", {"id": corrected["id"], "reason": "test"}))
    structured(await c.call_tool("restore", {"id": forgotten["id"]}))
    exported = structured(await c.call_tool("export", {}))
    structured(await c.call_tool("import", {"jsonl": exported["jsonl"]}))

    # Bad input: a tool error the model can read, nothing written. (The
    # vector counts are left out: the background embedding may fill one
    # between the two reads.)
    def stored(stats: dict) -> dict:
        return {k: v for k, v in stats.items() if not k.endswith("vectors")}

    before = stored(structured(await c.call_tool("memory_stats", {})))
    bad = await c.call_tool("get_memory", {"id": "mem_nope"})
    assert bad.is_error and json.loads(bad.content[0].text)["error"]["code"] == "not_found", bad
    bad = await c.call_tool("remember_fact", {"content": "   "})
    assert bad.is_error and json.loads(bad.content[0].text)["error"]["code"] == "invalid_input", bad
    assert stored(structured(await c.call_tool("memory_stats", {}))) == before


async def resources_prompts_completions(c: Client) -> None:
    saved = structured(await c.call_tool("remember_fact", {"content": FACT, "namespace": "u1"}))
    mid = saved["id"]
    listed = (await c.list_resources()).resources
    assert {str(r.uri) for r in listed} >= {"mnemo://namespaces/default/resume", "mnemo://namespaces/default/core"}
    templates = {t.uri_template for t in (await c.list_resource_templates()).resource_templates}
    assert "mnemo://namespaces/{namespace}/topics/{id}" in templates
    memory = await c.read_resource(f"mnemo://namespaces/u1/memories/{mid}")
    assert json.loads(memory.contents[0].text)["content"] == FACT
    history = await c.read_resource(f"mnemo://namespaces/u1/memories/{mid}/history")
    assert json.loads(history.contents[0].text)["memory"]["id"] == mid
    resume = await c.read_resource("mnemo://namespaces/u1/resume")
    assert "peanuts" in json.loads(resume.contents[0].text)["text"]
    with pytest.raises(Exception):
        await c.read_resource(f"mnemo://namespaces/u2/memories/{mid}")

    prompts = {p.name: p for p in (await c.list_prompts()).prompts}
    assert set(prompts) == {"start_session", "save_learned", "review_topic"}
    assert [a.name for a in prompts["review_topic"].arguments if a.required] == ["topic"]
    start = await c.get_prompt("start_session", {"namespace": "u1"})
    assert "peanuts" in start.messages[0].content.text
    saving = await c.get_prompt("save_learned", {"namespace": "u1", "notes": "They adopted a cat."})
    assert "remember_fact" in saving.messages[0].content.text and "peanuts" in saving.messages[0].content.text

    done = await c.complete(types.PromptReference(type="ref/prompt", name="start_session"), {"name": "namespace", "value": "u"})
    assert done.completion.values == ["u1"]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio(mode: str) -> None:
    async with stdio(mode) as c:
        assert c.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        await every_tool_is_annotated_and_answers_its_schema(c)
        await resources_prompts_completions(c)


@pytest.mark.anyio
async def test_streamable_http() -> None:
    async with http() as c:
        await every_tool_is_annotated_and_answers_its_schema(c)
        await resources_prompts_completions(c)


async def a_listened_resource_reports_its_change(c: Client) -> None:
    saved = structured(await c.call_tool("remember_fact", {"content": FACT}))
    uri = f"mnemo://namespaces/default/memories/{saved['id']}"
    async with c.listen(resource_subscriptions=[uri]) as sub:
        await c.call_tool("edit_memory", {"id": saved["id"], "content": "The user's daughter is allergic to sesame"})
        with anyio.fail_after(15):
            async for event in sub:
                assert str(getattr(event, "uri", "")) == uri, event
                break


@pytest.mark.anyio
async def test_a_subscribed_resource_reports_its_change() -> None:
    # The 2026-07-28 form, over stdio and over streamable HTTP.
    async with stdio("auto") as c:
        await a_listened_resource_reports_its_change(c)
    async with http() as c:
        await a_listened_resource_reports_its_change(c)
    # The 2025 form: resources/subscribe in a session.
    updates: list[str] = []

    async def on_message(message) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))

    async with stdio("legacy", message_handler=on_message) as c:
        saved = structured(await c.call_tool("remember_fact", {"content": FACT}))
        uri = "mnemo://namespaces/default/resume"
        await c.subscribe_resource(uri)
        await c.call_tool("remember_fact", {"content": "The user's son plays the cello"})
        with anyio.fail_after(15):
            while uri not in updates:
                await anyio.sleep(0.1)


def answer(text: str):
    async def sampler(context, params: types.CreateMessageRequestParams):
        answer.asked.append(params)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=text), model="scripted-1")

    return sampler


answer.asked = []


@pytest.mark.anyio
async def test_the_clients_model_serves_the_llm_steps() -> None:
    answer.asked.clear()
    # One scripted answer serves every step asked here (each reads its key).
    script = json.dumps({
        "phrases": ["peanut allergy", "allergic to peanuts"],
        "operations": [],
        "reflection": "The user looks after her family's health.",
    })
    async with stdio("legacy", sampling_callback=answer(script), env={"MNEMO_LLM_PROVIDER": "sampling"}) as c:
        await c.call_tool("remember_fact", {"content": FACT})
        r = structured(await c.call_tool("recall", {"query": "any allergies?", "expand": True}))
        assert r["expansions"] == ["peanut allergy", "allergic to peanuts"], r
        assert answer.asked and "search phrases" in answer.asked[0].system_prompt
        usage = structured(await c.call_tool("llm_usage", {}))
        assert any(u["component"] == "expand" and u["model"] == "sampling:scripted-1" for u in usage["summary"]), usage
        # The tools that need an LLM, or more state, answer their schemas too.
        note = structured(await c.call_tool("remember_fact", {"content": "Ask @carol about the #apollo launch"}))
        structured(await c.call_tool("remember_fact", {"content": "The user's son plays the cello on Wednesdays"}))
        structured(await c.call_tool("edit_memory", {"id": note["id"], "importance": 0.9}))
        structured(await c.call_tool("revert", {"id": note["id"], "version": 1}))
        assert structured(await c.call_tool("get_entity_info", {"name": "carol"}))["entities"]
        structured(await c.call_tool("review", {"dry": True}))
        reflection = structured(await c.call_tool("reflect", {"force": True}))
        assert "family" in json.dumps(reflection), reflection
        structured(await c.call_tool("consolidate", {}))
        # The server's topic watcher builds the trees once writes are quiet.
        with anyio.fail_after(30):
            while not (topics := structured(await c.call_tool("topics", {}))["topics"]):
                await anyio.sleep(0.25)
        structured(await c.call_tool("topic", {"ids": [topics[0]["id"]]}))


@pytest.mark.anyio
async def test_a_refusing_client_leaves_the_work_pending() -> None:
    async def refuse(context, params):
        return types.ErrorData(code=-1, message="the user declined")

    turns = ["I just started learning the violin", "My teacher is called Ines", "Lessons are on Tuesdays"]
    async with stdio("legacy", sampling_callback=refuse, env={"MNEMO_LLM_PROVIDER": "sampling", "MNEMO_LLM_LEVEL": "full"}) as c:
        for t in turns:
            structured(await c.call_tool("ingest_turn", {"session_id": "s1", "role": "user", "content": t}))
        # A turn of a new session closes s1; its consolidation (the LLM's
        # distillation) runs in the background and asks the client.
        structured(await c.call_tool("ingest_turn", {"session_id": "s2", "role": "user", "content": "Hello again"}))
        with anyio.fail_after(20):
            while True:
                usage = structured(await c.call_tool("llm_usage", {}))
                if any(u["model"] == "sampling" and u["outcome"] == "refused" for u in usage["latest"]):
                    break
                await anyio.sleep(0.2)
        # Nothing was lost: the turns are kept and the session still waits.
        pending = structured(await c.call_tool("sessions", {"pending": True}))
        assert "s1" in [s["id"] for s in pending["sessions"]], pending
        assert structured(await c.call_tool("memory_stats", {}))["episodes"] == 4


@pytest.mark.anyio
async def test_the_printed_config_starts_mnemo() -> None:
    with tempfile.TemporaryDirectory() as data:
        printed = subprocess.run(
            [BIN, "mcp", "--print-config", "cursor"],
            env=env(data), capture_output=True, text=True, check=True,
        ).stdout
        entry = json.loads("\n".join(l for l in printed.splitlines() if not l.startswith("#")))["mcpServers"]["mnemo"]
        assert os.path.isabs(entry["command"]) and entry["args"] == ["mcp"]
        assert entry["env"]["MNEMO_DATA_DIR"] == data
        params = StdioServerParameters(
            command=entry["command"], args=entry["args"], env={"PATH": os.environ["PATH"], **entry["env"]}
        )
        async with Client(params) as c:
            assert len((await c.list_tools()).tools) >= 34
