//! Every threshold and weight of the engine, in one place, with the value the
//! seeds give (seed 004 §8 unless noted) or the reason it differs.

/// Recall fusion: reciprocal rank fusion constant, `Σ 1/(RRF_K + rank)` (seed 003).
pub const RRF_K: f32 = 60.0;

// ---- Validation (seed 004 §1, §2) -----------------------------------------
pub const MAX_CONTENT_CHARS: usize = 8192;
pub const MAX_TAGS: usize = 20;
pub const MAX_TAG_CHARS: usize = 32;
pub const MAX_SOURCE_CHARS: usize = 64;
/// Namespace names: short identifiers (not in the seeds; keeps keys sane).
pub const MAX_NAMESPACE_CHARS: usize = 64;
/// The namespace rule (`validate::namespace`) as the API's schemas state
/// it: letters, digits, `_`, `-`, `.`, `:`, at most `MAX_NAMESPACE_CHARS`
/// (empty means `default`).
pub const NAMESPACE_PATTERN: &str = r"^[A-Za-z0-9_.:-]{0,64}$";
pub const MAX_SESSION_CHARS: usize = 128;
pub const MAX_ROLE_CHARS: usize = 255;
pub const MAX_RECALL_LIMIT: u32 = 200;
pub const DEFAULT_RECALL_LIMIT: u32 = 10;

// ---- Insert dedup (seed 004 §2.1) -----------------------------------------
/// Jaccard pre-filter before the cosine check.
pub const DEDUP_JACCARD_PREFILTER: f32 = 0.50;
/// Cosine above which a Jaccard-similar memory is a duplicate. Seed 004 uses
/// 0.85 at the DB level; its API-level 0.65 (INSERT_DEDUP_SIM, for
/// text-embedding-3-small) folds distinct facts together under MiniLM
/// (docs/design/design.md measured 58% of a LoCoMo conversation), so mnemo keeps the
/// Jaccard gate in front of every cosine decision.
pub const DEDUP_COSINE_SIM: f32 = 0.85;
/// Seed 004's API-level semantic dedup threshold, kept for reference and for
/// providers it was tuned for; never applied without the Jaccard gate.
pub const INSERT_DEDUP_SIM: f32 = 0.65;
/// Jaccard alone (no embedding available) must be this high to fold.
pub const DEDUP_JACCARD_ONLY: f32 = 0.90;
/// How many nearest memories the dedup check looks at.
pub const DEDUP_CANDIDATES: u32 = 5;
/// Core overlap scan (seed 004 §3 step 5): Core pairs above this cosine are
/// flagged once (decision `overlap`), for the review and the user to see.
pub const CORE_OVERLAP_SIM: f32 = 0.70;
/// Insert-time LLM content merge above this cosine (seed 004 §2.1). No LLM
/// call waits on a request: the restatement is kept and the next cycle's
/// merge step folds it into the text (the earlier text becomes a version).
pub const INSERT_MERGE_SIM: f32 = 0.80;

// ---- Defaults of a new memory ---------------------------------------------
pub const DEFAULT_IMPORTANCE: f32 = 0.5;
pub const DEFAULT_CONFIDENCE: f32 = 1.0;
/// Ebbinghaus decay rate per day of a new fact (seed 003 `decay_rate DEFAULT 0.1`).
pub const DEFAULT_DECAY_RATE: f32 = 0.1;
/// Repetition counts 2.5× more than access (seed 004 `REPETITION_WEIGHT`).
pub const REPETITION_WEIGHT: f32 = 2.5;

