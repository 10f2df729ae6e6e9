"""The API's types, as TypedDicts: what each call returns and accepts.

Generated from the OpenAPI document by scripts/gen_types.py; do not edit.
Regenerate: `python scripts/gen_types.py openapi.json > mnemo/types.py`.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, Required, TypedDict, Union


Action = Literal["reinforce", "delete", "restore", "confirm", "supersede", "promote", "demote", "evict", "merge", "gate-reject", "triage-keep", "distill", "fade", "consolidate-session", "inject", "reflect", "review", "scheduled", "edit", "revert", "cleanup", "overlap"]
"""What a line of the decision log, or a lifecycle action, records."""


class AnnStatus(TypedDict, total=False):
    """The index at a glance (`/health`)."""
    building: Required[int]
    """Builds in progress."""
    enabled: Required[bool]
    """Whether large partitions are searched through the HNSW index."""
    fresh: Required[int]
    """Vectors written since their segments were built (searched exactly)."""
    graphs: Required[int]
    """Partitions served by graphs."""
    points: Required[int]
    """Vectors in those segments."""
    segments: Required[int]
    """Graph segments over all partitions."""


class Batch(TypedDict, total=False):
    memories: Required[list[RememberRequest]]
    """What to remember, in order."""


class BatchWritten(TypedDict, total=False):
    """What a batch did."""
    created: Required[int]
    """New memories stored."""
    reinforced: Required[int]
    """Duplicates that reinforced a memory instead."""
    results: Required[list[RememberOutcome]]
    """Each item's outcome, in order."""


Channel = Literal["fts", "vector", "entity", "fact"]
"""A recall channel."""


class ChannelHit(TypedDict, total=False):
    channel: Required[Channel]
    """The search channel: `fts` (BM25), `vector` (cosine), `fact`, `entity`, …"""
    rank: Required[int]
    """The item's rank in that channel (1 is best)."""
    raw_score: Required[float]
    """The channel's own score (BM25, cosine, …)."""


class CircuitState(TypedDict, total=False):
    """One LLM step's circuit."""
    component: Required[LlmComponent]
    """The LLM step."""
    failures: Required[int]
    """Consecutive failures (unusable answers or provider errors)."""
    last_error: NotRequired[str | None]
    """The last failure's error."""
    last_error_at: NotRequired[int | None]
    """When it happened (milliseconds since the Unix epoch)."""
    open: Required[bool]
    """Open: the step is skipped (its items wait) until the cool-down passes
    and one probe call decides.
    """
    opened_at: NotRequired[int | None]
    """When the circuit opened (milliseconds since the Unix epoch)."""


class Conflicts(TypedDict, total=False):
    conflicts: Required[list[tuple[Fact, Fact]]]
    """Pairs of valid facts with one subject and predicate and two objects."""


class ConsolidateReport(TypedDict, total=False):
    actions: Required[list[LifecycleAction]]
    """Every lifecycle decision, in order."""
    decayed: Required[int]
    """Of those, the ones whose importance decays this epoch."""
    dry: Required[bool]
    """Whether this was a dry run (nothing written)."""
    epoch: Required[int]
    """The cycle's epoch number."""
    examined: Required[int]
    """Memories the cycle read: those it could act on
    (`lifecycle/candidates.rs`), not the whole store.
    """
    facts_added: Required[int]
    """Facts extracted from those sessions."""
    sessions: Required[list[str]]
    """Sessions consolidated into facts (seed 003)."""
    skipped: Required[bool]
    """Whether the cycle was skipped (`if_changed` and nothing new)."""
    topics: Required[int]
    """Topics whose index was rebuilt."""
    warnings: Required[list[str]]
    """What could not be done (e.g. an LLM step that failed and will be retried
    next cycle).
    """


class ConsolidateRequest(TypedDict, total=False):
    buffer_cap: NotRequired[int | None]
    """Buffer memories a namespace keeps before the weakest go to the trash
    (default `BUFFER_CAP`, 200).
    """
    buffer_drop_below: NotRequired[float | None]
    """A Buffer memory whose importance decays below this goes to the trash
    (default `DECAY_DROP_THRESHOLD`, 0.01).
    """
    dry: NotRequired[bool]
    """Report what the cycle would do without writing anything."""
    if_changed: NotRequired[bool]
    """Skip the cycle when nothing was written since the last one (seed 004's
    interval cycle).
    """
    namespace: NotRequired[str | None]
    """Only this namespace (default: the `X-Namespace` header, else every
    namespace).
    """
    session_idle_minutes: NotRequired[int | None]
    """A pending session is consolidated once idle this long, or when a newer
    session of its namespace started (default `SESSION_IDLE_MINUTES`).
    """


class ContextArgs(TypedDict, total=False):
    limit: NotRequired[int]
    """Facts to include (default 8)."""
    namespace: NotRequired[str | None]
    """Namespace (default: the `X-Namespace` header, else `default`)."""
    prompt: Required[str]
    """The user's message the answer is for."""
    session_id: NotRequired[str | None]
    """The current session: what was said in it is left out."""


class ContextBlock(TypedDict, total=False):
    """Seed 003's context injection block."""
    memories: Required[list[Memory]]
    """The facts from earlier sessions it lists."""
    reflection: NotRequired[Memory | None]
    """The latest weekly reflection, if any."""
    text: Required[str]
    """Markdown to prepend to the prompt (empty when nothing is relevant)."""


