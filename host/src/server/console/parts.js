// Pieces the views share: form fields and filter forms, badges, tables of
// memories, definition lists and buttons that act then re-render.

import { go, h, link, num, table, time } from "/ui/lib.js";

/** A labelled form field. */
export function field(label, input) {
  return h("label", {}, label, " ", input);
}

export function select(name, options, value) {
  return h(
    "select",
    { name },
    options.map((o) => h("option", { value: o, selected: o === (value || "") }, o || "any")),
  );
}

/** A form whose submission sets the hash to `name` with its fields. */
export function filterForm(name, fields, button = "Apply") {
  const form = h("form", { class: "filters" }, fields, h("button", { type: "submit" }, button));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const params = {};
    for (const [k, v] of new FormData(form)) {
      if (typeof v === "string" && v.trim() !== "") params[k] = v.trim();
    }
    go(name, "", params);
  });
  return form;
}

/** Layer, kind and tags of a memory as small badges. */
export function badges(m) {
  return h(
    "span",
    { class: "badges" },
    m.layer && h("span", { class: `badge layer-${m.layer}` }, m.layer),
    m.kind && h("span", { class: "badge" }, m.kind),
    (m.tags || []).map((t) => h("span", { class: "badge tag" }, t)),
  );
}

export function memoryRows(memories, extra = []) {
  return table(memories, [
    ["content", (m) => link("memory", m.id, m.content)],
    ["", (m) => badges(m)],
    ["importance", (m) => num(m.importance, 2)],
    ["confidence", (m) => num(m.confidence, 2)],
    ["modified", (m) => time(m.modified_at)],
    ...extra,
  ]);
}

/** A button that runs `action`, then re-renders the view. */
export function actionButton(label, action, cls = "") {
  return h(
    "button",
    {
      class: cls,
      onclick: async (e) => {
        e.target.disabled = true;
        try {
          await action();
          window.dispatchEvent(new HashChangeEvent("hashchange"));
        } catch (err) {
          e.target.disabled = false;
          e.target.after(h("span", { class: "error" }, ` ${err.code}: ${err.message}`));
        }
      },
    },
    label,
  );
}

export function idLink(id) {
  if (!id) return "—";
  if (id.startsWith("mem_")) return link("memory", id);
  return h("code", {}, id);
}

export function definitions(pairs) {
  return h(
    "dl",
    { class: "fields" },
    pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v === null || v === undefined ? "—" : v)]),
  );
}