// ---- Recall scoring (seed 004 §4.2, §4.3) ---------------------------------
pub const WEIGHT_RELEVANCE: f32 = 0.60;
pub const WEIGHT_IMPORTANCE: f32 = 0.20;
pub const WEIGHT_RECENCY: f32 = 0.20;
/// Recency half-life unit: `exp(-decay_rate × age_hours / 168)`.
pub const RECENCY_HOURS: f32 = 168.0;
pub const LAYER_BONUS_BUFFER: f32 = 0.9;
pub const LAYER_BONUS_WORKING: f32 = 1.0;
pub const LAYER_BONUS_CORE: f32 = 1.1;
/// Cosine floor for semantic hits (seed 004 `DEFAULT_SIM_FLOOR`).
pub const DEFAULT_SIM_FLOOR: f32 = 0.30;
/// Relevance blends the two text channels: `LEXICAL_WEIGHT × bm25/best +
/// (1 − LEXICAL_WEIGHT) × cosine`, the cosine taken for every candidate that
/// has a vector. Not seed 004's shape: there relevance is the cosine, raised
/// for dual hits (`× 1 + fts × 0.3 × min(1, cos / 0.45)`) and FTS-only hits
/// are capped at `fts × 0.25` — right for text-embedding-3-small, wrong for
/// all-MiniLM-L6-v2, which ranks worse than BM25 on dialogue. Measured on
/// LoCoMo dev (760 questions, with the context column and speaker factor):
/// seed shape R@10 0.647 / Hit@1 0.346 (`mnemo-lab eval locomo --relevance
/// semantic`); in a prototype over the same vectors, blend at
/// 0.4, 0.5, 0.6 (speaker ×1.2) → 0.738–0.747 / 0.463–0.467; the seed's dual-hit boost or
/// FTS-only cap on top of the blend lowered Hit@1 (0.451, 0.454).
pub const LEXICAL_WEIGHT: f32 = 0.5;
/// The blend's lexical weight for embedders that rank dialogue better than
/// MiniLM, by model name (`scoring::lexical_weight_for`). all-mpnet-base-v2
/// (`scripts/fetch-model --mpnet`): on LoCoMo dev, its own top 200 per
/// question replayed with each list cut at 40 (`lab/scripts/locomo-replay`,
/// docs/evaluation.md), R@10 / Hit@1 / multi-hop R@10 at lexical weight 0.2:
/// 0.792 / 0.530 / 0.528; 0.25: 0.796 / 0.536 / 0.541; 0.3: 0.797 / 0.526 /
/// 0.542; 0.4: 0.790 / 0.532 / 0.510; 0.5: 0.781 / 0.525 / 0.508. MiniLM
/// over its own candidates, the same way, at 0.25 / 0.3 / 0.4 / 0.5:
/// 0.771 / 0.492, 0.779 / 0.508, 0.779 / 0.513, 0.777 / 0.522 — it keeps
/// 0.5.
pub const LEXICAL_WEIGHT_BY_MODEL: &[(&str, f32)] = &[("all-mpnet-base-v2", 0.25)];
/// Seed 004 §4.3's own relevance (`Relevance::Semantic`), for strong
/// embedders: dual hits `× (1 + fts × DUAL_HIT_FTS_BOOST × min(1, cos /
/// DUAL_HIT_SEM_GATE))`, FTS-only hits capped at `fts × FTS_ONLY_CAP`.
pub const DUAL_HIT_FTS_BOOST: f32 = 0.3;
pub const DUAL_HIT_SEM_GATE: f32 = 0.45;
pub const FTS_ONLY_CAP: f32 = 0.25;
/// Short CJK queries (seed 004 §4.3): dual-hit boost 0.6, FTS-only cap 0.40.
pub const CJK_SHORT_FTS_BOOST: f32 = 0.6;
pub const FTS_ONLY_CAP_CJK: f32 = 0.40;
/// Short CJK queries lean further on the index: seed 004 §4.3 found the
/// embedding weak on them (it doubled the FTS boost, 0.3 → 0.6).
pub const LEXICAL_WEIGHT_CJK_SHORT: f32 = 0.7;
/// Short CJK query floor for hits both channels found (seed 004 §4.3):
/// `relevance ≥ CJK_SHORT_FLOOR_BASE + fts × CJK_SHORT_FLOOR_SCALE`.
pub const CJK_SHORT_FLOOR_BASE: f32 = 0.50;
pub const CJK_SHORT_FLOOR_SCALE: f32 = 0.35;
/// A CJK query shorter than this many chars is "short".
pub const CJK_SHORT_QUERY_CHARS: usize = 10;
/// A turn whose speaker the query names ("what did Caroline…", "what did the
/// user say…"): `relevance ×= SPEAKER_BOOST`. Not in the seeds. Measured on
/// LoCoMo dev with the blend (prototype): Hit@1 0.421 without it; 0.467,
/// 0.475, 0.483 at ×1.2, ×1.25, ×1.3.
pub const SPEAKER_BOOST: f32 = 1.25;
/// Semantic-only hits sharing no query term: `relevance *= KEYWORD_AFFINITY_PENALTY`.
pub const KEYWORD_AFFINITY_PENALTY: f32 = 0.7;
/// Tags in a recall request rank, they do not filter: a memory carrying all
/// of them gets `relevance × (1 + TAG_BOOST)`, a share of them a share of
/// that. Not in the seeds (the retrieval issue asks for a soft boost).
pub const TAG_BOOST: f32 = 0.2;
/// Fact-linked memories get this relevance (seed 004 §4.1).
pub const FACT_RELEVANCE: f32 = 1.0;
/// Relevance floor of an entity-channel hit (not in the seeds: seed 003 fuses
/// the entity channel by rank only; this keeps such hits above FTS-only ones).
pub const ENTITY_RELEVANCE: f32 = 0.30;
/// Only hits above this relevance are touched by recall (seed 004 §4.5).
pub const TOUCH_MIN_RELEVANCE: f32 = 0.5;
/// Auto query expansion below this top relevance (seed 004 §4.4).
pub const AUTO_EXPAND_THRESHOLD: f32 = 0.25;
/// BM25 weight of the turn before an episode (indexed with it) against the
/// episode's own words. Not in the seeds: a reply is found by the question it
/// answers. Measured on LoCoMo dev (BM25 alone, R@10): 0.645 without the
/// context, 0.690 at 0.25, 0.708 at 0.5, 0.706 at 0.75 (Hit@1 falls above 0.5).
pub const EPISODE_CONTEXT_WEIGHT: f32 = 0.5;
/// Session context (`read/dialogue.rs`, not in the seeds): an episode
/// candidate gains `SESSION_WEIGHT ×` the best relevance among the
/// candidates of its session (the right session first, then the turn). Set
/// on LoCoMo dev (760 questions) by `lab/scripts/locomo-replay`, which re-scores
/// the engine's top-200 candidates per question (`mnemo-lab eval locomo --k 200
/// --out F --explain`), R@10 / Hit@1: none 0.744 / 0.467, 0.1 → 0.747 /
/// 0.467, and 0.1 with the turn before's relevance × 0.1 → 0.756 / 0.474
/// (that term reads every candidate session: `dialogue.rs` says why it is
/// not kept). In the engine, with the question reading below: 0.750 / 0.500.
pub const SESSION_WEIGHT: f32 = 0.1;
/// An answer follows its question (`read/dialogue.rs`, not in the seeds):
/// an episode candidate whose turn just before, in its session, is a
/// candidate and a question gains `REPLY_WEIGHT ×` that question's
/// relevance. Turn order comes from `SESSION_TURN_KEY`, stamped at ingest.
/// Replayed on LoCoMo dev over the engine's top 200 with each list cut at
/// 40 (`lab/scripts/locomo-replay`, docs/evaluation.md), R@10 / Hit@1 / temporal
/// R@10, MiniLM: none 0.777 / 0.522 / 0.877, 0.1 → 0.779 / 0.532 / 0.864,
/// 0.2 → 0.780 / 0.538 / 0.861, 0.3 → 0.780 / 0.541 / 0.861;
/// all-mpnet-base-v2 (`--lexical 0.25`): none 0.796 / 0.536 / 0.893, 0.1 →
/// 0.802 / 0.549 / 0.887, 0.2 → 0.804 / 0.555 / 0.887, 0.3 → 0.804 /
/// 0.568 / 0.887 (0.3 costs multi-hop R@10 0.008 with MiniLM, 0.010 with
/// mpnet). In the engine, R@10 / Hit@1: MiniLM 0.778 / 0.511 → 0.781 /
/// 0.522; mpnet 0.798 / 0.537 → 0.806 / 0.557. The nearest earlier candidate instead of
/// the turn just before (no turn order needed): 0.776 / 0.533 (MiniLM),
/// 0.797 / 0.551 (mpnet).
pub const REPLY_WEIGHT: f32 = 0.2;
/// The episode attribute holding a turn's place in its session (1 for the
/// first), stamped by ingest from the session's turn count unless the
/// caller set it.
pub const SESSION_TURN_KEY: &str = "session_turn";
/// A dialogue turn's vector (`vector_parts.rs`, not in the seeds) is
/// `TURN_WHOLE_WEIGHT ×` the whole turn's embedding plus the rest × the
/// mean of its sentences' (each with the turn's speaker label), so a clause
/// of a long turn is not blurred away. Set on LoCoMo dev by re-scoring the
/// engine's top-200 candidates with MiniLM cosines of such vectors
/// (`lab/scripts/locomo-replay`), R@10 / Hit@1 / multi-hop R@10: whole turn
/// only 0.764 / 0.509 / 0.467; whole weight 0.3 → 0.778 / 0.520 / 0.497,
/// 0.4 → 0.782 / 0.522 / 0.502, 0.5 → 0.784 / 0.522 / 0.505, 0.6 → 0.779 /
/// 0.521 / 0.495, 0.7 → 0.776 / 0.520 / 0.491; the sentences' best cosine
/// instead of their mean (several vectors a turn) 0.778 / 0.516 / 0.500.
pub const TURN_WHOLE_WEIGHT: f32 = 0.5;
/// At most this many sentences of one turn are embedded as its parts (the
/// rest count through the whole turn): a bound on the backfill's cost for
/// a pasted document. LoCoMo dev's longest turns have 8.
pub const VECTOR_PARTS_MAX: usize = 16;
/// A candidate whose time falls in a date the query names (`read/
/// question.rs`: "on October 25, 2022", "in May 2023", "in June", "last
/// week") has its relevance × `DATE_MATCH_BOOST`; the window reaches
/// `DATE_MATCH_SLACK_DAYS` past the date, as what happened is told after it
/// happened. Not in the seeds. Set on LoCoMo dev (86 of 760 questions name
/// a date) by `lab/scripts/locomo-replay` (the replay of `SESSION_WEIGHT`), on
/// top of the session context, R@10 / Hit@1: none 0.747 / 0.467, × 1.2
/// 0.752 / 0.483, × 1.5 0.760 / 0.489; slack 0, 7 or 31 days 0.760 /
/// 0.488, 0.760 / 0.489, 0.757 / 0.487.
pub const DATE_MATCH_BOOST: f32 = 1.5;
pub const DATE_MATCH_SLACK_DAYS: i64 = 7;
/// A question that asks for a time ("when …") or a quantity ("how many …")
/// raises the candidates whose text holds one (a time word, month, year;
/// a number) × `ANSWER_TYPE_BOOST`. Same replay, on top of the date match:
/// "when" at × 1.1 / 1.2 / 1.5 → 0.759 / 0.497, 0.764 / 0.503, 0.763 /
/// 0.500 (from 0.760 / 0.489; temporal Hit@1 0.628 → 0.692 at × 1.2);
/// then quantities at × 1.2 → 0.764 / 0.509.
pub const ANSWER_TYPE_BOOST: f32 = 1.2;
/// Candidate list size per channel: `limit × CHANNEL_FANOUT`, at least `CHANNEL_MIN`.
pub const CHANNEL_FANOUT: u32 = 4;
pub const CHANNEL_MIN: u32 = 40;
/// The full-text channel over episodes is read `FTS_SCORE_DEPTH ×` deeper
/// than the fused list (`read/recall.rs`, not in the seeds): the extra
/// matches add no candidates, they give a turn only the vector channel
/// found its BM25 (without it the blend counts its words as no match: a
/// question and the turn that answers it share few words). LoCoMo dev,
/// replayed from the engine's top-200 (`lab/scripts/locomo-replay`) with the
/// fused list cut at 40 a channel, R@10 / Hit@1: BM25 for the first 40
/// only 0.763 / 0.522, to 100 0.768 / 0.522, 200 0.774 / 0.522, 400 0.777
/// / 0.522, all 0.777 / 0.522; `mnemo-lab eval locomo` 0.764 → 0.778. Memories
/// keep the fused list's depth: nothing measured there asks for it, and
/// on `mnemo-lab bench`'s 10,000 memories the deeper read took recall p50 from
/// 5.4 to 7.7–8.1 ms.
pub const FTS_SCORE_DEPTH: u32 = 10;
/// Rough characters per token, for token budgets.
pub const CHARS_PER_TOKEN: usize = 4;

