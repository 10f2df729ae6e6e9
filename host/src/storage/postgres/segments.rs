//! The HNSW graph of a vector table in segments, as the SQLite store's
//! (`storage/ann`), so a bulk write never leaves a large namespace's rows
//! out of every graph while one is built.
//!
//! A vector of a listed namespace (`graph.rs`) is written into the table's
//! open segment: its `seg` column takes the open segment's number from
//! `vec_segments` in the write's own statement, and no index covers that
//! number yet, so the write pays no graph insert. When the open segment
//! holds `ANN_FLUSH_AT` rows the backfill leader seals it (the next number
//! opens) and builds a partial HNSW index over it, `vec_{t}_graph_{lo}_{hi}`
//! on `seg BETWEEN lo AND hi`, with `CREATE INDEX CONCURRENTLY` (pgvector's
//! bulk build) while writes and searches go on. When `ANN_MERGE_FANOUT`
//! adjacent indexes share a size tier, one index over their whole range is
//! built beside them, and they are dropped once it serves; no index grows
//! past `ANN_SEGMENT_MAX` rows. No row is updated to join a graph: an
//! index's predicate names the segments it holds.
//!
//! A search walks each index of the [`Cover`] (the valid indexes not
//! inside another) and reads exactly the rows no valid index holds: those
//! of unlisted namespaces (`seg` null, from the covering index), the open
//! segment, and sealed segments whose index is still building. So the rows
//! outside every graph are at most the open segment and what arrived
//! during one build. A build cut short (the server killed) leaves an
//! invalid index, which the next leader drops and builds again.

use std::time::{Duration, Instant};

use mnemo_core::model::Target;
use postgres::GenericClient;

use crate::storage::ann::{ANN_FLUSH_AT, ANN_MERGE_FANOUT, ANN_SEGMENT_MAX, tier};

/// The vector tables, in the order of the leader's surveys and the
/// servers' covers (`graph.rs`).
pub(super) const TABLES: [&str; 2] = ["memories", "episodes"];

/// A table's place in `TABLES` (and in each per-table array).
pub(super) fn table_index(target: Target) -> usize {
    match target {
        Target::Memories => 0,
        Target::Episodes => 1,
    }
}

/// Table `t`'s segments: the open one's number and each sealed one's rows
/// (as counted when sealed: deleted and re-embedded rows leave it high).
pub(super) fn segments_of(
    db: &mut impl postgres::GenericClient,
    t: &str,
) -> Result<(i32, Vec<(i32, i64)>), postgres::Error> {
    let mut open = 1;
    let mut sealed = Vec::new();
    for r in db.query(
        "SELECT seg, rows FROM vec_segments WHERE target = $1 ORDER BY seg",
        &[&t],
    )? {
        match r.get::<_, Option<i64>>(1) {
            Some(rows) => sealed.push((r.get(0), rows)),
            None => open = r.get(0),
        }
    }
    Ok((open, sealed))
}

/// HNSW build parameters (pgvector's defaults, named: `m` links per node,
/// `ef_construction` candidates while building).
const HNSW_M: u32 = 16;
const HNSW_EF_CONSTRUCTION: u32 = 64;

/// How long a server's searches use the cover they read from the catalog
/// before reading it again. A cover that misses a new index reads that
/// index's rows exactly; one that names an index dropped since walks the
/// index that replaced it (whose predicate the old range implies): both
/// answer right, so the cover can be a second old.
pub(super) const COVER_TTL: Duration = Duration::from_secs(1);

/// `maintenance_work_mem` for a build: pgvector builds the graph in
/// memory while it fits and far slower once it does not (its NOTICE
/// "hnsw graph no longer fits into maintenance_work_mem"). A point takes
/// its vector (4 bytes a dimension) and about `BUILD_POINT_BYTES` more
/// (its element, and 2·m = 32 neighbours at level 0 with their distances,
/// rounded up: an estimate from the graph's shape, not measured); between
/// Postgres's default of 64 MB and `BUILD_MEMORY_MAX_MB`.
const BUILD_POINT_BYTES: u64 = 1024;
const BUILD_MEMORY_MIN_MB: u64 = 64;
const BUILD_MEMORY_MAX_MB: u64 = 4096;

/// The memory a build of `points` vectors of `dimension` asks for, in MB.
pub(super) fn build_memory_mb(points: i64, dimension: u32) -> u64 {
    let bytes = points.max(0) as u64 * (4 * u64::from(dimension) + BUILD_POINT_BYTES);
    (bytes >> 20).clamp(BUILD_MEMORY_MIN_MB, BUILD_MEMORY_MAX_MB)
}