class Correction(TypedDict, total=False):
    content: Required[str]
    """The corrected statement; it supersedes the old one."""


class Counts(TypedDict, total=False):
    created: Required[int]
    """Import only: outcomes."""
    entities: Required[int]
    """Entities."""
    episodes: Required[int]
    """Turns."""
    existing: Required[int]
    """Import only: items already there (same id), left as they were."""
    facts: Required[int]
    """Facts, valid and superseded."""
    memories: Required[int]
    """Memories (the trash included)."""
    merged: Required[int]
    """Import only: duplicates folded into an existing memory."""
    sessions: Required[int]
    """Sessions."""
    vectors: Required[int]
    """Embedding vectors."""
    versions: Required[int]
    """Earlier states of memories."""


class Decision(TypedDict, total=False):
    action: Required[Action]
    """What was decided: promote, demote, merge, evict, supersede, inject,
    delete, restore, reinforce, edit, scheduled, …
    """
    at: Required[int]
    """When it was decided (milliseconds since the Unix epoch, UTC)."""
    detail: Required[str]
    """Why, for a person."""
    namespace: Required[str]
    """The namespace it concerns (`*` for store-wide entries such as scheduled
    runs).
    """
    target_id: Required[str]
    """The memory, episode or session it concerns (or the task, for a scheduled
    run).
    """


class Decisions(TypedDict, total=False):
    entries: Required[list[Decision]]
    """Newest first."""


class EnrichArgs(TypedDict, total=False):
    limit: NotRequired[int | None]
    """Items per target (memories, episodes) this run (default 50)."""


class EnrichReport(TypedDict, total=False):
    examined: Required[int]
    """Memories and turns re-read."""
    linked: Required[int]
    """Entity links added."""
    ran: Required[bool]
    """Whether the pass ran (it needs an `accurate` NER strategy)."""


class Entities(TypedDict, total=False):
    entities: Required[list[EntityProfile]]
    """Every entity of that name (one per type)."""


class Entity(TypedDict, total=False):
    aliases: Required[list[str]]
    """Other spellings seen."""
    canonical_name: Required[str]
    """The name mentions are folded under."""
    entity_type: Required[EntityType]
    """What NER took it for (person, place, organisation, …)."""
    id: Required[str]
    """Stable id (`ent_…`)."""
    mention_count: Required[int]
    """Memories and turns that mention it."""
    namespace: Required[str]
    """The namespace: a hard partition (one agent, user or project)."""
    summary: NotRequired[str | None]
    """A short description, when one was written."""


class EntityProfile(TypedDict, total=False):
    """"Tell me everything about X"."""
    entity: Required[Entity]
    """The entity."""
    episodes: Required[list[Episode]]
    """Turns that mention it, newest first."""
    memories: Required[list[Memory]]
    """Memories that mention it, newest first."""


EntityType = Literal["person", "project", "organization", "location", "email", "url", "date", "mention", "hashtag", "other"]
"""What an entity is."""


class Episode(TypedDict, total=False):
    attributes: Required[dict[str, Any]]
    """Free-form metadata (a JSON object)."""
    content: Required[str]
    """What was said."""
    created_at: Required[int]
    """When it was stored (milliseconds since the Unix epoch, UTC)."""
    event_time: Required[int]
    """When it was said (milliseconds since the Unix epoch, UTC)."""
    id: Required[str]
    """Stable id (`ep_…`)."""
    invalid_reason: NotRequired[str | None]
    """Why it was deleted; null while active."""
    namespace: Required[str]
    """The namespace: a hard partition (one agent, user or project)."""
    session_id: Required[str]
    """The dialogue session of the turn."""
    source_role: Required[str]
    """Who spoke (`user`, `assistant`, …)."""
    valid_until: NotRequired[int | None]
    """When it was deleted (milliseconds since the Unix epoch, UTC); null while
    active.
    """


class Error(TypedDict, total=False):
    """Every failure: a stable code and a message."""
    error: Required[dict[str, Any]]
    """What went wrong."""


class Explanation(TypedDict, total=False):
    channels: Required[list[ChannelHit]]
    """The channels that found the item, with its rank in each."""
    importance: Required[float]
    """The memory's importance factor."""
    layer_bonus: Required[float]
    """The layer's weight (Core highest)."""
    notes: Required[list[str]]
    """How the score was put together, for a person."""
    recency: Required[float]
    """0 to 1: decay since it was last touched."""
    relevance: Required[float]
    """0 to 1: BM25 and cosine blended (see the notes)."""
    rrf: Required[float]
    """Reciprocal rank fusion over those ranks."""


class Fact(TypedDict, total=False):
    confidence: Required[float]
    """0 to 1: how sure the source was."""
    id: Required[str]
    """Stable id (`fact_…`)."""
    memory_id: NotRequired[str | None]
    """The memory it was extracted from, if any."""
    namespace: Required[str]
    """The namespace: a hard partition (one agent, user or project)."""
    object: Required[str]
    """The value or the other entity."""
    predicate: Required[str]
    """The relation (`lives_in`, `works_at`, …)."""
    subject: Required[str]
    """Who or what the fact is about."""
    superseded_by: NotRequired[str | None]
    """The fact that replaced it."""
    valid_from: Required[int]
    """Since when it holds (milliseconds since the Unix epoch, UTC)."""
    valid_until: NotRequired[int | None]
    """Until when it held (milliseconds since the Unix epoch, UTC): set when
    superseded; null while valid.
    """


