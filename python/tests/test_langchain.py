"""LangChain (langchain-core, pinned): the retriever and the chat history."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

import mnemo
from mnemo.langchain import MnemoChatMessageHistory, MnemoRetriever

FACT = "The user's daughter is allergic to peanuts"


def test_the_retriever_returns_recall_hits_as_documents(api: Any) -> None:
    m = api.remember(FACT)
    api.remember("Bob prefers tea")
    docs = MnemoRetriever(memory=api, k=2).invoke("peanut allergy")
    assert docs[0].page_content == FACT and docs[0].id == m["id"]
    assert docs[0].metadata["score"] > 0 and docs[0].metadata["explanation"]


async def test_the_retriever_awaits_an_async_client(server: str) -> None:
    async with mnemo.AsyncClient(server) as c:
        await c.remember(FACT)
        docs = await MnemoRetriever(memory=c, k=1).ainvoke("peanuts")
        assert docs[0].page_content == FACT


def test_the_history_keeps_messages_as_a_session(api: Any) -> None:
    history = MnemoChatMessageHistory(api, session_id="chat-1")
    history.add_messages([
        SystemMessage("Be brief."),
        HumanMessage("My daughter is allergic to peanuts."),
        AIMessage("Noted."),
    ])
    again = MnemoChatMessageHistory(api, session_id="chat-1")
    assert [(m.type, m.content) for m in again.messages] == [
        ("system", "Be brief."),
        ("human", "My daughter is allergic to peanuts."),
        ("ai", "Noted."),
    ]
    # The turns are mnemo's: recall over dialogue finds them.
    hits = api.recall("peanuts", episodes_only=True)["hits"]
    assert any("allergic" in h["content"] for h in hits)
    # Clearing empties the conversation and deletes nothing.
    again.clear()
    assert again.messages == []
    assert len(api.session("chat-1")["episodes"]) == 4
    again.add_user_message("Hello again")
    assert [m.content for m in again.messages] == ["Hello again"]
