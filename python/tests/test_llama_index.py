"""LlamaIndex (llama-index-core, pinned): the retriever and the memory block."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole

from mnemo.llama_index import MnemoMemoryBlock, MnemoRetriever

FACT = "The user's daughter is allergic to peanuts"


def test_the_retriever_returns_scored_nodes(api: Any) -> None:
    m = api.remember(FACT)
    api.remember("Bob prefers tea")
    nodes = MnemoRetriever(api, k=2).retrieve("peanut allergy")
    assert nodes[0].node.get_content() == FACT and nodes[0].node.node_id == m["id"]
    assert nodes[0].score and nodes[0].score > 0


async def test_the_memory_block_injects_and_keeps(api: Any) -> None:
    api.remember(FACT)
    block = MnemoMemoryBlock(memory=api, session_id="li-1")
    asked = [ChatMessage(role=MessageRole.USER, content="peanuts: what should I cook for my daughter?")]
    text = await block.aget(asked)
    assert FACT in text
    await block.aput([ChatMessage(role=MessageRole.ASSISTANT, content="A peanut-free curry.")])
    turns = api.session("li-1")["episodes"]
    assert [(t["source_role"], t["content"]) for t in turns] == [("assistant", "A peanut-free curry.")]
