"""The API's calls, each defined once: a function that turns Python
arguments into one request of the HTTP API (`Call`) and names the type its
answer decodes to. `Memory`, `Client` and `AsyncClient` bind every one of
them to their transport (`_bind.py`), so the three share names, arguments
and typed results by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Iterable, Literal, TypeVar
from urllib.parse import quote, urlencode

from . import types as t

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request: its method, path, query and JSON body, and how the answer reads."""

    method: str
    path: str
    query: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    # `json`: the answer is JSON; `text`: JSON lines, returned as text;
    # `lines`: the body sent is JSON lines (text), not JSON.
    answer: Literal["json", "text"] = "json"
    sends_lines: bool = False

    def target(self) -> str:
        """The path with its query string (values None are left out)."""
        query = {k: _text(v) for k, v in self.query.items() if v is not None}
        return self.path + ("?" + urlencode(query) if query else "")


def _text(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _id(x: str) -> str:
    return quote(x, safe="")


def _body(**fields: Any) -> dict[str, Any]:
    """A JSON body of the fields given (None means unset: the server's default)."""
    return {k: v for k, v in fields.items() if v is not None}


def remember(
    content: str,
    *,
    tags: Iterable[str] | None = None,
    importance: float | None = None,
    kind: t.Kind | None = None,
    attributes: dict[str, Any] | None = None,
    event_time: int | None = None,
    session_id: str | None = None,
    source: str | None = None,
) -> Call[t.Written]:
    """Stores a memory (deduplicated against what is stored)."""
    return Call("POST", "/memories", body=_body(
        content=content, tags=list(tags) if tags is not None else None, importance=importance,
        kind=kind, attributes=attributes, event_time=event_time, session_id=session_id,
        source=source,
    ))


def add_turn(
    content: str,
    *,
    role: str = "user",
    session_id: str | None = None,
    attributes: dict[str, Any] | None = None,
    event_time: int | None = None,
) -> Call[t.IngestOutcome]:
    """Stores a dialogue turn; a new session closes the namespace's open ones."""
    return Call("POST", "/episodes", body=_body(
        content=content, role=role, session_id=session_id, attributes=attributes,
        event_time=event_time,
    ))


def recall(
    query: str,
    *,
    limit: int | None = None,
    offset: int | None = None,
    include_episodes: bool | None = None,
    episodes_only: bool | None = None,
    kinds: Iterable[t.Kind] | None = None,
    layers: Iterable[t.Layer] | None = None,
    tags: Iterable[str] | None = None,
    min_score: float | None = None,
    since: int | None = None,
    until: int | None = None,
    expand: bool | None = None,
    rerank: bool | None = None,
    token_budget: int | None = None,
    exclude_session: str | None = None,
    dry: bool | None = None,
) -> Call[t.RecallResponse]:
    """Hybrid recall (vector, BM25, entities, fused), each hit with its explanation."""
    lists = lambda xs: list(xs) if xs is not None else None  # noqa: E731
    return Call("POST", "/recall", body=_body(
        query=query, limit=limit, offset=offset, include_episodes=include_episodes,
        episodes_only=episodes_only, kinds=lists(kinds), layers=lists(layers), tags=lists(tags),
        min_score=min_score, since=since, until=until, expand=expand, rerank=rerank,
        token_budget=token_budget, exclude_session=exclude_session, dry=dry,
    ))


def search(q: str, *, limit: int | None = None) -> Call[t.RecallResponse]:
    """Keyword and vector search, without reinforcing what it finds."""
    return Call("GET", "/search", query={"q": q, "limit": limit})


def context(
    prompt: str, *, session_id: str | None = None, limit: int | None = None
) -> Call[t.ContextBlock]:
    """What to inject before answering `prompt`: relevant facts, as markdown."""
    return Call("POST", "/context", body=_body(prompt=prompt, session_id=session_id, limit=limit))


def resume(*, context: str | None = None, hours: int | None = None) -> Call[t.ResumeBlock]:
    """Session-recovery context: Core, Recent, Topics, Triggers."""
    return Call("GET", "/resume", query={"context": context, "hours": hours})


def get(id: str) -> Call[t.Memory]:
    """One memory by id."""
    return Call("GET", f"/memories/{_id(id)}")


def list_memories(
    *,
    layer: t.Layer | None = None,
    kind: t.Kind | None = None,
    tag: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> Call[t.Memories]:
    """Live memories, newest first, filtered by layer, kind or tag."""
    return Call("GET", "/memories", query={
        "layer": layer, "kind": kind, "tag": tag, "limit": limit, "offset": offset,
    })


def edit(
    id: str,
    *,
    content: str | None = None,
    tags: Iterable[str] | None = None,
    importance: float | None = None,
    kind: t.Kind | None = None,
    attributes: dict[str, Any] | None = None,
) -> Call[t.Memory]:
    """Changes a memory; the earlier state is kept as a version (`history`)."""
    return Call("PATCH", f"/memories/{_id(id)}", body=_body(
        content=content, tags=list(tags) if tags is not None else None, importance=importance,
        kind=kind, attributes=attributes,
    ))


def history(id: str) -> Call[t.History]:
    """A memory's earlier states (edits, merges, reverts), oldest first, and now."""
    return Call("GET", f"/memories/{_id(id)}/history")


def forget(id: str, *, reason: str | None = None) -> Call[t.Memory]:
    """Moves a memory to the trash, with the reason (restorable)."""
    return Call("DELETE", f"/memories/{_id(id)}", query={"reason": reason})


def restore(id: str) -> Call[t.Memory]:
    """Brings a memory back from the trash."""
    return Call("POST", f"/memories/{_id(id)}/restore")


def trash(*, limit: int | None = None, offset: int | None = None) -> Call[t.Memories]:
    """What was deleted, merged or evicted, with the reason."""
    return Call("GET", "/trash", query={"limit": limit, "offset": offset})


def facts(
    *,
    subject: str | None = None,
    predicate: str | None = None,
    object: str | None = None,
    entity: str | None = None,
    hops: int | None = None,
    limit: int | None = None,
) -> Call[t.Facts]:
    """Valid facts, by subject, predicate, object, or around an entity."""
    return Call("GET", "/facts", query={
        "subject": subject, "predicate": predicate, "object": object, "entity": entity,
        "hops": hops, "limit": limit,
    })


def add_fact(
    subject: str,
    predicate: str,
    object: str,
    *,
    confidence: float | None = None,
    exclusive: bool | None = None,
    memory_id: str | None = None,
) -> Call[t.FactOutcome]:
    """Adds a fact; `exclusive` supersedes the subject's other objects."""
    return Call("POST", "/facts", body=_body(
        subject=subject, predicate=predicate, object=object, confidence=confidence,
        exclusive=exclusive, memory_id=memory_id,
    ))


def entity(name: str, *, limit: int | None = None) -> Call[t.Entities]:
    """An entity's profile and what is linked to it."""
    return Call("GET", f"/entities/{_id(name)}", query={"limit": limit})


def consolidate(*, dry: bool | None = None, if_changed: bool | None = None) -> Call[t.ConsolidateReport]:
    """One consolidation cycle now (Buffer → Working → Core, dedup, forgetting)."""
    return Call("POST", "/consolidate", body=_body(dry=dry, if_changed=if_changed))


def stats() -> Call[t.Stats]:
    """Counts by layer and kind, sessions, entities, facts, vectors."""
    return Call("GET", "/stats")


def session(id: str, *, limit: int | None = None, offset: int | None = None) -> Call[t.SessionTurns]:
    """A dialogue session and a page of its turns, in order."""
    return Call("GET", f"/sessions/{_id(id)}", query={"limit": limit, "offset": offset})


def export(*, vectors: bool | None = None) -> Call[str]:
    """Everything in the namespace as JSON lines (the trash and history too)."""
    return Call("GET", "/export", query={"vectors": vectors}, answer="text")


def import_lines(lines: str) -> Call[t.Counts]:
    """Imports an export (ids, times and counts kept; all or nothing)."""
    return Call("POST", "/import", body=lines, sends_lines=True)


# What `_bind.py` binds, in this order (the reference lists them so).
CALLS = (
    remember, add_turn, recall, search, context, resume, get, list_memories, edit, history,
    forget, restore, trash, facts, add_fact, entity, consolidate, stats, session, export, import_lines,
)
