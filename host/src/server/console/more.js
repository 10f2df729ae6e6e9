// The dialogue, knowledge and bookkeeping views: sessions and their turns,
// the topic tree, facts and an entity's graph, the LLM usage ledger with
// cost per component, and the decision log with filters.

import { api, h, link, num, qs, table, time } from "/ui/lib.js";
import { definitions, field, filterForm, idLink, memoryRows, select } from "/ui/parts.js";

async function sessions(_arg, p) {
  const form = filterForm("sessions", [
    field("only not yet consolidated", h("input", { name: "pending", type: "checkbox", value: "true", checked: !!p.pending })),
  ]);
  const answer = await api("GET", `/sessions${qs({ pending: p.pending, limit: 200 })}`);
  return h(
    "section",
    {},
    h("h1", {}, "Sessions"),
    form,
    table(answer.sessions, [
      ["session", (s) => link("session", s.id)],
      ["namespace", (s) => s.namespace],
      ["turns", (s) => s.turn_count],
      ["first seen", (s) => time(s.first_seen_at)],
      ["last seen", (s) => time(s.last_seen_at)],
      ["consolidated", (s) => (s.consolidated_at ? `${time(s.consolidated_at)} (${s.consolidated_turns} turns)` : "not yet")],
    ]),
  );
}

async function session(id) {
  const answer = await api("GET", `/sessions/${encodeURIComponent(id)}`);
  const s = answer.session;
  return h(
    "section",
    {},
    h("h1", {}, "Session ", h("code", {}, s.id)),
    definitions([
      ["namespace", s.namespace],
      ["turns", s.turn_count],
      ["seen", `${time(s.first_seen_at)} → ${time(s.last_seen_at)}`],
      ["consolidated", s.consolidated_at ? time(s.consolidated_at) : "not yet"],
    ]),
    h(
      "ol",
      { class: "turns" },
      answer.episodes.map((e) =>
        h(
          "li",
          { class: `turn role-${e.source_role || "unknown"}` },
          h("span", { class: "who" }, e.source_role || "?"),
          h("span", { class: "when" }, time(e.event_time)),
          h("p", {}, e.content),
        ),
      ),
    ),
  );
}

/** The topic tree: parents (kp…) over leaves (kb…); a leaf opens below. */
async function topics(_arg, p) {
  const answer = await api("GET", "/topics");
  const byId = new Map(answer.topics.map((t) => [t.id, t]));
  const roots = answer.topics.filter((t) => !t.parent || !byId.has(t.parent));
  const node = (t) =>
    h(
      "li",
      {},
      h("a", { href: `#/topics${qs({ open: t.id })}` }, t.name || t.id),
      " ",
      h("code", {}, t.id),
      t.children && t.children.length > 0 && h("ul", {}, t.children.map((c) => byId.get(c)).filter(Boolean).map(node)),
    );
  let opened = null;
  if (p.open) {
    const got = await api("POST", "/topic", { ids: [p.open] });
    const topic = got[p.open] || { memories: [] };
    opened = h("div", { class: "opened" }, h("h2", {}, `Topic ${p.open}`), memoryRows(topic.memories || []));
  }
  return h(
    "section",
    {},
    h("h1", {}, "Topics"),
    roots.length === 0
      ? h("p", { class: "empty" }, "No topics yet: the index is built from Working and Core memories by consolidation.")
      : h("ul", { class: "tree" }, roots.map(node)),
    opened,
  );
}

const factColumns = [
  ["subject", (f) => link("entity", f.subject)],
  ["predicate", (f) => f.predicate],
  ["object", (f) => link("entity", f.object)],
  ["valid", (f) => `${time(f.valid_from)} → ${f.valid_until ? time(f.valid_until) : "now"}`],
  ["confidence", (f) => num(f.confidence, 2)],
  ["from memory", (f) => idLink(f.memory_id)],
];

async function facts(_arg, p) {
  const form = filterForm("facts", [
    field("subject", h("input", { name: "subject", value: p.subject || "" })),
    field("predicate", h("input", { name: "predicate", value: p.predicate || "" })),
    field("object", h("input", { name: "object", value: p.object || "" })),
    field("entity", h("input", { name: "entity", value: p.entity || "" })),
    field("history too", h("input", { name: "history", type: "checkbox", value: "1", checked: !!p.history })),
  ]);
  const filter = { subject: p.subject, predicate: p.predicate, object: p.object, entity: p.entity, limit: 200 };
  const path = p.history ? "/facts/history" : "/facts";
  const [answer, conflicts] = await Promise.all([api("GET", `${path}${qs(filter)}`), api("GET", "/facts/conflicts")]);
  return h(
    "section",
    {},
    h("h1", {}, "Facts"),
    form,
    table(answer.facts, factColumns, "No facts match."),
    h("h2", {}, "Conflicts"),
    table(conflicts.conflicts.flat(), factColumns, "No conflicting facts."),
  );
}