// ---- Ebbinghaus (seed 003) -----------------------------------------------
/// Memories faded under this confidence go to the trash (nightly fading).
pub const CONFIDENCE_PRUNE_THRESHOLD: f32 = 0.05;

// ---- Layer lifecycle (seed 004 §1, §2, §8) ---------------------------------
/// Buffer entries per namespace before the lowest-weight ones are evicted.
pub const BUFFER_CAP: usize = 200;
/// Reinforcement score (`access + repetition × 2.5`) for Working→Core candidacy.
pub const PROMOTE_THRESHOLD: f32 = 3.0;
/// Buffer→Working by reinforcement: `max(PROMOTE_THRESHOLD, 5)`.
pub const BUFFER_PROMOTE_SCORE: f32 = 5.0;
/// Minimum importance of a Working→Core candidate.
pub const PROMOTE_MIN_IMPORTANCE: f32 = 0.6;
/// Lessons and procedures leave Buffer after this many epochs there.
pub const KIND_PROMOTE_EPOCHS: u64 = 4;
/// Age-based Working→Core candidacy (`working_age_promote_secs` = 7 days).
pub const WORKING_AGE_PROMOTE_MS: i64 = 7 * 86_400_000;
/// Gate-rejection cooldowns in epochs: first retry, second retry, then never.
pub const GATE_RETRY_EPOCHS: u64 = 48;
pub const GATE_RETRY2_EPOCHS: u64 = 144;
/// Tag cleanup (seed 004 §3 step 1, "after sufficient epochs without
/// access"; the seed gives no number): a first `gate-rejected` marker on a
/// Working memory not read since the rejection is dropped after twice the
/// second cooldown, so a memory that comes back into use after a long quiet
/// spell starts the escalation afresh instead of at its last step.
pub const TAG_CLEANUP_EPOCHS: u64 = 2 * GATE_RETRY2_EPOCHS;
/// Access / repetition counts the gate prompt calls out as a strong signal.
pub const GATE_HIGH_ACCESS: u32 = 30;
pub const GATE_HIGH_REPETITION: u32 = 2;
/// Importance lost per epoch by an episodic memory; semantic and procedural
/// lose 60% and 20% of it.
pub const IMPORTANCE_DECAY: f32 = 0.005;
pub const DECAY_SHARE_EPISODIC: f32 = 1.0;
pub const DECAY_SHARE_SEMANTIC: f32 = 0.6;
pub const DECAY_SHARE_PROCEDURAL: f32 = 0.2;
/// Buffer memories below this importance are evicted (Working/Core never are).
pub const DECAY_DROP_THRESHOLD: f32 = 0.01;
/// Buffer triage: only memories older than this, at most this many a cycle.
pub const TRIAGE_MIN_AGE_MS: i64 = 10 * 60_000;
pub const TRIAGE_BATCH: usize = 20;
/// Buffer dedup during consolidation (cosine, no LLM).
pub const TRIAGE_DEDUP_SIM: f32 = 0.75;
/// Buffer dedup compares every pair of at most this many memories (the cap
/// is `BUFFER_CAP`); a larger Buffer — swollen by a bulk import or a burst
/// of writes between cycles — is first capped to this by the cap's rule.
/// Ours: all pairs of 100,000 did not finish in 10 minutes.
pub const BUFFER_DEDUP_ALL_PAIRS: usize = 2_000;