class FactInput(TypedDict, total=False):
    """A fact to add (API or consolidation)."""
    confidence: NotRequired[float | None]
    """0 to 1 (default 1)."""
    exclusive: NotRequired[bool]
    """The predicate holds one value: supersede the subject's other objects."""
    memory_id: NotRequired[str | None]
    """The memory it comes from, if any."""
    namespace: NotRequired[str]
    """Namespace (default: the `X-Namespace` header, else `default`)."""
    object: Required[str]
    """The value or the other entity."""
    predicate: Required[str]
    """The relation (`lives_in`, `works_at`, …)."""
    subject: Required[str]
    """Who or what the fact is about."""


class FactOutcome(TypedDict, total=False):
    fact: Required[Fact]
    """The fact stored."""
    superseded: Required[list[Fact]]
    """The facts it replaced (an exclusive predicate's other objects)."""


class Facts(TypedDict, total=False):
    facts: Required[list[Fact]]
    """The matching facts."""


class FadeReport(TypedDict, total=False):
    """Seed 003's nightly confidence fading."""
    examined: Required[int]
    """Memories looked at."""
    faded: Required[int]
    """Memories whose confidence faded."""
    pruned: Required[int]
    """Moved to the trash (reason `faded`, restorable)."""


class Health(TypedDict, total=False):
    """The server's state."""
    ann: NotRequired[AnnStatus | None]
    """The HNSW index, when one is in use."""
    core_version: Required[str]
    """The core component's version."""
    integrity: Required[Integrity]
    """Row counts that must agree (rows and their full-text index rows)."""
    llm: Required[LlmHealth]
    """The LLM steps: open circuits and the items waiting."""
    missing_vectors: Required[int]
    """Memories and turns still without a vector (the backfill embeds them)."""
    read_only: Required[bool]
    """The database cannot be written: reads answer, writes are 503."""
    status: Required[str]
    """`ok` while the store can be read."""
    text: NotRequired[TextStatus | None]
    """The per-namespace full-text index (this server's, on Postgres)."""
    vectors: Required[VectorState]
    """Whether vector search runs, and on which model."""


class History(TypedDict, total=False):
    """A memory as it is now and the states it had."""
    memory: Required[Memory]
    """The memory as it is now."""
    versions: Required[list[MemoryVersion]]
    """Oldest first."""


class IngestOutcome(TypedDict, total=False):
    entities: Required[int]
    """Entities linked to the turn."""
    episode: Required[Episode]
    """The turn stored."""
    new_session: Required[bool]
    """Whether this turn started a session."""
    pending_sessions: Required[list[str]]
    """The session it closed — the one it follows, when this turn starts a
    session and that one is still pending — to be consolidated in the
    background (seed 003's trigger). Older pending sessions are left to the
    consolidation cycle.
    """


class Integrity(TypedDict, total=False):
    episode_fts_rows: Required[int]
    """Rows of the turns' full-text index (equal to `episodes` when healthy)."""
    episodes: Required[int]
    """Turns stored."""
    memories: Required[int]
    """Memories stored (active and in the trash)."""
    memory_fts_rows: Required[int]
    """Rows of the memories' full-text index (equal to `memories` when
    healthy).
    """
    missing_vectors: Required[int]
    """Active rows without a vector (the background backfill's queue)."""
    orphan_links: Required[int]
    """Junction rows pointing at no memory, episode or entity."""


class IssuedKey(TypedDict, total=False):
    """A key made or rotated: its record, and the key itself — shown once."""
    created_at: Required[int]
    """When it was made (ms since the epoch)."""
    id: Required[str]
    """The key's id (the part after `mnemo_`; the secret follows it)."""
    key: Required[str]
    """The bearer token (`mnemo_<id>_<secret>`); the store keeps only its hash."""
    name: Required[str]
    """Who or what holds it."""
    namespaces: Required[list[str]]
    """What it writes and reads: names, prefixes ending in `*`, or `*` for
    every namespace.
    """
    reads: Required[list[str]]
    """What it only reads, in the same form."""
    revoked_at: NotRequired[int | None]
    """When it was revoked; a revoked key opens nothing."""
    role: Required[Role]
    """read, write or admin."""
    rotated_at: NotRequired[int | None]
    """When its secret was last replaced."""


class KeyInfo(TypedDict, total=False):
    """A key as listed: its record without the hash."""
    created_at: Required[int]
    """When it was made (ms since the epoch)."""
    id: Required[str]
    """The key's id (the part after `mnemo_`; the secret follows it)."""
    name: Required[str]
    """Who or what holds it."""
    namespaces: Required[list[str]]
    """What it writes and reads: names, prefixes ending in `*`, or `*` for
    every namespace.
    """
    reads: Required[list[str]]
    """What it only reads, in the same form."""
    revoked_at: NotRequired[int | None]
    """When it was revoked; a revoked key opens nothing."""
    role: Required[Role]
    """read, write or admin."""
    rotated_at: NotRequired[int | None]
    """When its secret was last replaced."""