/** An entity's facts as an SVG graph: the entity in the middle. */
function graph(center, facts) {
  // Rings by hops from the centre; a node of the second ring sits beside
  // the neighbour that reached it, so edges rarely cross the middle.
  const size = 520;
  const mid = size / 2;
  const pos = new Map([[center, [mid, mid]]]);
  const angle = new Map([[center, 0]]);
  const neighbours = (n) => facts.flatMap((f) => (f.subject === n ? [f.object] : f.object === n ? [f.subject] : []));
  const first = [...new Set(neighbours(center))].filter((n) => n !== center);
  first.forEach((n, i) => angle.set(n, (2 * Math.PI * i) / Math.max(1, first.length)));
  const spread = Math.PI / Math.max(2, first.length);
  const rest = [];
  for (const parent of first) {
    const kids = [...new Set(neighbours(parent))].filter((n) => !angle.has(n));
    kids.forEach((n, i) => {
      angle.set(n, angle.get(parent) + ((i - (kids.length - 1) / 2) * spread) / Math.max(1, kids.length));
      rest.push(n);
    });
  }
  // Names reached otherwise (an edge between two far nodes) go round too.
  const stray = [...new Set(facts.flatMap((f) => [f.subject, f.object]))].filter((n) => !angle.has(n));
  stray.forEach((n, i) => angle.set(n, (2 * Math.PI * (i + 0.5)) / stray.length));
  for (const n of first) pos.set(n, [mid + 120 * Math.cos(angle.get(n)), mid + 120 * Math.sin(angle.get(n))]);
  for (const n of [...rest, ...stray]) pos.set(n, [mid + 220 * Math.cos(angle.get(n)), mid + 220 * Math.sin(angle.get(n))]);
  const svg = (tag, attrs, ...kids) => {
    const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    for (const k of kids) el.append(k);
    return el;
  };
  const edges = facts.map((f) => {
    const [x1, y1] = pos.get(f.subject);
    const [x2, y2] = pos.get(f.object);
    return svg(
      "g",
      { class: "edge" },
      svg("line", { x1, y1, x2, y2 }),
      svg("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4, "text-anchor": "middle" }, f.predicate),
    );
  });
  const nodes = [...pos].map(([n, [x, y]]) => {
    const a = svg("a", { href: `#/entity/${encodeURIComponent(n)}` });
    a.append(
      svg("circle", { cx: x, cy: y, r: n === center ? 10 : 7, class: n === center ? "center" : "" }),
      svg("text", { x, y: y + 22, "text-anchor": "middle" }, n),
    );
    return a;
  });
  return svg("svg", { viewBox: `0 0 ${size} ${size}`, class: "graph", role: "img" }, ...edges, ...nodes);
}

async function entity(name, p) {
  const hops = Number(p.hops || 2);
  const [profile, reach] = await Promise.all([
    api("GET", `/entities/${encodeURIComponent(name)}`).catch((e) => (e.status === 404 ? null : Promise.reject(e))),
    api("GET", `/facts/graph${qs({ entity: name, hops })}`),
  ]);
  return h(
    "section",
    {},
    h("h1", {}, "Entity ", h("q", {}, name)),
    profile
      ? profile.entities.map((p) =>
          h(
            "div",
            { class: "profile" },
            definitions(Object.entries(p.entity).map(([k, v]) => [k, typeof v === "object" && v !== null ? JSON.stringify(v) : v])),
            h("h2", {}, "Linked memories"),
            memoryRows(p.memories),
            h("h2", {}, "Linked turns"),
            table(p.episodes, [
              ["turn", (e) => e.content],
              ["session", (e) => link("session", e.session_id)],
              ["at", (e) => time(e.event_time)],
            ]),
          ),
        )
      : h("p", { class: "empty" }, "No entity profile (NER has not linked this name); its facts follow."),
    h("h2", {}, `Facts within ${hops} hops`),
    reach.facts.length > 0 ? graph(name, reach.facts) : null,
    table(reach.facts, factColumns, "No facts about this entity."),
  );
}

/** Prices per million tokens come from the server's configuration. */
async function usage() {
  const answer = await api("GET", "/llm-usage?limit=100");
  const steps = await api("GET", "/llm/waiting");
  const byComponent = new Map();
  for (const row of answer.summary) {
    const c = byComponent.get(row.component) || { calls: 0, failures: 0, input: 0, output: 0, cost: 0, priced: true };
    c.calls += row.calls;
    c.failures += row.failures;
    c.input += row.input_tokens;
    c.output += row.output_tokens;
    if (typeof row.cost_usd === "number") c.cost += row.cost_usd;
    else c.priced = false;
    byComponent.set(row.component, c);
  }
  const cost = (x) => (typeof x !== "number" ? "no price set" : x >= 0.01 || x === 0 ? `$${x.toFixed(4)}` : `$${x.toPrecision(3)}`);
  return h(
    "section",
    {},
    h("h1", {}, "LLM usage"),
    h("h2", {}, "LLM steps"),
    h("p", { class: "meta" }, "An open circuit skips its step until one probe call after the cool-down goes through; its items wait."),
    table(
      steps.circuits,
      [
        ["step", (c) => c.component],
        ["circuit", (c) => (c.open ? "open" : "closed")],
        ["failures in a row", (c) => c.failures],
        ["open since", (c) => (c.opened_at ? time(c.opened_at) : "")],
        ["last error", (c) => c.last_error || ""],
      ],
      "Every LLM step answers.",
    ),
    h("h2", {}, "Waiting for a retry"),
    table(
      steps.waiting,
      [
        ["namespace", (w) => w.namespace],
        ["step", (w) => w.step],
        ["item", (w) => idLink(w.id)],
        ["failures", (w) => w.failures],
        ["retry", (w) => (w.retry_at ? time(w.retry_at) : "parked: mnemo consolidate --retry")],
        ["last error", (w) => w.last_error],
      ],
      "Nothing waits.",
    ),
    h("h2", {}, "Cost per component"),
    table(
      [...byComponent].map(([component, c]) => ({ component, ...c })),
      [
        ["component", (c) => c.component],
        ["calls", (c) => c.calls],
        ["failures", (c) => c.failures],
        ["input tokens", (c) => c.input],
        ["output tokens", (c) => c.output],
        ["cost", (c) => (c.priced ? cost(c.cost) : `${cost(c.cost)} + unpriced models`)],
      ],
      "No LLM or embedding calls yet.",
    ),
    h("h2", {}, "By component and model"),
    table(answer.summary, [
      ["component", (r) => r.component],
      ["model", (r) => r.model],
      ["calls", (r) => r.calls],
      ["failures", (r) => r.failures],
      ["tokens in / out", (r) => `${r.input_tokens} / ${r.output_tokens}`],
      ["time", (r) => `${r.total_ms} ms`],
      ["cost", (r) => cost(r.cost_usd)],
    ]),
    h("h2", {}, "Latest calls"),
    table(answer.latest, [
      ["at", (r) => time(r.at)],
      ["component", (r) => r.component],
      ["model", (r) => r.model],
      ["outcome", (r) => r.outcome],
      ["tokens in / out", (r) => `${r.input_tokens} / ${r.output_tokens}`],
      ["time", (r) => `${r.duration_ms} ms`],
    ]),
  );
}

const ACTIONS = ["", "promote", "demote", "merge", "evict", "supersede", "inject", "delete", "restore", "reinforce", "edit", "scheduled"];

async function decisions(_arg, p) {
  const form = filterForm("decisions", [
    field("action", select("action", ACTIONS, p.action)),
    field("target", h("input", { name: "target", value: p.target || "", placeholder: "mem_… / ep_… / session" })),
    field("since", h("input", { name: "since", type: "date", value: p.since || "" })),
    field("entries", h("input", { name: "limit", type: "number", min: 1, max: 1000, value: p.limit || 100 })),
  ]);
  const since = p.since ? Date.parse(`${p.since}T00:00:00Z`) : undefined;
  const answer = await api("GET", `/decisions${qs({ action: p.action, target: p.target, since, limit: p.limit || 100 })}`);
  return h(
    "section",
    {},
    h("h1", {}, "Decisions"),
    h("p", { class: "meta" }, "What the engine decided and why, newest first."),
    form,
    table(answer.entries, [
      ["at", (d) => time(d.at)],
      ["action", (d) => h("span", { class: `badge action-${d.action}` }, d.action)],
      ["target", (d) => idLink(d.target_id)],
      ["namespace", (d) => d.namespace],
      ["detail", (d) => d.detail],
    ]),
  );
}

export const more = { sessions, session, topics, facts, entity, usage, decisions };