/// A range of segment numbers, both ends included.
pub(super) type Range = (i32, i32);

/// The name of table `t`'s index over segments `lo..=hi`.
pub(super) fn index_name(t: &str, (lo, hi): Range) -> String {
    format!("vec_{t}_graph_{lo}_{hi}")
}

fn parse_name(t: &str, name: &str) -> Option<Range> {
    let (lo, hi) = name
        .strip_prefix(&format!("vec_{t}_graph_"))?
        .split_once('_')?;
    Some((lo.parse().ok()?, hi.parse().ok()?))
}

/// The statement building table `t`'s index over segments `range`, while
/// the table takes writes and searches.
fn index_sql(t: &str, range: Range) -> String {
    format!(
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS {} ON vec_{t} USING hnsw (embedding vector_cosine_ops) \
         WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) WHERE seg BETWEEN {} AND {}",
        index_name(t, range),
        range.0,
        range.1
    )
}

/// Table `t`'s segment indexes as the catalog lists them: the cover, and
/// the indexes no search should use (invalid: building, or left by a
/// build cut short; or inside a valid one, left by a merge).
#[derive(Debug, Default)]
pub(super) struct Catalog {
    pub cover: Cover,
    pub building: Vec<String>,
    pub inside: Vec<String>,
}

/// The valid indexes no other valid index contains, in segment order:
/// what a search walks.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Cover(pub Vec<Range>);

impl Cover {
    /// The rows of listed namespaces no index of the cover holds, as an SQL
    /// condition on `alias` (the open segment, sealed ones not yet built).
    pub fn outside(&self, alias: &str) -> String {
        self.outside_except(alias, &[])
    }

    /// As [`Cover::outside`], less the segments `skip` (those a server
    /// holds in memory, `tail.rs`), written as ranges so that the planner
    /// reads the rest through `vec_{t}_seg`. A `seg <> ALL(…)` filter
    /// instead read every row of the skipped segments to drop them: 16.5 ms
    /// for the 30,000 rows a 50,000-row import leaves in them (`EXPLAIN
    /// ANALYZE`, no load), where ranges read only the open segment's.
    pub fn outside_except(&self, alias: &str, skip: &[i32]) -> String {
        let mut ranges = self.0.clone();
        ranges.extend(skip.iter().map(|&s| (s, s)));
        ranges.sort_unstable();
        let mut parts = Vec::new();
        let mut next = 1;
        for &(lo, hi) in &ranges {
            if lo > next {
                parts.push(format!("{alias}.seg BETWEEN {next} AND {}", lo - 1));
            }
            next = next.max(hi + 1);
        }
        parts.push(format!("{alias}.seg >= {next}"));
        format!("({})", parts.join(" OR "))
    }

    /// Whether an index of the cover holds segment `seg`.
    pub fn holds(&self, seg: i32) -> bool {
        self.0.iter().any(|&(lo, hi)| (lo..=hi).contains(&seg))
    }

    /// The segment numbers `lo..=hi` of sealed segments (below `open`) no
    /// index of the cover holds: the first such run.
    pub fn first_gap(&self, open: i32) -> Option<Range> {
        let mut next = 1;
        for &(lo, hi) in &self.0 {
            if lo > next {
                return Some((next, (lo - 1).min(open - 1))).filter(|(a, b)| a <= b);
            }
            next = next.max(hi + 1);
        }
        (next < open).then_some((next, open - 1))
    }
}

/// Reads table `t`'s segment indexes from the catalog.
pub(super) fn catalog(db: &mut impl GenericClient, t: &str) -> Result<Catalog, postgres::Error> {
    let rows = db.query(
        "SELECT c.relname::text, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
         WHERE i.indrelid = to_regclass($1)",
        &[&format!("vec_{t}")],
    )?;
    let mut valid = Vec::new();
    let mut out = Catalog::default();
    for r in rows {
        let (name, ok): (String, bool) = (r.get(0), r.get(1));
        match parse_name(t, &name) {
            Some(range) if ok => valid.push(range),
            Some(_) => out.building.push(name),
            None => {}
        }
    }
    // Widest first at each start, so an index inside another is seen after it.
    valid.sort_by_key(|&(lo, hi)| (lo, std::cmp::Reverse(hi)));
    let mut reach = 0;
    for range in valid {
        if range.0 > reach {
            out.cover.0.push(range);
            reach = range.1;
        } else {
            // Inside one of the cover (or overlapping it, which no merge
            // builds): its rows are walked there.
            out.inside.push(index_name(t, range));
        }
    }
    Ok(out)
}