Kind = Literal["episodic", "semantic", "procedural"]
"""What a memory is about; drives epoch decay speed (seed 004 §1)."""


Layer = Literal["buffer", "working", "core"]
"""Lifecycle layer (seed 004 §1). Every API write lands in `Buffer`."""


class LifecycleAction(TypedDict, total=False):
    """One lifecycle decision of a consolidation cycle."""
    action: Required[Action]
    """What the cycle did (promote, demote, merge, evict, supersede, decay, …)."""
    detail: Required[str]
    """Why, for a person."""
    from_layer: NotRequired[Layer | None]
    """Its layer before, for a move."""
    memory_id: Required[str]
    """The memory it acted on."""
    namespace: Required[str]
    """The namespace: a hard partition (one agent, user or project)."""
    to_layer: NotRequired[Layer | None]
    """Its layer after, for a move."""


LlmComponent = Literal["gate", "triage", "extract", "reflection", "merge", "reconcile", "distill", "review", "expand", "rerank", "naming", "ner", "compress"]
"""Which pipeline step calls the LLM: routes the model (seed 004 §7) and labels
the usage ledger.
"""


class LlmHealth(TypedDict, total=False):
    """What `/health` says of the LLM steps."""
    circuits: Required[list[CircuitState]]
    """Steps that failed since their last success; `open` ones are skipped
    until their cool-down passes and a probe call goes through.
    """
    parked: Required[int]
    """Of those, the ones parked until retried by hand."""
    waiting: Required[dict[str, int]]
    """Items waiting for a retry, by step."""


class LlmState(TypedDict, total=False):
    """The LLM steps' circuits and the items that wait."""
    circuits: Required[list[CircuitState]]
    """Every step that has failed since its last success."""
    waiting: Required[list[WaitingItem]]
    """Items whose step failed, oldest failure first."""


class Memories(TypedDict, total=False):
    """A page of memories."""
    memories: Required[list[Memory]]
    """Newest first."""


class Memory(TypedDict, total=False):
    access_count: Required[int]
    """How often a recall returned it (dry recalls do not count)."""
    attributes: Required[dict[str, Any]]
    """A JSON object, kept as text (shown as the object in JSON)."""
    confidence: Required[float]
    """0 to 1: how sure mnemo is it still holds; seed 003's nightly fading
    lowers it when it is not read.
    """
    content: Required[str]
    """The statement remembered, as the agent gave it (or as the lifecycle
    distilled or merged it).
    """
    created_at: Required[int]
    """When it was stored (milliseconds since the Unix epoch, UTC)."""
    created_epoch: Required[int]
    """The consolidation epoch it was stored in (cycles count epochs)."""
    decay_rate: Required[float]
    """Ebbinghaus decay rate of its confidence; 0 means confirmed (protected:
    never fades, never evicted).
    """
    event_time: Required[int]
    """When what it says happened or was said (milliseconds since the Unix
    epoch, UTC); defaults to `created_at`.
    """
    id: Required[str]
    """Stable id (`mem_…`)."""
    importance: Required[float]
    """0 to 1: how much it matters; decays in the Buffer each cycle, raised by
    reinforcement.
    """
    invalid_reason: NotRequired[str | None]
    """Why it left the active set (`deleted via API`, `faded`, `merged into …`,
    `corrected`, …); null while active.
    """
    kind: Required[Kind]
    """`episodic` (an event), `semantic` (a fact) or `procedural` (how to do
    something).
    """
    last_accessed: NotRequired[int | None]
    """When a recall last returned it (milliseconds since the Unix epoch, UTC);
    null if never.
    """
    layer: Required[Layer]
    """Buffer (new), Working (reinforced) or Core (lasting); consolidation
    moves memories between them.
    """
    modified_at: Required[int]
    """When its content, tags, layer or scores last changed (milliseconds since
    the Unix epoch, UTC).
    """
    namespace: Required[str]
    """The namespace: a hard partition (one agent, user or project)."""
    repetition_count: Required[int]
    """How often it was restated: duplicates folded into it instead of stored
    again.
    """
    session_id: NotRequired[str | None]
    """The dialogue session it came from, if any."""
    source: NotRequired[str | None]
    """Where it came from: the caller's label, or `consolidation` /
    `reflection` for what the lifecycle wrote; null if not given.
    """
    source_ids: Required[list[str]]
    """The memories and turns it was distilled or merged from (its provenance)."""
    source_role: NotRequired[str | None]
    """The speaker of the turn it was taken from (`user`, `assistant`), if any."""
    superseded_by: NotRequired[str | None]
    """The memory that replaced this one."""
    supersedes: NotRequired[str | None]
    """The memory this one replaced (a correction or a newer value)."""
    tags: Required[list[str]]
    """Labels; `trigger:<name>` tags are recalled before that action (seed
    004), lifecycle markers are kept apart from the user's tags.
    """
    valid_until: NotRequired[int | None]
    """When it left the active set (milliseconds since the Unix epoch, UTC):
    deleted, faded, evicted, merged or superseded; null while active.
    """


