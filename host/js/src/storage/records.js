// The storage import's record functions over SQLite: memories, episodes,
// sessions, entities, facts, versions, the decision log and metadata —
// the same SQL as the native host's `storage/{memories,dialogue,graph,
// meta}.rs`, so a database either host writes reads the same in both.

import { HostFailure, IN_JSON, inList, whereClause } from './db.js';
import * as rows from './rows.js';

const { MEMORY_COLUMNS, EPISODE_COLUMNS, SESSION_COLUMNS, FACT_COLUMNS, ENTITY_COLUMNS } = rows;

const INSERT_MEMORY =
  'INSERT INTO memories (id, namespace, content, content_hash, kind, layer, importance, ' +
  'confidence, decay_rate, access_count, repetition_count, created_at, modified_at, last_accessed, ' +
  'event_time, created_epoch, valid_until, invalid_reason, session_id, source, source_role, tags, ' +
  'attributes, source_ids, supersedes, superseded_by) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,' +
  '?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26)';
const UPDATE_MEMORY =
  'UPDATE memories SET namespace=?2, content=?3, content_hash=?4, kind=?5, layer=?6, ' +
  'importance=?7, confidence=?8, decay_rate=?9, access_count=?10, repetition_count=?11, created_at=?12, ' +
  'modified_at=?13, last_accessed=?14, event_time=?15, created_epoch=?16, valid_until=?17, ' +
  'invalid_reason=?18, session_id=?19, source=?20, source_role=?21, tags=?22, attributes=?23, ' +
  'source_ids=?24, supersedes=?25, superseded_by=?26 WHERE id=?1';

const junction = (target) =>
  target === 'episodes' ? ['episode_entities', 'episode_id', 'episodes'] : ['memory_entities', 'memory_id', 'memories'];

