// The memory views: search with each hit's score explanation, memories by
// layer, kind and tag, one memory (fields, provenance, history with revert,
// audit trail, delete/restore/confirm) and the trash. The dialogue, graph
// and ledger views are in more.js. Each view is `async (arg, params) =>
// Node` and reads the API only.

import { api, h, link, num, qs, table, time } from "/ui/lib.js";
import { actionButton, badges, definitions, field, filterForm, idLink, memoryRows, select } from "/ui/parts.js";

const LAYERS = ["", "buffer", "working", "core"];
const KINDS = ["", "episodic", "semantic", "procedural"];

/** One factor of the score as a labelled bar (values in 0..1). */
function bar(label, value, title) {
  const fill = h("span", { class: "fill" });
  fill.style.width = `${Math.max(0, Math.min(1, value || 0)) * 100}%`;
  return h(
    "div",
    { class: "factor", title },
    h("span", { class: "factor-name" }, label),
    h("span", { class: "bar" }, fill),
    h("span", { class: "factor-value" }, num(value)),
  );
}

/** A hit's score explanation: channels and ranks, then the factors. */
export function explanation(x) {
  if (!x) return h("p", { class: "empty" }, "No explanation.");
  return h(
    "div",
    { class: "explanation" },
    table(
      x.channels,
      [
        ["channel", (c) => c.channel],
        ["rank", (c) => c.rank],
        ["raw score", (c) => Number(c.raw_score).toPrecision(4)],
      ],
      "Found by no channel.",
    ),
    h(
      "div",
      { class: "factors" },
      bar("relevance", x.relevance, "BM25 and cosine, blended"),
      bar("recency", x.recency, "decay since last touched"),
      bar("importance", x.importance, "the memory's importance"),
      bar("layer", x.layer_bonus, "Buffer, Working or Core weight"),
      bar("rrf × 30", (x.rrf || 0) * 30, `reciprocal rank fusion ${num(x.rrf, 5)}`),
    ),
    x.notes && x.notes.length > 0 && h("ul", { class: "notes" }, x.notes.map((n) => h("li", {}, n))),
  );
}

function hitCard(hit, i) {
  const isEpisode = hit.type === "episode";
  const title = isEpisode
    ? h("span", {}, "turn in ", link("session", hit.session_id), ` (${hit.source_role || "?"})`)
    : link("memory", hit.id, hit.id);
  return h(
    "article",
    { class: "hit" },
    h(
      "div",
      { class: "hit-head" },
      h("span", { class: "rank" }, `#${i + 1}`),
      h("span", { class: "score" }, num(hit.score)),
      title,
      !isEpisode && badges(hit),
    ),
    h("p", { class: "content" }, hit.content),
    h("details", { class: "why", open: i === 0 }, h("summary", {}, "why this rank"), explanation(hit.explanation)),
  );
}

async function search(_arg, p) {
  const q = h("input", { name: "q", value: p.q || "", placeholder: "what to recall", size: 40 });
  const form = filterForm(
    "search",
    [
      field("query", q),
      field("hits", h("input", { name: "limit", type: "number", min: 1, max: 50, value: p.limit || 10 })),
      field("dialogue turns too", h("input", { name: "episodes", type: "checkbox", value: "1", checked: !!p.episodes })),
    ],
    "Search",
  );
  if (!p.q) return h("section", {}, h("h1", {}, "Search"), form);
  const answer = await api("POST", "/recall", {
    query: p.q,
    limit: Number(p.limit || 10),
    include_episodes: !!p.episodes,
    dry: true,
  });
  return h(
    "section",
    {},
    h("h1", {}, "Search"),
    form,
    h(
      "p",
      { class: "meta" },
      `${answer.hits.length} hits of ${answer.candidates} candidates · channels: ${answer.channels_run.join(", ")}`,
      answer.expansions.length > 0 && ` · expanded: ${answer.expansions.join("; ")}`,
      answer.reranked && " · reranked by the LLM",
    ),
    answer.warnings.map((w) => h("p", { class: "warning" }, w)),
    answer.hits.length === 0 ? h("p", { class: "empty" }, "No hits.") : answer.hits.map(hitCard),
  );
}

const PAGE = 50;