/// A run of adjacent indexes of the cover to merge into one, with the rows
/// each holds (`rows`, in the cover's order): `ANN_MERGE_FANOUT` or more
/// adjacent in one size tier, of which the most that fit under
/// `ANN_SEGMENT_MAX` (at least two), as the SQLite index merges.
pub(super) fn merge_due(cover: &Cover, rows: &[i64]) -> Option<Range> {
    let n = cover.0.len().min(rows.len());
    let tiers: Vec<u32> = rows[..n]
        .iter()
        .map(|r| tier((*r).max(0) as usize, ANN_FLUSH_AT))
        .collect();
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && tiers[end] == tiers[start] && cover.0[end].0 == cover.0[end - 1].1 + 1 {
            end += 1;
        }
        if end - start >= ANN_MERGE_FANOUT {
            let mut best: Option<(usize, usize)> = None;
            for a in start..end {
                let mut total = 0;
                let mut b = a;
                while b < end && b - a < ANN_MERGE_FANOUT {
                    total += rows[b].max(0) as usize;
                    if total > ANN_SEGMENT_MAX {
                        break;
                    }
                    b += 1;
                }
                if b - a >= 2 && best.is_none_or(|(x, y)| b - a > y - x) {
                    best = Some((a, b));
                }
            }
            if let Some((a, b)) = best {
                return Some((cover.0[a].0, cover.0[b - 1].1));
            }
        }
        start = end;
    }
    None
}

/// Every index of a table is merged into one, once no segment is due to
/// be sealed, when the others hold this share of the largest's rows (a
/// seventh). A row written is then rebuilt about eight times over by
/// these merges, at pgvector's bulk speed (200,000 random 64-d vectors
/// built at 3,880 a second, `\timing` in `psql` on this 2-core machine),
/// so a trickle of writes costs little, and a settled table's searches
/// walk one index: after a bulk import of 1,000,000 the tier merges leave
/// six or more, since two of `ANN_SEGMENT_MAX` do not fit under it.
const COMPACT_SHARE: i64 = 7;

/// The range of every index of the cover, when they are due to be merged
/// into one (`COMPACT_SHARE`, with `rows` each holds).
pub(super) fn compact_due(cover: &Cover, rows: &[i64]) -> Option<Range> {
    let (first, last) = (cover.0.first()?, cover.0.last()?);
    if cover.0.len() < 2 {
        return None;
    }
    let largest = rows.iter().copied().max().unwrap_or(0);
    let others = rows.iter().sum::<i64>() - largest;
    (others * COMPACT_SHARE >= largest).then_some((first.0, last.1))
}

/// What a build does, on a connection of its own.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Job {
    /// Drop indexes no search uses.
    Drop(Vec<String>),
    /// Build the index over `range` (about `rows` vectors), then drop the
    /// indexes inside it.
    Build { range: Range, rows: i64 },
}

