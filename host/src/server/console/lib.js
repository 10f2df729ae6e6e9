// The console's helpers: the settings (namespace, API key), the API call,
// and `h`, which builds the DOM from text nodes only, so stored text is
// never parsed as HTML.

export const settings = {
  get namespace() {
    return localStorage.getItem("mnemo.namespace") || "";
  },
  set namespace(v) {
    localStorage.setItem("mnemo.namespace", v);
  },
  // The key stays in this tab's session storage, never in a URL.
  get key() {
    return sessionStorage.getItem("mnemo.key") || "";
  },
  set key(v) {
    sessionStorage.setItem("mnemo.key", v);
  },
};

/** An element: `h("a", {href: "#/"}, "text", child, [more])`. */
export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}

/** A typed API error: the route's `{"error": {code, message}}`. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Calls the API; resolves to the JSON answer or throws an ApiError. */
export async function api(method, path, body) {
  const headers = { accept: "application/json" };
  if (settings.key) headers.authorization = `Bearer ${settings.key}`;
  if (settings.namespace) headers["x-namespace"] = settings.namespace;
  const init = { method, headers };
  if (body !== undefined) {
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(res.status, err.code || "http_error", err.message || res.statusText);
  }
  return data;
}

/** A query string from an object, leaving out empty values. */
export function qs(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** Milliseconds since the epoch as `YYYY-MM-DD HH:MM:SS` (UTC). */
export function time(ms) {
  if (ms === null || ms === undefined) return "—";
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

/** A number with at most `digits` decimals, as the API stored it otherwise. */
export function num(x, digits = 3) {
  if (x === null || x === undefined) return "—";
  return Number.isInteger(x) ? String(x) : x.toFixed(digits);
}

/** A link to the view of a memory, episode's session, entity or session. */
export function link(kind, id, text) {
  return h("a", { href: `#/${kind}/${encodeURIComponent(id)}` }, text ?? id);
}

/** A table: `columns` is a list of [heading, row => cell]. */
export function table(rows, columns, empty = "Nothing here yet.") {
  if (!rows || rows.length === 0) return h("p", { class: "empty" }, empty);
  return h(
    "table",
    {},
    h("thead", {}, h("tr", {}, columns.map(([title]) => h("th", {}, title)))),
    h(
      "tbody",
      {},
      rows.map((row) => h("tr", {}, columns.map(([, cell]) => h("td", {}, cell(row))))),
    ),
  );
}

/** The status line at the foot of the page. */
export function status(text, isError = false) {
  const el = document.getElementById("status");
  el.textContent = text;
  el.className = isError ? "error" : "";
}

/** Sets the hash (and so the view) without losing the browser's history. */
export function go(name, arg = "", params = {}) {
  const path = arg ? `${name}/${encodeURIComponent(arg)}` : name;
  location.hash = `#/${path}${qs(params)}`;
}

/** What went wrong, with the API's error code; a 401 points at the key. */
export function errorBox(e) {
  const hint =
    e.status === 401 ? "Enter the server's API key (MNEMO_API_KEY) at the top right." : null;
  return h(
    "div",
    { class: "error-box", role: "alert" },
    h("strong", {}, e.code || "error"),
    " ",
    e.message,
    hint && h("p", {}, hint),
  );
}