// ---- Session consolidation (seed 003) --------------------------------------
/// Episodes read per extraction chunk.
pub const CONSOLIDATION_CHUNK: u32 = 30;
/// A new fact this Jaccard-similar to a stored one reinforces it instead.
pub const FACT_BATCH_JACCARD: f32 = 0.75;
/// Confidence an outdated fact keeps once a conflicting one supersedes it.
pub const CONFLICT_OLD_CONFIDENCE: f32 = 0.3;
/// Relevance of a memory whose fact a correction superseded, relative to
/// what it would have been: the old value ranks below its replacement
/// (seed 003 `resolve_conflict` lowers the old fact to the same 0.3).
pub const SUPERSEDED_RELEVANCE_FACTOR: f32 = CONFLICT_OLD_CONFIDENCE;
/// Fact-graph walks stop after this many hops (seed 004 §4.1).
pub const FACT_GRAPH_MAX_HOPS: u32 = 2;

// ---- Weekly reflection (seed 003) -------------------------------------------
pub const REFLECTION_MIN_SPACING_MS: i64 = 6 * 86_400_000;
pub const REFLECTION_WINDOW_MS: i64 = 7 * 86_400_000;
pub const REFLECTION_MIN_FACTS: usize = 3;
pub const REFLECTION_MAX_ITEMS: u32 = 200;

