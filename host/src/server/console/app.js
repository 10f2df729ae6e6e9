// mnemo's web console: a hash router over the HTTP API. Every view reads
// the same routes an agent uses (no private endpoints), sends the API key as
// a bearer token and the namespace as X-Namespace (lib.js), and builds its
// DOM from text nodes only.

import { errorBox, h, settings, status, time } from "/ui/lib.js";
import { more } from "/ui/more.js";
import { memoryViews } from "/ui/views.js";

const views = { ...memoryViews, ...more };

/** Parses `#/name/arg?k=v` into its view, argument and query. */
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?");
  const [name, ...rest] = path.split("/");
  return {
    name: name || "search",
    arg: rest.length ? decodeURIComponent(rest.join("/")) : "",
    params: Object.fromEntries(new URLSearchParams(query)),
  };
}

let rendering = 0;

async function render() {
  const { name, arg, params } = parseHash();
  const view = views[name] || views.search;
  const root = document.getElementById("view");
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", a.getAttribute("href") === `#/${name}`);
  }
  const ticket = ++rendering;
  root.replaceChildren(h("p", { class: "loading" }, "Loading…"));
  root.dataset.view = name;
  root.dataset.state = "loading";
  try {
    const content = await view(arg, params);
    if (ticket !== rendering) return;
    root.replaceChildren(content);
    root.dataset.state = "ready";
    status(`${name} · ${time(Date.now())}`);
  } catch (e) {
    if (ticket !== rendering) return;
    root.replaceChildren(errorBox(e));
    root.dataset.state = "error";
    status(e.message, true);
  }
}

function setup() {
  const ns = document.getElementById("namespace");
  const key = document.getElementById("apikey");
  ns.value = settings.namespace;
  key.value = settings.key;
  // A change event can come again on blur: only a new value re-renders.
  ns.addEventListener("change", () => {
    if (ns.value.trim() === settings.namespace) return;
    settings.namespace = ns.value.trim();
    render();
  });
  key.addEventListener("change", () => {
    if (key.value === settings.key) return;
    settings.key = key.value;
    render();
  });
  document.getElementById("settings").addEventListener("submit", (e) => e.preventDefault());
  window.addEventListener("hashchange", render);
  render();
}

setup();