class MemoryPatch(TypedDict, total=False):
    attributes: NotRequired[dict[str, Any] | None]
    """New metadata (a JSON object), replacing the old."""
    content: NotRequired[str | None]
    """New text (the earlier state is kept as a version)."""
    importance: NotRequired[float | None]
    """0 to 1."""
    kind: NotRequired[Kind | None]
    """`episodic`, `semantic` or `procedural`."""
    tags: NotRequired[list[str] | None]
    """New tags, replacing the old ones (lifecycle markers are kept)."""


class MemoryVersion(TypedDict, total=False):
    """An earlier state of a memory, kept when a change replaced it."""
    action: Required[Action]
    """What replaced it (edit, merge, revert, reconcile, …)."""
    memory: Required[Memory]
    """The whole memory as it was."""
    memory_id: Required[str]
    """The memory it is a state of."""
    namespace: Required[str]
    """The namespace: a hard partition (one agent, user or project)."""
    reason: Required[str]
    """Why, for a person."""
    replaced_at: Required[int]
    """When this state was replaced (milliseconds since the Unix epoch, UTC)."""
    seq: Required[int]
    """Its number in the memory's history (1 is the oldest); `revert` takes it."""


class NewKey(TypedDict, total=False):
    """A key to make."""
    name: Required[str]
    """Who or what holds it (a label for the list)."""
    namespaces: Required[list[str]]
    """The namespaces it writes and reads: names, prefixes ending in `*`
    (`team-a*`), or `*` for every one.
    """
    reads: NotRequired[list[str]]
    """The namespaces it only reads (never writes nor reinforces), in the same
    form.
    """
    role: Required[Role]
    """`read`, `write` or `admin` (the operator's routes too)."""


class PricedSummary(TypedDict, total=False):
    """One row of the ledger's totals with its cost."""
    calls: Required[int]
    """Calls made."""
    component: Required[str]
    """The pipeline step (`embedding`, `gate`, `merge`, `extract`, …)."""
    cost_usd: NotRequired[float | None]
    """USD, from `MNEMO_PRICES`; absent when the model has no price."""
    failures: Required[int]
    """Calls that failed (timeouts, HTTP errors, malformed answers)."""
    input_tokens: Required[int]
    """Prompt tokens, summed."""
    model: Required[str]
    """The model that answered."""
    output_tokens: Required[int]
    """Completion tokens, summed."""
    total_ms: Required[int]
    """Time spent, summed (milliseconds)."""


class RecallRequest(TypedDict, total=False):
    dry: NotRequired[bool]
    """Do not reinforce what is returned (a look, not a use)."""
    episodes_only: NotRequired[bool]
    """Search dialogue turns only."""
    exclude_session: NotRequired[str | None]
    """Leave out what was said in this session (context injection)."""
    expand: NotRequired[bool | None]
    """LLM query expansion: on, off, or (unset) automatic when the best hit is
    weak (seed 004 §4.4). Never with the LLM level `off`.
    """
    include_episodes: NotRequired[bool]
    """Search dialogue turns too."""
    kinds: NotRequired[list[Kind]]
    """Only these kinds (default: all)."""
    layers: NotRequired[list[Layer]]
    """Only these layers (default: all)."""
    limit: NotRequired[int]
    """Hits to return (default 10, at most 200)."""
    min_score: NotRequired[float | None]
    """Leave out hits scoring under this."""
    namespace: NotRequired[str]
    """Namespace (default: the `X-Namespace` header, else `default`; a project
    namespace also reads `default`).
    """
    offset: NotRequired[int]
    """Hits to skip (paging)."""
    query: NotRequired[str]
    """What to look for, in the user's words."""
    relevance: NotRequired[Relevance]
    """How channel evidence becomes relevance."""
    rerank: NotRequired[bool]
    """Let the LLM re-order the page of hits (seed 004 §4.5)."""
    since: NotRequired[int | None]
    """Only what happened at or after this time (milliseconds since the Unix
    epoch, UTC).
    """
    sort: NotRequired[SortOrder]
    """`score` (default), `recent` or `accessed`."""
    source: NotRequired[str | None]
    """Only memories from this source."""
    tags: NotRequired[list[str]]
    """Rank memories carrying these tags higher (a soft boost, not a filter)."""
    token_budget: NotRequired[int | None]
    """Stop adding hits once their text would pass this many tokens."""
    until: NotRequired[int | None]
    """Only what happened before this time (milliseconds since the Unix epoch,
    UTC).
    """


class RecallResponse(TypedDict, total=False):
    candidates: Required[int]
    """Items the channels found before the page was cut."""
    channels_run: Required[list[Channel]]
    """The channels that ran."""
    expansions: Required[list[str]]
    """The LLM's alternative phrasings, when expansion ran and was used."""
    hits: Required[list[Hit]]
    """Best first."""
    reranked: Required[bool]
    """Whether the LLM re-ordered the hits."""
    warnings: Required[list[str]]
    """What was degraded (e.g. vector search off after an embedder change)."""


class ReflectArgs(TypedDict, total=False):
    force: NotRequired[bool]
    """Write one even if the last is less than six days old."""
    namespace: NotRequired[str | None]
    """Namespace (default: the `X-Namespace` header, else `default`)."""


class ReflectOutcome(TypedDict, total=False):
    memory: NotRequired[Memory | None]
    """The reflection written, if one was."""
    skipped: NotRequired[str | None]
    """Why none was written (too soon, nothing new, LLM off)."""