// ---- Context injection (seed 003) and resume (seed 004 §7) ------------------
pub const CONTEXT_LIMIT: u32 = 5;
pub const RESUME_CORE_TOKENS: usize = 2000;
/// Resume with a context (seed 004 §8): a Core memory is shown when its
/// cosine to the context, plus a boost for identity and constraints
/// (`RESUME_HIGH_RELEVANCE`) or lessons and procedures
/// (`RESUME_LOW_RELEVANCE`), reaches `RESUME_CORE_THRESHOLD`; a Recent one
/// when its cosine reaches `RESUME_WORKING_THRESHOLD`.
pub const RESUME_HIGH_RELEVANCE: f32 = 0.25;
pub const RESUME_LOW_RELEVANCE: f32 = 0.10;
pub const RESUME_CORE_THRESHOLD: f32 = 0.35;
pub const RESUME_WORKING_THRESHOLD: f32 = 0.20;
pub const RESUME_RECENT_TOKENS: usize = 1000;
pub const RESUME_TOPIC_TOKENS: usize = 500;
pub const RESUME_TRIGGER_TOKENS: usize = 200;
pub const RESUME_DEFAULT_HOURS: u32 = 24;
/// Core ordering in resume: `importance × kind_boost × (1 + rep × 2.5)`.
pub const KIND_BOOST_PROCEDURAL: f32 = 1.3;
pub const KIND_BOOST_SEMANTIC: f32 = 1.0;
pub const KIND_BOOST_EPISODIC: f32 = 0.8;

