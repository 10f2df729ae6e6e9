"""LangChain: a retriever over mnemo's recall and a chat-message history
kept as a mnemo session.

    from mnemo import Memory
    from mnemo.langchain import MnemoChatMessageHistory, MnemoRetriever

    memory = Memory("memory.db")
    retriever = MnemoRetriever(memory=memory, k=5)
    docs = retriever.invoke("any allergies?")
    history = MnemoChatMessageHistory(memory, session_id="chat-1")

Needs `langchain-core` (`pip install "mnemo-rs[langchain]"`). `memory` is a
`Memory`, `Client` or `AsyncClient`.
"""

from __future__ import annotations

from typing import Any, Sequence

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from . import _log
from ._bind import AsyncApi

# LangChain's message types as mnemo's turn roles.
ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def _documents(answer: dict[str, Any]) -> list[Document]:
    return [
        Document(
            page_content=h["content"],
            id=h["id"],
            metadata={
                "id": h["id"],
                "type": h["type"],
                "score": h["score"],
                "namespace": h["namespace"],
                "explanation": h["explanation"],
                **({"layer": h["layer"], "tags": h["tags"]} if h["type"] == "memory" else {}),
                **({"session_id": h["session_id"]} if h.get("session_id") else {}),
            },
        )
        for h in answer["hits"]
    ]


class MnemoRetriever(BaseRetriever):
    """Documents from mnemo's hybrid recall, best first; each document's
    metadata keeps the hit's score and explanation."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any
    """A `Memory`, `Client` or `AsyncClient`."""
    k: int = 5
    """Hits to return."""
    include_episodes: bool = False
    """Search dialogue turns too."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if isinstance(self.memory, AsyncApi):
            raise TypeError("an AsyncClient answers `ainvoke`; use a Client or Memory for `invoke`")
        return _documents(
            self.memory.recall(query, limit=self.k, include_episodes=self.include_episodes)
        )

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        answer = await _log.call(
            self.memory, "recall", query, limit=self.k, include_episodes=self.include_episodes
        )
        return _documents(answer)


class MnemoChatMessageHistory(BaseChatMessageHistory):
    """A conversation's messages as the turns of one mnemo session: they
    reach long-term memory (consolidation distils them) and read back as
    the messages they were. `clear()` adds a turn that clears the
    conversation; nothing said is deleted."""

    def __init__(self, memory: Any, session_id: str) -> None:
        if isinstance(memory, AsyncApi):
            raise TypeError("MnemoChatMessageHistory needs a Memory or a Client")
        self.memory = memory
        self.session_id = session_id

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        items = [item for _, item in _log.replay(_log.turns(self.memory, self.session_id))]
        return messages_from_dict(items)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        for m in messages:
            text = m.content if isinstance(m.content, str) else str(m.text)
            turn = _log.item_turn(message_to_dict(m), text, ROLES.get(m.type, m.type))
            self.memory.add_turn(session_id=self.session_id, **turn)

    def clear(self) -> None:
        self.memory.add_turn(session_id=self.session_id, **_log.clear_turn())
