// `Storage`: the core's `storage` import over one SQLite database (the
// record functions of records.js, the search functions of search.js),
// and the embedding lock: the model and dimension the vectors were built
// with, as the native host's `storage/vectors.rs` keeps it.

import { Db } from './db.js';
import { recordMethods } from './records.js';
import { searchMethods } from './search.js';

/// The metadata keys of this host's vector lock. They differ from the
/// native host's (`embedding_model`, `embedding_dimension`), whose vectors
/// live in sqlite-vec tables this host cannot read: a database moved
/// between hosts re-embeds its rows instead of trusting vectors it lacks.
const META_MODEL = 'js_embedding_model';
const META_DIMENSION = 'js_embedding_dimension';

/// The functions of the WIT `storage` interface, as jco names them.
export const STORAGE_FUNCTIONS = [
  'insertMemory', 'updateMemory', 'getMemories', 'findExact', 'listMemories', 'touchMemories', 'renewMemories',
  'insertEpisode', 'getEpisodes', 'getSession', 'putSession', 'pendingSessions', 'sessionEpisodes',
  'ftsSearch', 'vectorSearch', 'nearSearch', 'entitySearch', 'putVector', 'getVectors', 'deleteVector', 'vectorsEnabled',
  'findEntity', 'putEntity', 'linkEntity', 'findEntities', 'linkedItems', 'enrichmentCandidates', 'markEnriched',
  'putFact', 'queryFacts', 'tagCounts', 'stats', 'activeNamespaces', 'putVersion', 'memoryVersions',
  'logDecision', 'getMeta', 'setMeta',
];

export class Storage {
  /// `connection`: the database (db.js says what it offers); `analysis`:
  /// the core's text functions (for the full-text index).
  constructor(connection, analysis) {
    this.db = new Db(connection, analysis);
    this.vectors = new Map();
    this.vectorState = { state: 'disabled', reason: 'no embedder has been locked' };
  }

  /// Locks the database to an embedder: the first one builds its vectors;
  /// another model or dimension disables vector search (with the reason)
  /// until the vectors are rebuilt (`resetVectors`).
  lockEmbedder(model, dimension) {
    const d = this.db.getMeta(META_DIMENSION);
    const m = this.db.getMeta(META_MODEL);
    const hasTable = this.db.one("SELECT 1 FROM sqlite_master WHERE name = 'mnemo_vectors'") !== undefined;
    if (d === undefined || !hasTable) {
      this.resetVectors(model, dimension);
    } else if (d !== String(dimension)) {
      this.vectorState = {
        state: 'disabled',
        reason: `embedding dimension ${dimension} does not match the database (${d}); rebuild the vectors`,
      };
    } else if (m !== model) {
      this.vectorState = {
        state: 'disabled',
        reason: `embedding model \`${model}\` differs from the one the database was built with (\`${m}\`); rebuild the vectors`,
      };
    } else {
      this.vectorState = { state: 'enabled', model, dimension };
    }
    return this.vectorState;
  }

  /// Drops every vector and queues every active row to be embedded again
  /// by `model`.
  resetVectors(model, dimension) {
    this.db.transaction(() => {
      this.db.exec(
        'DROP TABLE IF EXISTS mnemo_vectors; ' +
          'CREATE TABLE mnemo_vectors (target TEXT NOT NULL, row INTEGER NOT NULL, namespace TEXT NOT NULL, ' +
          'embedding BLOB NOT NULL, PRIMARY KEY (target, row)) WITHOUT ROWID; ' +
          'DELETE FROM vector_pending; ' +
          "INSERT INTO vector_pending SELECT 'memories', rowid FROM memories WHERE valid_until IS NULL; " +
          "INSERT INTO vector_pending SELECT 'episodes', rowid FROM episodes WHERE valid_until IS NULL; " +
          "DELETE FROM metadata WHERE key = 'vector_pending_unchecked';",
      );
      this.db.setMeta(META_DIMENSION, String(dimension));
      this.db.setMeta(META_MODEL, model);
    });
    this.vectors.clear();
    this.vectorState = { state: 'enabled', model, dimension };
  }

  /// The import object jco instantiates the core with.
  imports() {
    const out = {};
    for (const name of STORAGE_FUNCTIONS) out[name] = this[name].bind(this);
    return out;
  }

  close() {
    this.db.close();
  }
}

Object.assign(Storage.prototype, recordMethods, searchMethods);