// ---- Topic tree (seed 004 §6.5) ---------------------------------------------
pub const TOPIC_ASSIGN_THRESHOLD: f32 = 0.30;
pub const TOPIC_MERGE_THRESHOLD: f32 = 0.55;
/// Leaves whose centroids are this close share a parent topic (seed 004
/// §6.3's hierarchy gives no number; this is its assign threshold: the
/// similarity at which an entry belongs with a leaf).
pub const TOPIC_PARENT_SIM: f32 = TOPIC_ASSIGN_THRESHOLD;
pub const TOPIC_MAX_LEAF_SIZE: usize = 8;
pub const TOPIC_MIN_INTERNAL_SIM: f32 = 0.35;
pub const TOPIC_LEAF_BUDGET: usize = 256;
pub const TOPIC_ABSORB_THRESHOLD: f32 = 0.40;
/// Leaves of at most this many members are absorbed when close enough.
pub const TOPIC_SMALL_LEAF: usize = 2;
pub const TOPIC_MAX_CYCLES: usize = 10;
pub const TOPIC_NAMING_BATCH: usize = 30;
/// Most memories one tree is built from (newest first). Not in the seeds: it
/// bounds the rebuild's cost on a very large namespace.
pub const TOPIC_MAX_ENTRIES: u32 = 5000;

