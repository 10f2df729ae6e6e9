// Where a memory lives between runs. The database itself is SQLite in
// WASM memory; these keep its image:
//
// - `file` (Node): a SQLite file on disk, read at open and replaced
//   atomically (write beside it, then rename) after writes settle;
// - `opfs` (browsers): a file in the origin-private file system, through
//   its asynchronous API (the main thread has no synchronous OPFS).
//
// Either way the image is a plain SQLite database the native host opens.

/// `{ bytes, write(bytes) }` for the options, or undefined (in memory only).
export async function persistence(options) {
  if (options.file) return fileStore(options.file);
  if (options.opfs) return opfsStore(options.opfs);
  return undefined;
}

async function fileStore(path) {
  const fs = await import('node:fs/promises');
  let bytes;
  try {
    bytes = new Uint8Array(await fs.readFile(path));
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
  }
  return {
    bytes,
    async write(image) {
      const tmp = `${path}.saving`;
      const handle = await fs.open(tmp, 'w');
      try {
        await handle.writeFile(image);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fs.rename(tmp, path);
    },
  };
}

async function opfsStore(name) {
  const root = await navigator.storage.getDirectory();
  const handle = await root.getFileHandle(name, { create: true });
  const file = await handle.getFile();
  const bytes = file.size > 0 ? new Uint8Array(await file.arrayBuffer()) : undefined;
  return {
    bytes,
    async write(image) {
      // A writable stream swaps the file in only on close: a tab closed
      // mid-write leaves the previous image.
      const w = await handle.createWritable();
      await w.write(image);
      await w.close();
    },
  };
}
