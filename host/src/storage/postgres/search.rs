//! Two of the three search channels over Postgres: full text ranked by
//! BM25, and entity links (cosine KNN through pgvector is `knn.rs`).
//!
//! Postgres ranks text with `ts_rank`, which is not BM25; the SQLite store
//! ranks with FTS5's `bm25()`, and the two backends must rank the same data
//! alike (issue 16: LoCoMo dev within 0.01). So this file computes FTS5's
//! formula itself, with its constants: for each query term, idf =
//! ln((N − n + 0.5) / (n + 0.5)) (at least 1e-6), and the score sums
//! idf · tf · (k1 + 1) / (tf + k1 · (1 − b + b · D / avgdl)), where tf
//! weighs a term found in a turn's context (`fts_context`) by
//! `context_weight`, D is the row's tokens and N, avgdl come from
//! `fts_totals` and each term's row count from `fts_df` (every row of the
//! index, as FTS5 counts them; `schema.rs` says how they are kept). The
//! candidate list and the common-term rule are the SQLite store's
//! (`storage/search.rs`), with the same constants.

use mnemo_core::model::*;

use super::sql::{self, Args, junction, table};
use super::{PgStore, R, fold, pg};
use crate::storage::sqlite::{
    FTS_SCAN_CAP, FTS_SHORTLIST, FTS_SHORTLIST_MIN, query_passes, ranked_in_passes,
};

/// FTS5's BM25 parameters (`fts5_aux.c`: k1 = 1.2, b = 0.75); `schema.rs`'s
/// `mnemo_bm25` multiplies by k1 + 1 = 2.2.
const BM25_K1: f64 = 1.2;
const BM25_B: f64 = 0.75;
/// FTS5's floor for a term in more than half the rows.
const BM25_MIN_IDF: f64 = 1e-6;

/// One query term: its tsquery (a lexeme, or a phrase of them) and the
/// lexeme its frequency is counted by.
#[derive(Clone)]
struct Term {
    query: String,
    lexeme: String,
    /// A phrase (several lexemes): its frequency is counted, not looked up.
    phrase: bool,
}

/// `'lexeme'` as tsquery input reads it back unchanged.
fn quote_lexeme(l: &str) -> String {
    format!("'{}'", l.replace('\\', "\\\\").replace('\'', "''"))
}

impl PgStore {
    /// The terms as the index sees them (stemmed, folded); a term of
    /// several words is a phrase, as a quoted FTS5 string is.
    fn terms(&self, terms: &[String]) -> R<Vec<Term>> {
        let cleaned: Vec<String> = terms
            .iter()
            .map(|t| fold(t.trim()))
            .filter(|t| !t.trim().is_empty())
            .collect();
        if cleaned.is_empty() {
            return Ok(Vec::new());
        }
        let rows = pg(self.db().query(
            "SELECT (SELECT array_agg(lexeme ORDER BY positions[1]) FROM unnest(to_tsvector('mnemo', t))) \
             FROM unnest($1::text[]) WITH ORDINALITY AS q(t, i) ORDER BY i",
            &[&cleaned],
        ))?;
        let mut out: Vec<Term> = Vec::new();
        for r in rows {
            let Some(lexemes) = r.get::<_, Option<Vec<String>>>(0) else {
                continue;
            };
            let Some(first) = lexemes.first() else {
                continue;
            };
            let query = lexemes
                .iter()
                .map(|l| quote_lexeme(l))
                .collect::<Vec<_>>()
                .join(" <-> ");
            if !out.iter().any(|t| t.query == query) {
                out.push(Term {
                    lexeme: first.clone(),
                    phrase: lexemes.len() > 1,
                    query,
                });
            }
        }
        Ok(out)
    }

    /// Each term with the number of rows of `t` holding it.
    fn frequencies(&self, t: &str, terms: Vec<Term>) -> R<Vec<(Term, i64)>> {
        let single: Vec<String> = terms
            .iter()
            .filter(|t| !t.phrase)
            .map(|t| t.lexeme.clone())
            .collect();
        let known: std::collections::HashMap<String, i64> = pg(self.db().query(
            "SELECT lexeme, SUM(rows)::BIGINT FROM ( \
               SELECT lexeme, rows FROM fts_df WHERE target = $1 AND lexeme = ANY($2) \
               UNION ALL SELECT lexeme, rows FROM fts_df_delta WHERE target = $1 AND lexeme = ANY($2)) s \
             GROUP BY lexeme",
            &[&t, &single],
        ))?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
        let mut out = Vec::with_capacity(terms.len());
        for term in terms {
            let n = if term.phrase {
                self.matches(t, &term.query, None)?
            } else {
                known.get(&term.lexeme).copied().unwrap_or(0)
            };
            out.push((term, n));
        }
        Ok(out)
    }