// ---- LLM merge, reconcile, distill (seed 004 §3.1–3.3) ----------------------
/// Near-duplicates the LLM merges.
pub const MERGE_SIM: f32 = 0.78;
/// Same-topic window the LLM reconciles: `RECONCILE_MIN_SIM < sim < RECONCILE_MAX_SIM`.
pub const RECONCILE_MIN_SIM: f32 = 0.55;
pub const RECONCILE_MAX_SIM: f32 = MERGE_SIM;
/// The newer entry must be at least this much newer.
pub const RECONCILE_MIN_GAP_MS: i64 = 3_600_000;
/// Session notes needed before a distillation, and the most it reads.
pub const DISTILL_MIN_NOTES: usize = 3;
pub const DISTILL_MAX_NOTES: usize = 10;
/// Pair judgements (merge or reconcile) asked of the LLM per cycle, and the
/// neighbours looked at per changed memory. Not in the seeds: seed 004 scans
/// all pairs; mnemo looks only at what changed since the last cycle, so a
/// cycle's cost does not grow with the store.
pub const LLM_PAIRS_PER_CYCLE: usize = 20;
pub const PAIR_NEIGHBOURS: u32 = 5;
/// Changed memories whose neighbours are examined per cycle.
pub const PAIR_SCAN_MAX: usize = 200;

// ---- the LLM review and its rules (seed 004 §5: the audit and its sandbox) ---
/// Share of a review's operations that must pass the review rules for any to run.
pub const REVIEW_SAFETY_THRESHOLD: f32 = 0.70;
/// Memories modified this recently are not touched by an audit.
pub const REVIEW_RECENT_MOD_HOURS: f32 = 24.0;
/// Memories younger than this are protected from an audit.
pub const REVIEW_NEW_AGE_HOURS: f32 = 48.0;
/// Merge hints in the review prompt: pairs in this cosine window.
pub const REVIEW_MERGE_MIN_SIM: f32 = 0.65;
pub const REVIEW_MERGE_MAX_SIM: f32 = MERGE_SIM;
/// Most memories one audit reviews (newest first). Not in the seeds: it
/// bounds the prompt.
pub const REVIEW_MAX_MEMORIES: u32 = 200;

// ---- Query expansion and rerank (seed 004 §4.4–4.5) --------------------------
/// Alternative phrases an expansion may add (seed: 4–6).
pub const MAX_EXPANSIONS: usize = 6;
/// Rerank interpolation: `score × (1 − w) + w × (1 − position / n)`. Not in
/// the seeds, which only say the scores are interpolated.
pub const RERANK_WEIGHT: f32 = 0.5;

/// Context injection with a model embedder (`agent/gate.rs`): every
/// candidate (recall's first `CONTEXT_CANDIDATES`, the memories nearest the
/// prompt's vector, and those nearest the descriptions of the prompt's two
/// best life domains, `CONTEXT_DOMAIN_K` each) is scored by a logistic model
/// of nine signals, and the best `limit` scoring at least
/// `CONTEXT_MIN_SCORE` are injected. The weights, in `gate::Signals`'
/// order (cosine, cosine less the best candidate's, BM25 over the best,
/// recall's first, domain link, the best cosine, the prompt's domain
/// strength, a hard constraint, a hard constraint × its domain affinity ×
/// the prompt's), then the intercept. Fitted by
/// `lab/scripts/context-fit` on tests/fixtures/context/tune-tomas.json
/// (all-MiniLM-L6-v2, blend, each class weighted to half), never on
/// report-aiko.json, the set docs/evaluation.md reports. Not in the seeds.
pub const CONTEXT_WEIGHTS: [f32; 9] =
    [9.601, 5.777, 0.885, 1.74, 3.616, 0.784, 1.973, 1.295, 8.991];