async function memories(_arg, p) {
  const offset = Number(p.offset || 0);
  const form = filterForm("memories", [
    field("layer", select("layer", LAYERS, p.layer)),
    field("kind", select("kind", KINDS, p.kind)),
    field("tag", h("input", { name: "tag", value: p.tag || "", placeholder: "tag,tag" })),
  ]);
  const answer = await api(
    "GET",
    `/memories${qs({ layer: p.layer, kind: p.kind, tag: p.tag, limit: PAGE, offset })}`,
  );
  const page = (to) => h("a", { href: `#/memories${qs({ ...p, offset: to })}` }, to < offset ? "← newer" : "older →");
  return h(
    "section",
    {},
    h("h1", {}, "Memories"),
    form,
    memoryRows(answer.memories),
    h(
      "p",
      { class: "pager" },
      offset > 0 && page(Math.max(0, offset - PAGE)),
      " ",
      answer.memories.length === PAGE && page(offset + PAGE),
    ),
  );
}

async function memory(id) {
  const m = await api("GET", `/memories/${encodeURIComponent(id)}`);
  const [history, audit] = await Promise.all([
    api("GET", `/memories/${encodeURIComponent(id)}/history`),
    api("GET", `/decisions${qs({ target: id, limit: 100 })}`),
  ]);
  const deleted = m.valid_until !== null && m.valid_until !== undefined;
  const path = `/memories/${encodeURIComponent(id)}`;
  const actions = deleted
    ? [actionButton("Restore", () => api("POST", `${path}/restore`), "primary")]
    : [
        actionButton("Confirm (never fade)", () => api("POST", `${path}/confirm`)),
        actionButton("Delete", () => api("DELETE", `${path}${qs({ reason: "deleted in the console" })}`), "danger"),
      ];
  return h(
    "section",
    {},
    h("h1", {}, "Memory ", h("code", {}, m.id)),
    deleted && h("p", { class: "warning" }, `In the trash since ${time(m.valid_until)}: ${m.invalid_reason || ""}`),
    h("blockquote", { class: "content" }, m.content),
    h("div", { class: "actions" }, actions),
    definitions([
      ["namespace", m.namespace],
      ["layer · kind", badges(m)],
      ["importance", num(m.importance, 2)],
      ["confidence", num(m.confidence, 2)],
      ["decay rate", num(m.decay_rate, 3)],
      ["read", `${m.access_count} times, last ${time(m.last_accessed)}`],
      ["created", time(m.created_at)],
      ["modified", time(m.modified_at)],
      ["event time", time(m.event_time)],
      ["source", m.source ? `${m.source}${m.source_role ? ` (${m.source_role})` : ""}` : null],
      ["session", m.session_id ? link("session", m.session_id) : null],
      ["attributes", h("pre", {}, JSON.stringify(m.attributes, null, 2))],
    ]),
    h("h2", {}, "Provenance"),
    definitions([
      ["restated", `${m.repetition_count} times (duplicates folded into this memory)`],
      ["supersedes", idLink(m.supersedes)],
      ["superseded by", idLink(m.superseded_by)],
      [
        "sources",
        m.source_ids && m.source_ids.length
          ? h("ul", {}, m.source_ids.map((s) => h("li", {}, idLink(s))))
          : "—",
      ],
    ]),
    h("h2", {}, "History"),
    table(
      history.versions,
      [
        ["version", (v) => v.seq],
        ["action", (v) => v.action],
        ["replaced", (v) => time(v.replaced_at)],
        ["why", (v) => v.reason],
        ["content then", (v) => v.memory.content],
        ["", (v) => actionButton("Put back", () => api("POST", `${path}/revert`, { version: v.seq }))],
      ],
      "No earlier states: never edited, merged or reverted.",
    ),
    h("h2", {}, "Audit trail"),
    table(audit.entries, [
      ["at", (d) => time(d.at)],
      ["action", (d) => d.action],
      ["detail", (d) => d.detail],
    ]),
  );
}

async function trash() {
  const answer = await api("GET", "/trash");
  return h(
    "section",
    {},
    h("h1", {}, "Trash"),
    h("p", { class: "meta" }, "Deleted, faded, evicted and superseded memories: kept with their reason, restorable."),
    table(
      answer.memories,
      [
        ["content", (m) => link("memory", m.id, m.content)],
        ["", (m) => badges(m)],
        ["since", (m) => time(m.valid_until)],
        ["reason", (m) => m.invalid_reason],
        ["", (m) => actionButton("Restore", () => api("POST", `/memories/${encodeURIComponent(m.id)}/restore`))],
      ],
      "The trash is empty.",
    ),
  );
}

export const memoryViews = { search, memories, memory, trash };
