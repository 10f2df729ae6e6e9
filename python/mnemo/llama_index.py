"""LlamaIndex: a retriever over mnemo's recall and a memory block that
injects what mnemo knows into an agent's memory.

    from llama_index.core.memory import Memory as ChatMemory
    from mnemo import Memory
    from mnemo.llama_index import MnemoMemoryBlock, MnemoRetriever

    memory = Memory("memory.db")
    nodes = MnemoRetriever(memory, k=5).retrieve("any allergies?")
    chat_memory = ChatMemory.from_defaults(memory_blocks=[MnemoMemoryBlock(memory=memory)])

Needs `llama-index-core` (`pip install "mnemo-rs[llama-index]"`). `memory` is a
`Memory`, `Client` or `AsyncClient`.
"""

from __future__ import annotations

from typing import Any, List, Optional

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from pydantic import ConfigDict, Field

from . import _log
from ._bind import AsyncApi


def _nodes(answer: dict[str, Any]) -> list[NodeWithScore]:
    return [
        NodeWithScore(
            node=TextNode(
                id_=h["id"],
                text=h["content"],
                metadata={"type": h["type"], "namespace": h["namespace"]},
            ),
            score=h["score"],
        )
        for h in answer["hits"]
    ]


class MnemoRetriever(BaseRetriever):
    """Nodes from mnemo's hybrid recall, best first, scored."""

    def __init__(self, memory: Any, k: int = 5, include_episodes: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.memory = memory
        self.k = k
        self.include_episodes = include_episodes

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        if isinstance(self.memory, AsyncApi):
            raise TypeError("an AsyncClient answers `aretrieve`; use a Client or Memory for `retrieve`")
        answer = self.memory.recall(
            query_bundle.query_str, limit=self.k, include_episodes=self.include_episodes
        )
        return _nodes(answer)

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        answer = await _log.call(
            self.memory, "recall", query_bundle.query_str, limit=self.k,
            include_episodes=self.include_episodes,
        )
        return _nodes(answer)


class MnemoMemoryBlock(BaseMemoryBlock[str]):
    """A block of LlamaIndex's `Memory`: on each turn it asks mnemo what is
    relevant to the latest message (context injection, markdown), and the
    messages short-term memory lets go become mnemo turns of `session_id`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(default="mnemo", description="The block's name.")
    memory: Any = Field(description="A `Memory`, `Client` or `AsyncClient`.")
    session_id: Optional[str] = Field(default=None, description="The mnemo session turns go to.")

    async def _aget(self, messages: Optional[List[ChatMessage]] = None, **kwargs: Any) -> str:
        prompt = next((m.content for m in reversed(messages or []) if m.content), None)
        if not prompt:
            return ""
        block = await _log.call(self.memory, "context", str(prompt), session_id=self.session_id)
        return block["text"]

    async def _aput(self, messages: List[ChatMessage]) -> None:
        for m in messages:
            if m.content:
                await _log.call(
                    self.memory, "add_turn", str(m.content), role=str(m.role.value),
                    session_id=self.session_id,
                )


__all__ = ["MnemoMemoryBlock", "MnemoRetriever"]