Relevance = Literal["blend", "semantic"]
"""How recall turns channel evidence into relevance: `blend` weighs BM25 and
the cosine equally (for a small local embedder); `semantic` is seed 004
§4.3's cosine-led relevance (for a strong embedder).
"""


class RememberOutcome(TypedDict, total=False):
    created: Required[bool]
    """True for a new memory; false when it reinforced a duplicate."""
    dedup_reason: NotRequired[str | None]
    """Why it counted as a duplicate (`exact`, `semantic`, …)."""
    memory: Required[Memory]
    """The memory stored or reinforced."""
    similarity: NotRequired[float | None]
    """The cosine similarity to that duplicate."""


class RememberRequest(TypedDict, total=False):
    attributes: NotRequired[dict[str, Any] | None]
    """Free-form metadata (a JSON object)."""
    content: NotRequired[str]
    """What to remember (at most 8,192 characters)."""
    event_time: NotRequired[int | None]
    """When it happened (milliseconds since the Unix epoch, UTC; default: now)."""
    importance: NotRequired[float | None]
    """0 to 1 (default 0.5)."""
    kind: NotRequired[Kind | None]
    """`episodic`, `semantic` (default) or `procedural`."""
    namespace: NotRequired[str]
    """Namespace (default: the `X-Namespace` header, else `default`)."""
    session_id: NotRequired[str | None]
    """The dialogue session it belongs to, if any."""
    skip_dedup: NotRequired[bool]
    """Store it even if a duplicate exists."""
    source: NotRequired[str | None]
    """Where it comes from (free text)."""
    tags: NotRequired[list[str]]
    """Labels (at most 20); `trigger:<name>` marks what to recall before that
    action.
    """


class ResumeBlock(TypedDict, total=False):
    """Seed 004's session-recovery context."""
    core: Required[list[Memory]]
    """Core memories (within the context's relevance, if one was given)."""
    recent: Required[list[Memory]]
    """Memories modified within the window."""
    text: Required[str]
    """The whole block as text, ready to put in a prompt."""
    topics: Required[list[TopicSummary]]
    """The topic index's leaves."""
    triggers: Required[list[str]]
    """`trigger:*` tags by how often their memories were read."""


class Retried(TypedDict, total=False):
    retried: Required[int]
    """Items made due now: the next cycle tries them."""


class RetryRequest(TypedDict, total=False):
    """Which waiting items to retry."""
    id: NotRequired[str | None]
    """One item (a session id, a memory id, `pair:<id>:<id>`); default all."""
    namespace: NotRequired[str | None]
    """Namespace (default: the `X-Namespace` header, else every namespace)."""


class Revert(TypedDict, total=False):
    version: Required[int]
    """The version to put back (a `seq` from the history)."""


ReviewAction = Literal["promote", "demote", "adjust", "merge", "delete"]


class ReviewArgs(TypedDict, total=False):
    dry: NotRequired[bool]
    """Report the proposals and the rules' verdicts without applying them."""
    namespace: NotRequired[str | None]
    """Namespace (default: the `X-Namespace` header, else every namespace)."""


class ReviewOp(TypedDict, total=False):
    """One operation the LLM review proposed, and the review rules' verdict."""
    allowed: Required[bool]
    """Passed the review rules."""
    content: NotRequired[str | None]
    """For a merge: the merged text."""
    ids: Required[list[str]]
    """The memories it concerns."""
    importance: NotRequired[float | None]
    """For an importance change: the value proposed."""
    op: Required[ReviewAction]
    """Delete is always refused: the review has no delete power."""
    reason: Required[str]
    """The reviewer's reason."""
    target_layer: NotRequired[Layer | None]
    """For a promotion or demotion: the layer proposed."""
    verdict: Required[str]
    """Why it was refused, when it was."""


class ReviewReport(TypedDict, total=False):
    dry: Required[bool]
    """Whether this was a dry run."""
    executed: Required[int]
    """Operations carried out (none when dry or under 70% allowed)."""
    ops: Required[list[ReviewOp]]
    """Every operation proposed, with its verdict."""
    safety: Required[float]
    """Allowed share of the proposed operations."""


Role = Literal["read"] | Literal["write"] | Literal["admin"]
"""What a key may do, each role including the ones before it."""


class Session(TypedDict, total=False):
    consolidated_at: NotRequired[int | None]
    """When seed 003's session consolidation last ran on it (milliseconds since
    the Unix epoch, UTC); null if not yet.
    """
    consolidated_turns: NotRequired[int]
    """The watermark: how many turns, in dialogue order, are consolidated."""
    first_seen_at: Required[int]
    """Its first turn's arrival (milliseconds since the Unix epoch, UTC)."""
    id: Required[str]
    """The session id the agent gave."""
    last_seen_at: Required[int]
    """Its latest turn's arrival (milliseconds since the Unix epoch, UTC)."""
    namespace: Required[str]
    """The namespace: a hard partition (one agent, user or project)."""
    turn_count: Required[int]
    """Turns stored."""


class SessionTurns(TypedDict, total=False):
    """A session and a page of its turns."""
    episodes: Required[list[Episode]]
    """In dialogue order."""
    session: Required[Session]
    """The session."""


class Sessions(TypedDict, total=False):
    sessions: Required[list[Session]]
    """Most recently active first."""