    /// Rows of `t` matching `query` (a tsquery), counted up to `cap`.
    fn matches(&self, t: &str, query: &str, cap: Option<i64>) -> R<i64> {
        let m = match_clause(t, "x");
        let row = match cap {
            Some(cap) => pg(self.db().query_one(
                &format!("SELECT COUNT(*) FROM (SELECT 1 FROM {t} x WHERE {m} LIMIT $2) s"),
                &[&query, &cap],
            ))?,
            None => pg(self
                .db()
                .query_one(&format!("SELECT COUNT(*) FROM {t} x WHERE {m}"), &[&query]))?,
        };
        Ok(row.get(0))
    }

    pub fn fts_search(
        &self,
        target: Target,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> R<Vec<ScoredId>> {
        let t = table(target);
        let terms = self.terms(terms)?;
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        // Without a phrase, the derived index answers when it can (`text.rs`).
        if terms.iter().all(|t| !t.phrase) {
            let lexemes: Vec<String> = terms.iter().map(|t| t.lexeme.clone()).collect();
            if let Some(hits) = self.text_search(target, &lexemes, f, limit, context_weight)? {
                return Ok(hits);
            }
        }
        let totals = pg(self.db().query_one(
            "SELECT COALESCE(SUM(rows), 0)::BIGINT, COALESCE(SUM(tokens), 0)::BIGINT FROM ( \
               SELECT rows, tokens FROM fts_totals WHERE target = $1 \
               UNION ALL SELECT rows, tokens FROM fts_totals_delta WHERE target = $1) s",
            &[&t],
        ))?;
        let (rows, tokens): (i64, i64) = (totals.get(0), totals.get(1));
        // Document frequency of each term (a lexeme's from `fts_df`, a
        // phrase's counted) decides the passes' terms, as in the SQLite
        // store (`query_passes`).
        let passes = query_passes(self.frequencies(t, terms)?, rows);
        let n_rows = rows.max(1) as f64;
        let corpus = Corpus {
            t,
            n_rows,
            avgdl: (tokens.max(1) as f64 / n_rows).max(f64::MIN_POSITIVE),
            cw: match target {
                Target::Episodes => f64::from(context_weight.max(0.0)),
                Target::Memories => 0.0,
            },
        };
        ranked_in_passes(passes, limit, |terms| {
            self.fts_pass(&corpus, target, terms, f, limit)
        })
    }

    /// BM25 over the rows matching any of `counted`'s terms.
    fn fts_pass(
        &self,
        c: &Corpus<'_>,
        target: Target,
        counted: &[(Term, i64)],
        f: &SearchFilter,
        limit: u32,
    ) -> R<Vec<ScoredId>> {
        let lexemes: Vec<String> = counted.iter().map(|(t, _)| t.lexeme.clone()).collect();
        let idf: Vec<f64> = counted
            .iter()
            .map(|(_, n)| {
                let n = *n as f64;
                ((c.n_rows - n + 0.5) / (n + 0.5)).ln().max(BM25_MIN_IDF)
            })
            .collect();
        let query = counted
            .iter()
            .map(|(t, _)| format!("({})", t.query))
            .collect::<Vec<_>>()
            .join(" | ");
        let shortlist = limit.saturating_mul(FTS_SHORTLIST).max(FTS_SHORTLIST_MIN);
        let ranked = Ranked {
            t: c.t,
            query: &query,
            lexemes: &lexemes,
            idf: &idf,
            cw: c.cw,
            avgdl: c.avgdl,
        };
        // First the newest matches, ranked, then filtered; if that leaves
        // too few and there are more matches, every filtered match.
        let hits = self.rank(&ranked, target, f, limit, Some(shortlist))?;
        if hits.len() as u32 >= limit || !self.more_than(c.t, &query, counted, shortlist)? {
            return Ok(hits);
        }
        self.rank(&ranked, target, f, limit, None)
    }

    /// BM25 over the candidates: with a shortlist, the `FTS_SCAN_CAP`
    /// newest matches in the filter's namespaces, their best `shortlist`,
    /// then the rest of the filter; without,
    /// every match the filter admits.
    fn rank(
        &self,
        r: &Ranked<'_>,
        target: Target,
        f: &SearchFilter,
        limit: u32,
        shortlist: Option<u32>,
    ) -> R<Vec<ScoredId>> {
        let t = r.t;
        let mut args = Args::default();
        let query = args.add(r.query.to_string());
        let avgdl = args.add(r.avgdl);
        let cw = match target {
            Target::Episodes => args.add(r.cw),
            Target::Memories => String::new(),
        };
        // One BM25 summand per term, each a lookup in the row's lexeme
        // counts: a single pass over the candidates, no join.
        let score = r
            .lexemes
            .iter()
            .zip(r.idf)
            .map(|(lex, idf)| {
                let (lex, idf) = (args.add(lex.clone()), args.add(*idf));
                let context = match target {
                    Target::Episodes => format!(
                        " + {cw}::float8 * COALESCE((c.fts_context_tf ->> {lex}::text)::float8, 0)"
                    ),
                    Target::Memories => String::new(),
                };
                format!(
                    "mnemo_bm25(COALESCE((c.fts_tf ->> {lex}::text)::float8, 0){context}, {idf}::float8, c.norm)"
                )
            })
            .collect::<Vec<_>>()
            .join(" + ");
        let context_col = match target {
            Target::Episodes => "x.fts_context_tf",
            Target::Memories => "NULL::jsonb",
        };
        // The query is the first parameter: `match_clause` names it `$1`.
        debug_assert_eq!(query, "$1");
        let m = match_clause(t, "x");
        let filter = sql::where_clause(target, "x", f, ListState::Active, &mut args);
        let (candidates, after) = match shortlist {
            Some(n) => {
                // The namespaces go below the cap: a tenant's search reads
                // its own rows (a bitmap AND of the full-text and the
                // namespace indexes), not the newest matches of the store.
                let tenant = if f.namespaces.is_empty() {
                    String::new()
                } else {
                    format!(
                        " AND {}",
                        sql::one_of("x.namespace", f.namespaces.clone(), &mut args)
                    )
                };
                let cap = args.add(FTS_SCAN_CAP);
                let n = args.add(i64::from(n));
                (
                    format!("WHERE {m}{tenant} ORDER BY x.seq DESC LIMIT {cap}"),
                    format!(
                        "(SELECT id, s FROM scored ORDER BY s DESC LIMIT {n}) s JOIN {t} x ON x.id = s.id WHERE {filter}"
                    ),
                )
            }
            None => (format!("WHERE {m} AND {filter}"), "scored s".to_string()),
        };
        let limit = args.add(i64::from(limit));
        let text = format!(
            "WITH c AS (SELECT x.id, x.fts_tf, {context_col} AS fts_context_tf, \
               {BM25_K1} * (1 - {BM25_B} + {BM25_B} * x.fts_len / {avgdl}::float8) AS norm FROM {t} x {candidates}), \
             scored AS (SELECT c.id, {score} AS s FROM c) \
             SELECT s.id, s.s FROM {after} ORDER BY s.s DESC, s.id LIMIT {limit}"
        );
        let rows = pg(self.db().query(&text, &args.refs()))?;
        Ok(scored(&rows))
    }

    /// Whether more than `n` rows match `query`, the OR of `counted`: known
    /// from the frequencies when one term alone has more, or all together
    /// have at most `n`; counted otherwise.
    fn more_than(&self, t: &str, query: &str, counted: &[(Term, i64)], n: u32) -> R<bool> {
        let n = i64::from(n);
        if counted.iter().any(|(_, df)| *df > n) {
            return Ok(true);
        }
        if counted.iter().map(|(_, df)| *df).sum::<i64>() <= n {
            return Ok(false);
        }
        Ok(self.matches(t, query, Some(n + 1))? > n)
    }

    pub fn entity_search(
        &self,
        target: Target,
        names: &[String],
        f: &SearchFilter,
        limit: u32,
    ) -> R<Vec<ScoredId>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let t = table(target);
        let (junction, item_col) = junction(target);
        let names: Vec<String> = names.iter().map(|n| n.to_lowercase()).collect();
        let mut args = Args::default();
        let n = args.add(names);
        let ns = if f.namespaces.is_empty() {
            String::new()
        } else {
            format!("AND en.namespace = ANY({})", args.add(f.namespaces.clone()))
        };
        let filter = sql::where_clause(target, "x", f, ListState::Active, &mut args);
        let limit = args.add(i64::from(limit));
        let rows = pg(self.db().query(
            &format!(
                "WITH ents AS (SELECT en.id FROM entities en WHERE (en.name_lower = ANY({n}) OR en.id IN \
                   (SELECT entity_id FROM entity_aliases WHERE alias_lower = ANY({n}))) {ns}) \
                 SELECT x.id, COUNT(*)::float8 AS c FROM {junction} j JOIN ents ON j.entity_id = ents.id \
                 JOIN {t} x ON x.id = j.{item_col} WHERE {filter} \
                 GROUP BY x.id, x.event_time ORDER BY c DESC, x.event_time DESC, x.id LIMIT {limit}"
            ),
            &args.refs(),
        ))?;
        Ok(scored(&rows))
    }
}

/// The index's figures a query's passes share.
struct Corpus<'a> {
    t: &'a str,
    n_rows: f64,
    avgdl: f64,
    cw: f64,
}

/// What [`PgStore::rank`] ranks by.
struct Ranked<'a> {
    t: &'a str,
    query: &'a str,
    lexemes: &'a [String],
    idf: &'a [f64],
    cw: f64,
    avgdl: f64,
}

/// `alias` matches tsquery `$1` (a turn by its own words or its context's).
fn match_clause(t: &str, alias: &str) -> String {
    if t == "episodes" {
        format!("({alias}.fts @@ $1::text::tsquery OR {alias}.fts_context @@ $1::text::tsquery)")
    } else {
        format!("{alias}.fts @@ $1::text::tsquery")
    }
}

/// `(id, score)` rows as hits.
pub(super) fn scored(rows: &[postgres::Row]) -> Vec<ScoredId> {
    rows.iter()
        .map(|r| ScoredId {
            id: r.get(0),
            score: r.get::<_, f64>(1) as f32,
        })
        .collect()
}