/// Record functions; `this.db` is a `Db`.
export const recordMethods = {
  insertMemory(m) {
    this.writeMemory(m, INSERT_MEMORY);
  },

  updateMemory(m) {
    this.writeMemory(m, UPDATE_MEMORY);
  },

  writeMemory(m, sql) {
    const n = this.db.run(sql, [
      m.id,
      m.namespace,
      m.content,
      rows.contentHash(m.content),
      m.kind,
      m.layer,
      m.importance,
      m.confidence,
      m.decayRate,
      m.accessCount,
      m.repetitionCount,
      m.createdAt,
      m.modifiedAt,
      m.lastAccessed,
      m.eventTime,
      m.createdEpoch,
      m.validUntil,
      m.invalidReason,
      m.sessionId,
      m.source,
      m.sourceRole,
      JSON.stringify(m.tags),
      m.attributes,
      JSON.stringify(m.sourceIds),
      m.supersedes,
      m.supersededBy,
    ]);
    if (n === 0) throw new HostFailure('not-found', `memory \`${m.id}\``);
  },

  memoriesWhere(clause, params) {
    return this.db.all(`SELECT ${MEMORY_COLUMNS} FROM memories WHERE ${clause}`, params).map(rows.memory);
  },

  getMemories(ids) {
    const out = [];
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      out.push(...this.memoriesWhere(`id IN ${IN_JSON}`, [JSON.stringify(chunk)]));
    }
    return out;
  },

  findExact(namespaces, content) {
    if (!namespaces.length) return undefined;
    const found = this.memoriesWhere(
      `content_hash = ?1 AND valid_until IS NULL AND namespace IN (${inList(namespaces.length)}) ORDER BY +created_at LIMIT 5`,
      [rows.contentHash(content), ...namespaces],
    );
    return found.find((m) => m.content === content);
  },

  listMemories(q) {
    const filter = {
      namespaces: q.namespaces,
      layers: q.layers,
      kinds: q.kinds,
      tags: q.tags,
      source: q.source,
    };
    const w = whereClause('memories', 'memories', filter, q.state);
    let clause = w.clause;
    if (q.modifiedSince !== undefined) {
      clause += ' AND memories.modified_at >= ?';
      w.params.push(q.modifiedSince);
    }
    if (q.minImportance !== undefined) {
      clause += ' AND memories.importance >= ?';
      w.params.push(q.minImportance);
    }
    if (q.anyTags.length) {
      clause += ` AND EXISTS (SELECT 1 FROM json_each(memories.tags) WHERE value IN (${inList(q.anyTags.length)}))`;
      w.params.push(...q.anyTags);
    }
    const [time, order] = q.byModified
      ? ['modified_at', 'modified_at DESC, id DESC']
      : ['created_at', 'created_at DESC, id DESC'];
    if (q.afterTime !== undefined && q.afterId !== undefined) {
      clause += ` AND (memories.${time} < ? OR (memories.${time} = ? AND memories.id < ?))`;
      w.params.push(q.afterTime, q.afterTime, q.afterId);
    }
    w.params.push(q.limit, q.offset);
    return this.memoriesWhere(`${clause} ORDER BY ${order} LIMIT ? OFFSET ?`, w.params);
  },

  activeNamespaces() {
    return this.db
      .all(
        'WITH RECURSIVE ns(name) AS ( ' +
          'SELECT (SELECT MIN(namespace) FROM memories WHERE valid_until IS NULL) ' +
          'UNION ALL ' +
          'SELECT (SELECT MIN(namespace) FROM memories WHERE namespace > ns.name AND valid_until IS NULL) ' +
          'FROM ns WHERE ns.name IS NOT NULL) ' +
          'SELECT name FROM ns WHERE name IS NOT NULL',
      )
      .map((r) => r[0]);
  },

  touchMemories(ids, at) {
    for (const id of ids) {
      this.db.run('UPDATE memories SET access_count = access_count + 1, last_accessed = ?2 WHERE id = ?1', [id, at]);
    }
  },

  renewMemories(ids, at) {
    for (const id of ids) {
      this.db.run("UPDATE memories SET attributes = json_set(attributes, '$.renewed_at', ?2) WHERE id = ?1", [id, at]);
    }
  },

  insertEpisode(e) {
    this.db.run(`INSERT INTO episodes (${EPISODE_COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)`, [
      e.id,
      e.namespace,
      e.sessionId,
      e.sourceRole,
      e.content,
      e.eventTime,
      e.createdAt,
      e.validUntil,
      e.invalidReason,
      e.attributes,
    ]);
  },

  getEpisodes(ids) {
    const out = [];
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      out.push(
        ...this.db
          .all(`SELECT ${EPISODE_COLUMNS} FROM episodes WHERE id IN ${IN_JSON}`, [JSON.stringify(chunk)])
          .map(rows.episode),
      );
    }
    return out;
  },

  getSession(namespace, id) {
    const r = this.db.one(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE namespace = ?1 AND id = ?2`, [namespace, id]);
    return r ? rows.session(r) : undefined;
  },

  putSession(s) {
    this.db.run(
      'INSERT INTO sessions (namespace, id, first_seen_at, last_seen_at, turn_count, consolidated_at, consolidated_turns) ' +
        'VALUES (?1,?2,?3,?4,?5,?6,?7) ON CONFLICT(namespace, id) DO UPDATE SET ' +
        'last_seen_at = excluded.last_seen_at, turn_count = excluded.turn_count, ' +
        'consolidated_at = excluded.consolidated_at, consolidated_turns = excluded.consolidated_turns',
      [s.namespace, s.id, s.firstSeenAt, s.lastSeenAt, s.turnCount, s.consolidatedAt, s.consolidatedTurns],
    );
  },

  pendingSessions(namespace, exclude) {
    return this.db
      .all(
        `SELECT ${SESSION_COLUMNS} FROM sessions ` +
          "WHERE (?1 = '' OR namespace = ?1) AND consolidated_at IS NULL AND (?2 IS NULL OR id != ?2) " +
          'ORDER BY first_seen_at',
        [namespace, exclude],
      )
      .map(rows.session);
  },

  sessionEpisodes(namespace, sessionId, offset, limit) {
    return this.db
      .all(
        `SELECT ${EPISODE_COLUMNS} FROM episodes WHERE namespace = ?1 AND session_id = ?2 ` +
          'AND valid_until IS NULL ORDER BY event_time, created_at, rowid LIMIT ?3 OFFSET ?4',
        [namespace, sessionId, limit, offset],
      )
      .map(rows.episode);
  },

  findEntity(namespace, name, entityType) {
    const lower = name.trim().toLowerCase();
    const r = this.db.one(
      `SELECT ${ENTITY_COLUMNS} FROM entities ` +
        'WHERE namespace = ?1 AND entity_type = ?3 AND (name_lower = ?2 OR id IN ' +
        '(SELECT entity_id FROM entity_aliases WHERE alias_lower = ?2)) ' +
        'ORDER BY name_lower = ?2 DESC, mention_count DESC LIMIT 1',
      [namespace, lower, entityType],
    );
    return r ? rows.entity(r) : undefined;
  },

  putEntity(e) {
    this.db.run(
      'INSERT INTO entities (id, namespace, canonical_name, name_lower, entity_type, aliases, summary, mention_count) ' +
        'VALUES (?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT(id) DO UPDATE SET canonical_name = excluded.canonical_name, ' +
        'name_lower = excluded.name_lower, aliases = excluded.aliases, summary = excluded.summary, ' +
        'mention_count = excluded.mention_count',
      [
        e.id,
        e.namespace,
        e.canonicalName,
        e.canonicalName.toLowerCase(),
        e.entityType,
        JSON.stringify(e.aliases),
        e.summary,
        e.mentionCount,
      ],
    );
    for (const a of e.aliases) {
      this.db.run('INSERT OR IGNORE INTO entity_aliases (entity_id, alias_lower) VALUES (?1, ?2)', [e.id, a.toLowerCase()]);
    }
  },

  linkEntity(target, itemId, entityId) {
    const [j, col] = junction(target);
    this.db.run(`INSERT OR IGNORE INTO ${j} (${col}, entity_id) VALUES (?1, ?2)`, [itemId, entityId]);
  },

  findEntities(namespaces, name) {
    if (!namespaces.length) return [];
    return this.db
      .all(
        `SELECT ${ENTITY_COLUMNS} FROM entities ` +
          'WHERE (name_lower = ?1 OR id IN (SELECT entity_id FROM entity_aliases WHERE alias_lower = ?1)) ' +
          `AND namespace IN (${inList(namespaces.length)}) ORDER BY mention_count DESC, id`,
        [name.trim().toLowerCase(), ...namespaces],
      )
      .map(rows.entity);
  },

  linkedItems(target, entityId, limit) {
    const [j, col, t] = junction(target);
    return this.db
      .all(
        `SELECT x.id FROM ${j} j JOIN ${t} x ON x.id = j.${col} ` +
          'WHERE j.entity_id = ?1 AND x.valid_until IS NULL ORDER BY x.event_time DESC, x.id LIMIT ?2',
        [entityId, limit],
      )
      .map((r) => r[0]);
  },

  enrichmentCandidates(target, maxEntities, limit) {
    const [j, col, t] = junction(target);
    return this.db
      .all(
        `SELECT x.id, x.namespace, x.content FROM ${t} x WHERE x.valid_until IS NULL ` +
          "AND json_extract(x.attributes, '$.enriched_at') IS NULL " +
          `AND (SELECT COUNT(*) FROM ${j} j WHERE j.${col} = x.id) <= ?1 ORDER BY x.rowid LIMIT ?2`,
        [maxEntities, limit],
      )
      .map((r) => ({ id: r[0], namespace: r[1], content: r[2] }));
  },

  markEnriched(target, id, at) {
    const t = target === 'episodes' ? 'episodes' : 'memories';
    this.db.run(`UPDATE ${t} SET attributes = json_set(attributes, '$.enriched_at', ?2) WHERE id = ?1`, [id, at]);
  },

  putFact(f) {
    this.db.run(
      'INSERT INTO facts (id, namespace, subject, predicate, object, confidence, valid_from, valid_until, ' +
        'superseded_by, memory_id) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10) ON CONFLICT(id) DO UPDATE SET ' +
        'confidence = excluded.confidence, valid_until = excluded.valid_until, superseded_by = excluded.superseded_by',
      [f.id, f.namespace, f.subject, f.predicate, f.object, f.confidence, f.validFrom, f.validUntil, f.supersededBy, f.memoryId],
    );
  },

  queryFacts(q) {
    const parts = ['1'];
    const params = [];
    if (q.namespaces.length) {
      parts.push(`namespace IN (${inList(q.namespaces.length)})`);
      params.push(...q.namespaces);
    }
    if (q.id !== undefined) {
      parts.push('id = ?');
      params.push(q.id);
    }
    for (const [column, value] of [
      ['subject', q.subject],
      ['predicate', q.predicate],
      ['object', q.object],
    ]) {
      if (value !== undefined) {
        parts.push(`lower(${column}) = lower(?)`);
        params.push(value);
      }
    }
    if (q.entity !== undefined) {
      parts.push('(lower(subject) = lower(?) OR lower(object) = lower(?))');
      params.push(q.entity, q.entity);
    }
    if (!q.includeInvalid) parts.push('valid_until IS NULL AND superseded_by IS NULL');
    params.push(q.limit);
    return this.db
      .all(`SELECT ${FACT_COLUMNS} FROM facts WHERE ${parts.join(' AND ')} ORDER BY valid_from DESC, id DESC LIMIT ?`, params)
      .map(rows.fact);
  },

  tagCounts(namespaces, prefix) {
    const escaped = prefix.replaceAll('\\', '\\\\').replaceAll('%', '\\%').replaceAll('_', '\\_');
    const params = [`${escaped}%`, ...namespaces];
    const ns = namespaces.length ? ` AND m.namespace IN (${inList(namespaces.length)})` : '';
    return this.db
      .all(
        'SELECT t.value, SUM(m.access_count) FROM memories m, json_each(m.tags) t ' +
          `WHERE m.valid_until IS NULL AND t.value LIKE ? ESCAPE '\\'${ns} ` +
          'GROUP BY t.value ORDER BY SUM(m.access_count) DESC, t.value',
        params,
      )
      .map((r) => [r[0], BigInt(Math.max(0, Number(r[1])))]);
  },

  putVersion(v) {
    this.db.run(
      'INSERT OR IGNORE INTO memory_versions (memory_id, seq, namespace, replaced_at, action, reason, memory) ' +
        'VALUES (?1,?2,?3,?4,?5,?6,?7)',
      [v.memoryId, v.seq, v.namespace, v.replacedAt, v.action, v.reason, rows.memoryJson(v.memory)],
    );
  },

  memoryVersions(memoryId) {
    return this.db
      .all(
        'SELECT memory_id, seq, namespace, replaced_at, action, reason, memory ' +
          'FROM memory_versions WHERE memory_id = ?1 ORDER BY seq',
        [memoryId],
      )
      .map((r) => ({
        memoryId: r[0],
        seq: Number(r[1]),
        namespace: r[2],
        replacedAt: BigInt(r[3]),
        action: r[4],
        reason: r[5],
        memory: rows.memoryFromJson(r[6]),
      }));
  },

  logDecision(e) {
    this.db.run('INSERT INTO audit_log (at, namespace, action, target_id, detail) VALUES (?1,?2,?3,?4,?5)', [
      e.at,
      e.namespace,
      e.action,
      e.targetId,
      e.detail,
    ]);
  },

  getMeta(key) {
    return this.db.getMeta(key);
  },

  setMeta(key, value) {
    this.db.setMeta(key, value);
  },

  stats(namespaces) {
    const [nsClause, params] = namespaces.length ? [`namespace IN (${inList(namespaces.length)})`, namespaces] : ['1', []];
    const s = {
      active: 0n, buffer: 0n, working: 0n, core: 0n, episodic: 0n, semantic: 0n, procedural: 0n,
      deleted: 0n, episodes: 0n, sessions: 0n, entities: 0n, facts: 0n, memoryVectors: 0n, episodeVectors: 0n,
      newest: undefined,
    };
    const groups = this.db.all(
      `SELECT layer, kind, COUNT(*), MAX(created_at) FROM memories WHERE valid_until IS NULL AND ${nsClause} GROUP BY layer, kind`,
      params,
    );
    for (const [layer, kind, count, newest] of groups) {
      const n = BigInt(count);
      s.active += n;
      if (newest !== null && (s.newest === undefined || BigInt(newest) > s.newest)) s.newest = BigInt(newest);
      s[layer === 'buffer' || layer === 'working' ? layer : 'core'] += n;
      s[kind === 'episodic' || kind === 'procedural' ? kind : 'semantic'] += n;
    }
    const count = (sql) => BigInt(this.db.one(sql, params)[0]);
    s.deleted = count(`SELECT COUNT(*) FROM memories WHERE valid_until IS NOT NULL AND ${nsClause}`);
    s.episodes = count(`SELECT COUNT(*) FROM episodes WHERE valid_until IS NULL AND ${nsClause}`);
    s.sessions = count(`SELECT COUNT(*) FROM sessions WHERE ${nsClause}`);
    s.entities = count(`SELECT COUNT(*) FROM entities WHERE ${nsClause}`);
    s.facts = count(`SELECT COUNT(*) FROM facts WHERE valid_until IS NULL AND ${nsClause}`);
    if (this.vectorsEnabled()) {
      s.memoryVectors = count(`SELECT COUNT(*) FROM mnemo_vectors WHERE target = 'memories' AND ${nsClause}`);
      s.episodeVectors = count(`SELECT COUNT(*) FROM mnemo_vectors WHERE target = 'episodes' AND ${nsClause}`);
    }
    return s;
  },
};