SortOrder = Literal["score", "recent", "accessed"]
"""The order of a page of hits."""


class Stats(TypedDict, total=False):
    """The store's counts."""
    active: Required[int]
    """Memories not in the trash."""
    buffer: Required[int]
    """Active memories in the Buffer."""
    core: Required[int]
    """Active memories in Core."""
    deleted: Required[int]
    """Memories in the trash (restorable)."""
    entities: Required[int]
    """Entities known."""
    episode_vectors: Required[int]
    """Turns with an embedding."""
    episodes: Required[int]
    """Dialogue turns stored."""
    episodic: Required[int]
    """Active episodic memories."""
    facts: Required[int]
    """Facts, valid and superseded."""
    memory_vectors: Required[int]
    """Memories with an embedding."""
    newest: NotRequired[int | None]
    """The newest memory's creation time (milliseconds since the Unix epoch,
    UTC); null when there is none.
    """
    procedural: Required[int]
    """Active procedural memories."""
    semantic: Required[int]
    """Active semantic memories."""
    sessions: Required[int]
    """Dialogue sessions seen."""
    total: Required[int]
    """Active memories (round 1's name for `active`)."""
    working: Required[int]
    """Active memories in Working."""


class TextStatus(TypedDict, total=False):
    """The derived full-text index at a glance (`/health`)."""
    building: Required[int]
    """Partitions being built (FTS5 answers their searches meanwhile)."""
    enabled: Required[bool]
    """Whether searches of named namespaces are answered by the index."""
    loaded: Required[int]
    """Partitions read from their saved files since the server started, instead
    of built from their tables (SQLite; `text_save_min_rows`).
    """
    partitions: Required[int]
    """(table, namespace) partitions held in memory."""
    postings: Required[int]
    """Postings in them (a row's distinct terms): the index's size."""
    rows: Required[int]
    """Rows in them."""


class TopicArgs(TypedDict, total=False):
    ids: Required[list[str]]
    """Topic ids from `resume` or `topics` (kb1, kb2, ...)."""
    namespace: NotRequired[str | None]
    """Namespace (default: the `X-Namespace` header, else `default`)."""


class TopicMemories(TypedDict, total=False):
    """A topic with its memories (a parent's are its leaves')."""
    children: Required[list[str]]
    """A parent's leaves."""
    memories: Required[list[Memory]]
    """Its memories (a parent's: its leaves')."""
    name: Required[str]
    """The topic's name."""
    parent: NotRequired[str | None]
    """A leaf's parent, if any."""


class TopicRef(TypedDict, total=False):
    """A topic of the index, without its memories."""
    children: Required[list[str]]
    """A parent's leaves."""
    id: Required[str]
    """`kb…` for a leaf, `kp…` for a parent."""
    name: Required[str]
    """The topic's name."""
    parent: NotRequired[str | None]
    """The parent's id, if any."""


class TopicSummary(TypedDict, total=False):
    id: Required[str]
    """`kb…` for a leaf, `kp…` for a parent."""
    name: Required[str]
    """The topic's name."""
    size: Required[int]
    """Memories under it."""


class Topics(TypedDict, total=False):
    topics: Required[list[TopicRef]]
    """Leaves and parents."""


class Trigger(TypedDict, total=False):
    """A `trigger:*` tag and how often its memories were read."""
    access: Required[int]
    """The summed access count of its memories."""
    name: Required[str]
    """The name after `trigger:`."""


class TriggerMemories(TypedDict, total=False):
    """The memories of one trigger."""
    memories: Required[list[Memory]]
    """The memories tagged `trigger:<name>`."""
    trigger: Required[str]
    """The trigger's name."""


class Triggers(TypedDict, total=False):
    triggers: Required[list[Trigger]]
    """Most read first."""


class Turn(TypedDict, total=False):
    attributes: NotRequired[dict[str, Any] | None]
    """Free-form metadata (a JSON object)."""
    content: NotRequired[str]
    """What was said."""
    event_time: NotRequired[int | None]
    """When it was said (milliseconds since the Unix epoch, UTC; default: now)."""
    namespace: NotRequired[str]
    """Namespace (default: the `X-Namespace` header, else `default`)."""
    role: NotRequired[str]
    """Who spoke (`user`, `assistant`, …)."""
    session_id: NotRequired[str]
    """The dialogue session; a new one closes the namespace's open sessions,
    which are then consolidated in the background.
    """


class Usage(TypedDict, total=False):
    """One LLM or embedding call, as the ledger records it (a row of
    `llm_usage`).
    """
    at: Required[int]
    """When the call was made (milliseconds since the Unix epoch, UTC)."""
    component: Required[str]
    """The pipeline step (`embedding`, `gate`, `merge`, `extract`, …)."""
    duration_ms: Required[int]
    """How long it took (milliseconds)."""
    input_tokens: Required[int]
    """Prompt tokens."""
    model: Required[str]
    """The model that answered."""
    outcome: Required[str]
    """`ok`, or the error kind (`timeout`, `http 429`, `malformed`, ...)."""
    output_tokens: Required[int]
    """Completion tokens."""


class UsageReport(TypedDict, total=False):
    """`GET /llm-usage`, `mnemo llm-usage` and the `llm_usage` tool's answer."""
    latest: Required[list[Usage]]
    """The latest calls, newest first."""
    summary: Required[list[PricedSummary]]
    """Totals per component and model, priced."""


