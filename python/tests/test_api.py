"""The one API in both modes: in-process (`Memory`) and client (`Client`
against a real `mnemo serve`), the same calls, results and exceptions."""

from __future__ import annotations

from typing import Any

import pytest

import mnemo

FACT = "The user's daughter is allergic to peanuts"


def test_remember_then_recall_explains_its_hits(api: Any) -> None:
    written = api.remember(FACT, tags=["health"], importance=0.9)
    assert written["id"].startswith("mem_") and written["content"] == FACT
    answer = api.recall("peanuts allergy", limit=3)
    top = answer["hits"][0]
    assert top["id"] == written["id"] and top["type"] == "memory"
    assert top["score"] > 0 and top["explanation"]
    # The same fact again is folded into the first, not stored twice.
    again = api.remember(FACT)
    assert again["id"] == written["id"]
    assert api.stats()["active"] == 1


def test_edit_history_forget_restore_lose_nothing(api: Any) -> None:
    m = api.remember("Alice lives in Paris")
    edited = api.edit(m["id"], content="Alice lives in Lyon", tags=["home"])
    assert edited["content"] == "Alice lives in Lyon"
    history = api.history(m["id"])
    assert [v["memory"]["content"] for v in history["versions"]] == ["Alice lives in Paris"]
    assert history["versions"][0]["reason"]
    gone = api.forget(m["id"], reason="moved away")
    assert gone["id"] == m["id"]
    assert [x["id"] for x in api.trash()["memories"]] == [m["id"]]
    assert api.list_memories()["memories"] == []
    back = api.restore(m["id"])
    assert back["content"] == "Alice lives in Lyon"
    assert [x["id"] for x in api.list_memories()["memories"]] == [m["id"]]
    assert api.get(m["id"])["tags"] == ["home"]


def test_turns_sessions_context_and_resume(api: Any) -> None:
    api.remember(FACT)
    first = api.add_turn("I'm planning dinner for my daughter", role="user", session_id="s1")
    assert first["new_session"] is True
    api.add_turn("Happy to help plan it.", role="assistant", session_id="s1")
    turns = api.session("s1")["episodes"]
    assert [t["source_role"] for t in turns] == ["user", "assistant"]
    block = api.context("peanuts: what should I cook for my daughter?", session_id="s2")
    assert FACT in block["text"]
    resume = api.resume()
    assert FACT in [m["content"] for m in resume["recent"]]
    assert FACT in resume["text"]


def test_facts_and_entities(api: Any) -> None:
    added = api.add_fact("Alice", "lives_in", "Lyon", exclusive=True)
    assert added
    facts = api.facts(subject="Alice")["facts"]
    assert [(f["subject"], f["predicate"], f["object"]) for f in facts] == [("Alice", "lives_in", "Lyon")]
    # The fast NER pass of a turn links its dates (names wait for the
    # accurate pass, `enrich`).
    api.add_turn("I met Alice Martin in Paris yesterday", session_id="s1")
    profile = api.entity("yesterday")
    assert profile["entities"][0]["entity"]["entity_type"] == "date"


def test_consolidate_runs_a_cycle(api: Any) -> None:
    api.remember("Bob prefers tea")
    report = api.consolidate()
    assert report["dry"] is False and report["skipped"] is False
    assert report["examined"] >= 1
    dry = api.consolidate(dry=True)
    assert dry["dry"] is True
    # A dry run writes nothing: the next cycle is the next epoch.
    assert api.consolidate()["epoch"] == report["epoch"] + 1


def test_bad_input_is_a_typed_error_and_writes_nothing(api: Any) -> None:
    api.remember(FACT)
    before = api.stats()
    with pytest.raises(mnemo.InvalidInput) as e:
        api.remember("   ")
    assert e.value.status == 400 and e.value.code
    with pytest.raises(mnemo.InvalidInput):
        api.remember("x" * 9000)
    with pytest.raises(mnemo.InvalidInput):
        api.recall("peanuts", limit=-1)
    with pytest.raises(mnemo.NotFound) as missing:
        api.get("mem_missing")
    assert missing.value.code == "not_found" and isinstance(missing.value, LookupError)
    with pytest.raises(mnemo.InvalidInput):
        api.import_lines("{not json\n")
    assert api.stats() == before
    # The engine keeps serving.
    assert api.recall("peanuts")["hits"]


def test_namespaces_are_isolated(api: Any) -> None:
    alice, bob = api.in_namespace("alice"), api.in_namespace("bob")
    secret = alice.remember("Alice's locker code is 4512")
    assert bob.recall("locker code")["hits"] == []
    with pytest.raises(mnemo.NotFound):
        bob.get(secret["id"])
    assert bob.list_memories()["memories"] == []
    assert "4512" not in bob.export()
    assert alice.recall("locker code")["hits"][0]["id"] == secret["id"]


def test_export_imports_into_the_other_mode(memory: mnemo.Memory, client: mnemo.Client) -> None:
    m = memory.remember(FACT)
    memory.add_turn("hello", session_id="s1")
    memory.forget(memory.remember("to be trashed")["id"])
    lines = memory.export()
    counts = client.import_lines(lines)
    assert counts["memories"] == 2 and counts["episodes"] == 1
    assert client.get(m["id"])["content"] == FACT
    assert [x["content"] for x in client.trash()["memories"]] == ["to be trashed"]
    # And back: the round trip is line for line.
    assert sorted(client.export().splitlines()) == sorted(lines.splitlines())


async def test_the_async_client_speaks_the_same_api(server: str) -> None:
    async with mnemo.AsyncClient(server, namespace="async") as c:
        written = await c.remember(FACT)
        hits = (await c.recall("peanuts"))["hits"]
        assert hits[0]["id"] == written["id"]
        with pytest.raises(mnemo.NotFound):
            await c.get("mem_missing")


def test_an_unreachable_server_is_a_typed_error() -> None:
    with mnemo.Client("http://127.0.0.1:9", timeout=2) as c:
        with pytest.raises(mnemo.Unreachable):
            c.stats()


def test_a_closed_memory_refuses_calls(memory: mnemo.Memory) -> None:
    memory.close()
    with pytest.raises(RuntimeError):
        memory.stats()


def test_an_unknown_setting_is_refused(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="not_a_setting"):
        mnemo.Memory(tmp_path / "m.db", not_a_setting="1")


def _mnemo_threads() -> list[str]:
    """The names of this process's threads the engine started."""
    from pathlib import Path

    names = [(t / "comm").read_text().strip() for t in Path("/proc/self/task").iterdir()]
    return [n for n in names if n.startswith("mnemo-")]


def test_close_stops_the_engine_and_a_reopen_finds_everything(tmp_path: Any, data_dir: Any) -> None:
    # The process's shared threads start with its first engine and stay:
    # the plugins' epoch ticker, and wasmtime's compile pool (named after
    # the thread that started it). A first engine, opened and closed, has
    # them started whatever ran before this test.
    mnemo.Memory(tmp_path / "first.db", data_dir=data_dir, embedder="hash").close()
    before = _mnemo_threads()
    m = mnemo.Memory(tmp_path / "m.db", data_dir=data_dir, embedder="hash")
    written = m.remember(FACT)
    assert len(_mnemo_threads()) > len(before)
    m.close()
    assert _mnemo_threads() == before
    with mnemo.Memory(tmp_path / "m.db", data_dir=data_dir, embedder="hash") as again:
        assert again.get(written["id"])["content"] == FACT
