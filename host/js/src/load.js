// Loads a component transpiled into gen/ (scripts/build.mjs) with the
// imports its instance gets. WASI comes from jco's preview2-shim, fully
// sandboxed: no files, no environment, no network — a component reaches
// the outside only through the imports mnemo gives it.

import { WASIShim } from '@bytecodealliance/preview2-shim/instantiation';

const isNode = typeof process !== 'undefined' && Boolean(process.versions?.node);
const compiled = new Map();
/// Components given compiled (`setComponents`), by name.
let given;

/// Gives the components already compiled, for a runtime that compiles no
/// WASM at run time (a Worker imports its `.wasm` files as modules):
/// `{ [name]: { js: the transpiled module's namespace, modules: { [file]:
/// WebAssembly.Module } } }`, plus `jiebaDictionary`: the dictionary's text.
export function setComponents(components) {
  given = components;
}

/// The compiled core modules of component `name` (compiled once per process).
async function coreModule(name, file) {
  const key = `${name}/${file}`;
  if (given) {
    const module = given[name]?.modules?.[file];
    if (!module) throw new Error(`component ${name}: ${file} was not given`);
    return module;
  }
  if (!compiled.has(key)) {
    const url = new URL(`../gen/${name}/${file}`, import.meta.url);
    compiled.set(
      key,
      (async () => {
        if (isNode) {
          const { readFile } = await import('node:fs/promises');
          return WebAssembly.compile(await readFile(url));
        }
        return WebAssembly.compileStreaming(fetch(url));
      })(),
    );
  }
  return compiled.get(key);
}

/// The sandboxed WASI imports every instance gets.
export function wasiImports() {
  return new WASIShim({
    sandbox: { preopens: {}, env: {}, args: ['mnemo'], enableNetwork: false },
  }).getImportObject();
}

let dictionary;
/// How often the jieba dictionary was read (once per process at most).
export const loads = { dictionary: 0 };

/// The core's `resources` import: the jieba dictionary, read from gen/ the
/// first time the core meets Chinese text (Node: the file; a browser: one
/// synchronous request, the import being synchronous) and kept.
export const resources = {
  jiebaDictionary() {
    if (dictionary === undefined && given?.jiebaDictionary !== undefined) {
      dictionary = given.jiebaDictionary;
      loads.dictionary += 1;
    }
    if (dictionary === undefined) {
      const url = new URL('../gen/jieba-dict.txt', import.meta.url);
      if (isNode) {
        dictionary = process.getBuiltinModule('node:fs').readFileSync(url, 'utf8');
      } else {
        const xhr = new XMLHttpRequest();
        xhr.open('GET', url.href, false);
        xhr.send(null);
        if (xhr.status !== 200) throw new Error(`${url.href}: HTTP ${xhr.status}`);
        dictionary = xhr.responseText;
      }
      loads.dictionary += 1;
    }
    return dictionary;
  },
};

/// A new instance of component `name` with `imports` (keyed by
/// unversioned interface name, e.g. `mnemo:core/storage`).
export async function instantiate(name, imports) {
  const { instantiate: make } = given?.[name]?.js ?? (await import(generated(name)));
  return make((file) => coreModule(name, file), { ...stripVersions(wasiImports()), ...imports });
}

/// The transpiled module of component `name`, computed at run time: a
/// bundler (host/edge) leaves it alone instead of bundling every component.
const generated = (name) => new URL(`../gen/${name}/${name}.js`, import.meta.url).href;

/// jco looks imports up without their `@version`.
function stripVersions(object) {
  const out = {};
  for (const [k, v] of Object.entries(object)) out[k.replace(/@[^@/]+$/, '')] = v;
  return out;
}