VectorState = dict[str, Any]
"""Whether the vector channel runs, and for which model (`/health`, `mnemo
stats`): `{"state": "enabled", "model", "dimension"}` or `{"state":
"disabled", "reason"}`.
"""


class WaitingItem(TypedDict, total=False):
    """An item whose LLM step failed: it waits for a retry in a later cycle, or
    (parked) for a retry by hand. Nothing about it is lost.
    """
    failed_at: Required[int]
    """When it last failed (milliseconds since the Unix epoch)."""
    failures: Required[int]
    """Failures so far (a success forgets the item)."""
    id: Required[str]
    """A session id, a memory id, or a pair (`pair:<id>:<id>`)."""
    last_error: Required[str]
    """The last failure's error."""
    namespace: Required[str]
    """The item's namespace."""
    retry_at: NotRequired[int | None]
    """When a cycle may try it again; none when parked."""
    step: Required[LlmComponent]
    """The step that failed on it."""


class Written(TypedDict, total=False):
    """A remember's answer (`POST /memories`, MCP's `remember_fact`): the
    memory and, beside its fields, what the write did.
    """
    access_count: Required[int]
    """How often a recall returned it (dry recalls do not count)."""
    attributes: Required[dict[str, Any]]
    """A JSON object, kept as text (shown as the object in JSON)."""
    confidence: Required[float]
    """0 to 1: how sure mnemo is it still holds; seed 003's nightly fading
    lowers it when it is not read.
    """
    content: Required[str]
    """The statement remembered, as the agent gave it (or as the lifecycle
    distilled or merged it).
    """
    created: Required[bool]
    """True when a new memory was stored (201); false when it reinforced a
    duplicate (200).
    """
    created_at: Required[int]
    """When it was stored (milliseconds since the Unix epoch, UTC)."""
    created_epoch: Required[int]
    """The consolidation epoch it was stored in (cycles count epochs)."""
    decay_rate: Required[float]
    """Ebbinghaus decay rate of its confidence; 0 means confirmed (protected:
    never fades, never evicted).
    """
    dedup_reason: NotRequired[str | None]
    """Why it counted as a duplicate (`exact`, `semantic`, ...)."""
    event_time: Required[int]
    """When what it says happened or was said (milliseconds since the Unix
    epoch, UTC); defaults to `created_at`.
    """
    id: Required[str]
    """Stable id (`mem_…`)."""
    importance: Required[float]
    """0 to 1: how much it matters; decays in the Buffer each cycle, raised by
    reinforcement.
    """
    invalid_reason: NotRequired[str | None]
    """Why it left the active set (`deleted via API`, `faded`, `merged into …`,
    `corrected`, …); null while active.
    """
    kind: Required[Kind]
    """`episodic` (an event), `semantic` (a fact) or `procedural` (how to do
    something).
    """
    last_accessed: NotRequired[int | None]
    """When a recall last returned it (milliseconds since the Unix epoch, UTC);
    null if never.
    """
    layer: Required[Layer]
    """Buffer (new), Working (reinforced) or Core (lasting); consolidation
    moves memories between them.
    """
    modified_at: Required[int]
    """When its content, tags, layer or scores last changed (milliseconds since
    the Unix epoch, UTC).
    """
    namespace: Required[str]
    """The namespace: a hard partition (one agent, user or project)."""
    repetition_count: Required[int]
    """How often it was restated: duplicates folded into it instead of stored
    again.
    """
    session_id: NotRequired[str | None]
    """The dialogue session it came from, if any."""
    similarity: NotRequired[float | None]
    """The cosine similarity to the duplicate it reinforced."""
    source: NotRequired[str | None]
    """Where it came from: the caller's label, or `consolidation` /
    `reflection` for what the lifecycle wrote; null if not given.
    """
    source_ids: Required[list[str]]
    """The memories and turns it was distilled or merged from (its provenance)."""
    source_role: NotRequired[str | None]
    """The speaker of the turn it was taken from (`user`, `assistant`), if any."""
    superseded_by: NotRequired[str | None]
    """The memory that replaced this one."""
    supersedes: NotRequired[str | None]
    """The memory this one replaced (a correction or a newer value)."""
    tags: Required[list[str]]
    """Labels; `trigger:<name>` tags are recalled before that action (seed
    004), lifecycle markers are kept apart from the user's tags.
    """
    valid_until: NotRequired[int | None]
    """When it left the active set (milliseconds since the Unix epoch, UTC):
    deleted, faded, evicted, merged or superseded; null while active.
    """


class MemoryHit(Memory, total=False):
    """A Hit that is a Memory (`type` = 'memory')."""
    type: Required[Literal["memory"]]
    explanation: Required[Explanation]
    """Why it ranked where it did."""
    score: Required[float]
    """The final score the hits are ordered by."""


class EpisodeHit(Episode, total=False):
    """A Hit that is a Episode (`type` = 'episode')."""
    type: Required[Literal["episode"]]
    explanation: Required[Explanation]
    """Why it ranked where it did."""
    score: Required[float]
    """The final score the hits are ordered by."""


Hit = Union[MemoryHit, EpisodeHit]
"""What a hit is."""