/// Runs `job` on table `t` over a connection of its own (`url`).
///
/// The build runs in its backend alone, without parallel workers, so it
/// takes one core and leaves the others to the searches: with a
/// 1,000,000-row build running beside 4 clients on a 2-core machine,
/// recall p50 was 44.7 ms without workers and 65.9 ms with pgvector's
/// two, against 30.9 ms with no build (`bench serve --reuse`, one run
/// each). A parallel build also asks `maintenance_work_mem` of shared
/// memory at once, which a container's small `/dev/shm` refuses ("could
/// not resize shared memory segment", Docker's 64 MB; pgvector issue 453).
pub(super) fn run(url: &str, t: &str, job: Job, dimension: u32) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut db = super::connect(url)?;
    // A concurrent build waits for every transaction that could see the
    // table without the new index, and a merge runs minutes at a million.
    db.batch_execute(
        "SET statement_timeout = 0; SET lock_timeout = 0; SET max_parallel_maintenance_workers = 0",
    )?;
    match job {
        Job::Drop(names) => {
            for name in &names {
                db.batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"))?;
            }
            tracing::info!(table = t, indexes = ?names, "dropped HNSW indexes no search uses");
        }
        Job::Build { range, rows } => {
            let memory = build_memory_mb(rows, dimension);
            db.batch_execute(&format!("SET maintenance_work_mem = '{memory}MB'"))?;
            db.batch_execute(&index_sql(t, range))?;
            // The planner must see the segment numbers' spread to prefer the
            // new index over reading its rows by `seg`.
            db.batch_execute(&format!("ANALYZE vec_{t}"))?;
            let built = started.elapsed().as_secs_f64();
            let inside = catalog(&mut db, t)?.inside;
            for name in &inside {
                db.batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"))?;
            }
            tracing::info!(
                table = t,
                segments = ?range,
                rows,
                seconds = built,
                replaced = inside.len(),
                "an HNSW index is built"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_outside_the_cover_are_its_gaps_and_what_follows() {
        let cover = Cover(vec![(1, 4), (5, 5), (8, 9)]);
        assert_eq!(cover.outside("v"), "(v.seg BETWEEN 6 AND 7 OR v.seg >= 10)");
        assert_eq!(Cover::default().outside("v"), "(v.seg >= 1)");
        // Held segments leave ranges, inside or past the cover's gaps.
        assert_eq!(
            cover.outside_except("v", &[7, 10, 11]),
            "(v.seg BETWEEN 6 AND 6 OR v.seg >= 12)"
        );
        assert_eq!(
            Cover::default().outside_except("v", &[2, 3]),
            "(v.seg BETWEEN 1 AND 1 OR v.seg >= 4)"
        );
        assert_eq!(cover.first_gap(12), Some((6, 7)));
        assert_eq!(Cover(vec![(1, 4)]).first_gap(5), None);
        assert_eq!(Cover(vec![(1, 4)]).first_gap(8), Some((5, 7)));
        assert_eq!(Cover::default().first_gap(1), None);
        assert_eq!(Cover(vec![(3, 4)]).first_gap(6), Some((1, 2)));
    }

    #[test]
    fn names_round_trip() {
        assert_eq!(
            parse_name("memories", &index_name("memories", (3, 17))),
            Some((3, 17))
        );
        assert_eq!(parse_name("memories", "vec_memories_graph"), None);
        assert_eq!(parse_name("memories", "vec_episodes_graph_1_2"), None);
    }

    #[test]
    fn adjacent_indexes_of_one_tier_merge_under_the_cap() {
        let f = ANN_FLUSH_AT as i64;
        // Three of a tier: not yet.
        let cover = Cover(vec![(1, 1), (2, 2), (3, 3)]);
        assert_eq!(merge_due(&cover, &[f, f, f]), None);
        // Four: all four.
        let cover = Cover(vec![(1, 1), (2, 2), (3, 3), (4, 4)]);
        assert_eq!(merge_due(&cover, &[f, f, f, f]), Some((1, 4)));
        // A bigger tier first is left alone.
        let cover = Cover(vec![(1, 4), (5, 5), (6, 6), (7, 7), (8, 8)]);
        assert_eq!(merge_due(&cover, &[16 * f, f, f, f, f]), Some((5, 8)));
        // Not adjacent (segment 3's index is building): no run of four.
        let cover = Cover(vec![(1, 1), (2, 2), (4, 4), (5, 5)]);
        assert_eq!(merge_due(&cover, &[f, f, f, f]), None);
        // Near the cap: the most that fit.
        let big = (ANN_SEGMENT_MAX as i64) / 3;
        let cover = Cover(vec![(1, 1), (2, 2), (3, 3), (4, 4)]);
        assert_eq!(merge_due(&cover, &[big, big, big, big]), Some((1, 3)));
        // None fit two together: none.
        let cover = Cover(vec![(1, 1), (2, 2), (3, 3), (4, 4)]);
        let most = ANN_SEGMENT_MAX as i64 * 3 / 5;
        assert_eq!(merge_due(&cover, &[most, most, most, most]), None);
    }

    #[test]
    fn every_index_merges_into_one_when_the_others_hold_a_seventh() {
        let cover = Cover(vec![(1, 4), (5, 5), (6, 9)]);
        assert_eq!(compact_due(&cover, &[700_000, 50_000, 49_999]), None);
        assert_eq!(
            compact_due(&cover, &[700_000, 50_000, 50_000]),
            Some((1, 9))
        );
        assert_eq!(compact_due(&Cover(vec![(1, 4)]), &[700_000]), None);
    }

    #[test]
    fn a_build_asks_memory_for_its_points_within_bounds() {
        assert_eq!(build_memory_mb(0, 64), BUILD_MEMORY_MIN_MB);
        // A million 64-d points: 1,280 bytes each.
        assert_eq!(build_memory_mb(1_000_000, 64), 1_220);
        assert_eq!(build_memory_mb(10_000_000, 768), BUILD_MEMORY_MAX_MB);
    }
}