pub const CONTEXT_INTERCEPT: f32 = -4.85;
/// The score a candidate needs (the model's log-odds; 0 would be even
/// odds). Chosen on the tuning user: recall 0.775 at precision 0.491, the
/// highest threshold before recall falls.
pub const CONTEXT_MIN_SCORE: f32 = 0.25;
/// Recall's hits a context considers (more than it shows).
pub const CONTEXT_CANDIDATES: u32 = 10;
/// Memories read nearest each description of a prompt's life domain.
pub const CONTEXT_DOMAIN_K: u32 = 8;
/// A prompt neither about the user (`gate::personal`) nor as close as this
/// to any memory (the best candidate's cosine) injects nothing: a question
/// about the world ("how many days are there in a leap year?"). Off-topic
/// prompts of the tuning user: 2 of 22 inject with it, 10 of 22 without.
pub const CONTEXT_OFF_TOPIC_COSINE: f32 = 0.38;

/// The hash embedder's cosine (tests, tiny machines, the JavaScript
/// host's default) is word overlap, not meaning: its gate is the relevance,
/// or the best keyword match of the prompt (BM25's first), over recall's
/// page (`gate::HashGate`). `MNEMO_EMBEDDER=hash mnemo-lab eval context`,
/// the held-out user: blend recall 0.386 / precision 0.529, semantic
/// 0.205 / 0.818 (docs/evaluation.md).
pub const CONTEXT_MIN_RELEVANCE_HASH_BLEND: f32 = 0.58;
pub const CONTEXT_MIN_RELEVANCE_HASH_SEMANTIC: f32 = 0.30;
/// Embedder names (`hash-384`, ...) whose gate is `…_HASH_…`.
pub const HASH_EMBEDDER_PREFIX: &str = "hash";

/// A pending session is consolidated once it has been idle this long, or
/// when a newer session of its namespace starts (the design's rule for
/// sessions; seed 004's interval cycle runs every 30 minutes, so a session
/// idle for one interval is closed by the next).
pub const SESSION_IDLE_MINUTES: u32 = 30;

// ---- Bounded LLM work (issue 42; the host's settings override) ----------
/// Consecutive failures (unusable answers after their one repair, or
/// provider errors) that open an LLM step's circuit. Three items in a row is
/// past chance for a model that mostly answers well, and caps a model that
/// never does at three items' worth of calls.
pub const LLM_CIRCUIT_FAILURES: u32 = 3;
/// How long an open circuit skips its step before one probe call: one
/// interval of seed 004's 30-minute consolidation cycle.
pub const LLM_CIRCUIT_COOLDOWN_MS: i64 = 30 * 60_000;
/// The wait after an item's first failed LLM step, doubled at each further
/// failure: two intervals of the 30-minute cycle, so the very next cycle
/// leaves it alone (1 h, 2 h, 4 h, 8 h).
pub const LLM_RETRY_BASE_MS: i64 = 60 * 60_000;
/// Failures after which an item is parked until retried by hand: with the
/// doubling above, about 15 hours of tries, so a nightly run sees it parked.
pub const LLM_RETRY_LIMIT: u32 = 5;
/// LLM calls one engine call (a cycle, a session trigger, a rebuild) may
/// make in all: a healthy cycle costs 2 calls per session (issue 42's
/// measurement: 38 calls for 20 sessions), so 200 clears a backlog of about
/// 100 sessions while a failing model costs at most this much.
pub const LLM_CYCLE_CALLS: u32 = 200;
/// LLM calls of background steps per clock hour, in all: three full cycles.
pub const LLM_HOUR_CALLS: u32 = 600;
