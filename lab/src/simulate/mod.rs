//! `mnemo-lab simulate lifecycle`: 90 (or N) days of an agent's life driven
//! through the real core component over a real SQLite file, on a clock the
//! simulation moves minute by minute so every scheduled task (the 30-minute
//! interval cycle, nightly consolidation, enrichment, fading, the weekly
//! reflection) runs at its cron time. Each active day holds one session:
//! the user states facts, restates, corrects and contradicts them, asks
//! questions and chats; the agent resumes, injects context, recalls,
//! remembers and corrects, as an agent on mnemo would. Two idle stretches
//! (a week, two weeks) have no sessions. With `--llm scripted` a local
//! OpenAI-compatible server answers every LLM step, some of its answers
//! malformed or truncated on purpose.
//!
//! What it proves (issue 13), at the end of the run:
//! - `lost`: statements the agent was told that are neither reachable
//!   (active, or in the trash with a reason) nor findable as the text of
//!   their memory, a restatement kept on it, or one of its versions;
//! - `hidden_recent`: statements recalled in the last 14 days whose memory
//!   (following merges and corrections) is no longer active;
//! - `core_decayed`: memories that were in Core and lost confidence or
//!   left for a reason other than a merge, a supersession or a correction;
//! - probe recall: every fact stated on day 0, asked (dry, in other words
//!   than the sessions use) at days 0, 30, 60 and the last day; recall@10
//!   of the expected memory (a correction's, once corrected).

pub mod cli;
mod measure;
mod scripted_llm;
pub mod sweep;
mod world;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use anyhow::Context;
use mnemo_core::model::*;
use serde::Serialize;

pub use measure::Row;
use mnemo_host::Mnemo;
use mnemo_host::clock::HostClock;
use mnemo_host::config::{Config, EmbedderChoice};
use mnemo_host::scheduler::{self, Schedule};
use scripted_llm::ScriptedLlm;
use world::{CHATTER, Rng, Slot};

const NS: &str = "default";
const MINUTE: i64 = 60_000;
const DAY: i64 = 86_400_000;
/// 2026-01-01T00:00:00Z: the simulated day 0.
const START: i64 = 1_767_225_600_000;
/// "Recalled in the last 14 days" (issue 13's `hidden_recent`).
const RECENT_DAYS: u32 = 14;
/// The probes: questions asked at these days (and on the last day).
const PROBE_EVERY: u32 = 30;
/// Facts the user introduces in the first session (the probes' answers).
const INTRO_FACTS: usize = 12;
/// The importance the agent gives what identifies the user.
const IDENTITY_IMPORTANCE: f32 = 0.8;

#[derive(Debug, Clone)]
pub struct SimArgs {
    pub days: u32,
    pub seed: u64,
    /// A scripted LLM (with faults) instead of none.
    pub scripted_llm: bool,
    /// Keep the simulated store in this file (it must not exist yet)
    /// instead of a temporary folder, to inspect it afterwards.
    pub keep: Option<std::path::PathBuf>,
    /// Embed with the configured embedder (the local model by default)
    /// instead of the hash embedder.
    pub real_embedder: bool,
    /// Lift the bounds of LLM work (issue 42): every failed item retried at
    /// every cycle, no circuit, no budget — LLM work as it was before them.
    pub unbounded_llm: bool,
}

#[derive(Debug, Serialize)]
pub struct SimReport {
    pub days: u32,
    pub seed: u64,
    pub llm: &'static str,
    pub embedder: &'static str,
    pub lost: usize,
    pub hidden_recent: usize,
    pub core_decayed: usize,
    pub probe_days: Vec<u32>,
    pub probe_recall: Vec<f32>,
    /// Probes whose expected memory was not active, per probe day.
    pub probe_inactive: Vec<usize>,
    pub probes: usize,
    pub statements: usize,
    pub rows: Vec<Row>,
    /// LLM calls answered, and how many of them malformed or truncated.
    pub llm_calls: u64,
    pub llm_faults: u64,
    /// Scheduled runs that failed (their outcome lines).
    pub failed_tasks: Vec<String>,
    /// Examples behind non-zero `lost` / `hidden_recent` / `core_decayed`.
    pub examples: Vec<String>,
    /// The first day whose end broke an invariant, and its first example.
    pub first_failure: Option<(u32, String)>,
    /// Earlier states kept in the histories at the end.
    pub versions: u64,
}

/// A statement the user made and the agent stored.
#[derive(Debug, Clone)]
pub(crate) struct Statement {
    /// The day it was said.
    pub day: u32,
    pub text: String,
    pub memory: String,
    /// The last day a question about it found it.
    pub recalled: Option<u32>,
}

pub(crate) struct Sim {
    m: Mnemo,
    now: Arc<AtomicI64>,
    schedule: Schedule,
    rng: Rng,
    slots: Vec<Slot>,
    /// The statement holding each slot's current value.
    current: Vec<Option<usize>>,
    pub(crate) statements: Vec<Statement>,
    pub(crate) failed_tasks: Vec<String>,
    pub(crate) restored: u32,
    /// Memories seen in Core at the end of some day, with their confidence then.
    pub(crate) core_seen: std::collections::BTreeMap<String, f32>,
}

pub fn run(base: &Config, args: &SimArgs) -> anyhow::Result<SimReport> {
    let dir = tempfile::tempdir().context("a folder for the simulated store")?;
    let now = Arc::new(AtomicI64::new(START));
    let llm = match args.scripted_llm {
        true => Some(ScriptedLlm::start()?),
        false => None,
    };
    let mut config = base.clone();
    config.db_path = match &args.keep {
        Some(path) if path.exists() => anyhow::bail!("{} exists; name a new file", path.display()),
        Some(path) => path.clone(),
        None => dir.path().join("simulated.db"),
    };
    if !args.real_embedder {
        config.embedder = EmbedderChoice::Hash { dimension: 256 };
    }
    config.clock = HostClock::driven(now.clone());
    config.llm = match &llm {
        Some(server) => scripted_llm_config(&server.base_url, args.unbounded_llm),
        None => mnemo_host::llm::LlmConfig::default(),
    };
    let mut sim = Sim {
        m: Mnemo::open(&config)?,
        now,
        schedule: Schedule::new(|_| None)?,
        rng: Rng::new(args.seed),
        slots: Vec::new(),
        current: Vec::new(),
        statements: Vec::new(),
        failed_tasks: Vec::new(),
        restored: 0,
        core_seen: Default::default(),
    };
    sim.slots = Slot::all()
        .into_iter()
        .map(|(kind, key)| Slot {
            kind,
            key,
            value: Slot::new_value(kind, &mut sim.rng),
        })
        .collect();
    sim.current = vec![None; sim.slots.len()];

    let mut rows = Vec::new();
    let mut probe_days = Vec::new();
    let mut probe_recall = Vec::new();
    let mut probe_inactive = Vec::new();
    let mut probe_slots: Vec<usize> = Vec::new();
    let mut first_failure: Option<(u32, String)> = None;
    let calendar = world::Calendar::new(args.seed);
    for day in 0..=args.days {
        if let Some(server) = &llm {
            server.go_bad(calendar.llm_bad(day));
        }
        if day < args.days && !calendar.idle(day) {
            sim.session(day)?;
        }
        if day == 0 {
            // The probes: every fact stated on day 0. For one corrected
            // later, the answer expected is the correction.
            probe_slots = sim
                .current
                .iter()
                .enumerate()
                .filter(|(_, s)| s.is_some())
                .map(|(i, _)| i)
                .collect();
        }
        // The rest of the day, scheduled tasks at their times (the last
        // day is measured at its start).
        if day < args.days {
            sim.advance_to(START + i64::from(day + 1) * DAY - MINUTE)?;
        }
        sim.note_core()?;
        // The invariants hold at the end of every day, not only the last:
        // a memory hidden for a week and back by day 90 is still a fault.
        if first_failure.is_none() {
            let (lost, hidden, decayed, examples) = sim.verdicts(day)?;
            if lost + hidden + decayed > 0 {
                first_failure = Some((day, examples.into_iter().next().unwrap_or_default()));
            }
        }
        if day % PROBE_EVERY == 0 || day == args.days {
            probe_days.push(day);
            let (recall, inactive) = sim.probe(&probe_slots)?;
            probe_recall.push(recall);
            probe_inactive.push(inactive);
        }
        if (day % 10 == 0 && day > 0) || day == args.days {
            let mut row = sim.row(day)?;
            row.llm_calls = llm.as_ref().map_or(0, |l| l.counts().0);
            rows.push(row);
        }
        if day < args.days {
            sim.advance_to(START + i64::from(day + 1) * DAY)?;
        }
    }
    let (lost, hidden_recent, core_decayed, examples) = sim.verdicts(args.days)?;
    let (llm_calls, llm_faults) = llm.as_ref().map_or((0, 0), ScriptedLlm::counts);
    let versions = sim.versions()?;
    Ok(SimReport {
        days: args.days,
        seed: args.seed,
        llm: if args.scripted_llm { "scripted" } else { "off" },
        embedder: if args.real_embedder {
            "configured"
        } else {
            "hash"
        },
        lost,
        hidden_recent,
        core_decayed,
        probe_days,
        probe_recall,
        probe_inactive,
        probes: probe_slots.len(),
        statements: sim.statements.len(),
        rows,
        llm_calls,
        llm_faults,
        failed_tasks: sim.failed_tasks,
        examples,
        first_failure,
        versions,
    })
}

fn scripted_llm_config(base_url: &str, unbounded: bool) -> mnemo_host::llm::LlmConfig {
    use mnemo_host::llm::{Endpoint, LlmConfig};
    let bounds = if unbounded {
        LlmPolicy {
            circuit_failures: u32::MAX,
            circuit_cooldown_ms: 0,
            retry_base_ms: 0,
            retry_limit: u32::MAX,
            budgets: Vec::new(),
        }
    } else {
        LlmPolicy::default()
    };
    LlmConfig {
        bounds,
        level: LlmLevel::Auto,
        default: Some(Endpoint {
            provider: "openai".into(),
            base_url: base_url.to_string(),
            api_key: None,
            model: "scripted".into(),
        }),
        policy: mnemo_host::http::HttpPolicy {
            timeout: std::time::Duration::from_secs(10),
            retries: 0,
            backoff: std::time::Duration::from_millis(1),
        },
        ..Default::default()
    }
}

impl Sim {
    fn time(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }

    /// Moves the clock minute by minute to `target`, running every task
    /// that falls due on the way, as `mnemo serve`'s scheduler would.
    fn advance_to(&mut self, target: i64) -> anyhow::Result<()> {
        while self.time() < target {
            let next = (self.time() + MINUTE).min(target);
            self.now.store(next, Ordering::SeqCst);
            if next % MINUTE != 0 {
                continue;
            }
            for task in self.schedule.due(next) {
                let outcome = scheduler::run(&mut self.m, task);
                if outcome.starts_with("failed") {
                    self.failed_tasks
                        .push(format!("{}: {outcome}", task.name()));
                }
            }
        }
        Ok(())
    }

    fn say(&mut self, session: &str, role: &str, text: &str) -> anyhow::Result<()> {
        self.m.ingest(Turn {
            namespace: NS.into(),
            session_id: session.into(),
            role: role.into(),
            content: text.into(),
            event_time: None,
            attributes: None,
        })?;
        Ok(())
    }

    /// One session of the day: resume, then five to ten user messages.
    fn session(&mut self, day: u32) -> anyhow::Result<()> {
        let start = START + i64::from(day) * DAY + 10 * 60 * MINUTE;
        let start = start + (self.rng.below(120) as i64) * MINUTE;
        self.advance_to(start)?;
        let session = format!("day-{day}");
        self.m.resume(ResumeRequest {
            namespace: NS.into(),
            hours: 24,
            context: None,
        })?;
        if day == 0 {
            // The first session: the user introduces themselves (what the
            // probes will ask about for the rest of the run).
            let intro: Vec<usize> = (0..self.slots.len())
                .filter(|i| !self.slots[*i].mutable())
                .take(INTRO_FACTS)
                .collect();
            for slot in intro {
                let text = self.slots[slot].statement();
                self.tell(day, &session, slot, &text, None)?;
                self.advance_to(self.time() + 2 * MINUTE)?;
            }
        }
        let messages = 5 + self.rng.below(6);
        for _ in 0..messages {
            self.message(day, &session)?;
            let gap = 2 + self.rng.below(4) as i64;
            self.advance_to(self.time() + gap * MINUTE)?;
        }
        self.say(&session, "assistant", "Talk to you tomorrow.")?;
        // The server embeds new turns in the background; so does the simulation.
        self.m.backfill_vectors(1024)?;
        Ok(())
    }

    fn stated(&self, mutable_only: bool) -> Vec<usize> {
        (0..self.slots.len())
            .filter(|i| self.current[*i].is_some() && (!mutable_only || self.slots[*i].mutable()))
            .collect()
    }

    fn message(&mut self, day: u32, session: &str) -> anyhow::Result<()> {
        let roll = self.rng.below(100);
        let unstated: Vec<usize> = (0..self.slots.len())
            .filter(|i| self.current[*i].is_none())
            .collect();
        let stated = self.stated(false);
        let mutable = self.stated(true);
        if stated.is_empty() || (roll < 35 && !unstated.is_empty()) {
            let Some(&slot) = unstated.first().map(|_| self.rng.pick(&unstated)) else {
                return self.chatter(session);
            };
            let text = self.slots[slot].statement();
            return self.tell(day, session, slot, &text, None);
        }
        if roll < 38 {
            // A burst: the same fact said again and again in a few minutes
            // (the dedup folds them; none may hide the fact).
            let slot = *self.rng.pick(&stated);
            for _ in 0..3 + self.rng.below(3) {
                let text = self.slots[slot].restatement(&mut self.rng);
                self.tell(day, session, slot, &text, None)?;
                self.advance_to(self.time() + MINUTE)?;
            }
            return Ok(());
        }
        if roll < 50 {
            let slot = *self.rng.pick(&stated);
            let text = self.slots[slot].restatement(&mut self.rng);
            return self.tell(day, session, slot, &text, None);
        }
        if roll < 63 && !mutable.is_empty() {
            let slot = *self.rng.pick(&mutable);
            let kind = self.slots[slot].kind;
            let mut value = Slot::new_value(kind, &mut self.rng);
            while value == self.slots[slot].value {
                value = Slot::new_value(kind, &mut self.rng);
            }
            self.slots[slot].value = value;
            // A correction the agent applies, or a contradiction it just stores.
            if roll < 58 {
                let text = self.slots[slot].correction();
                let old = self.current[slot].map(|s| self.statements[s].memory.clone());
                return self.tell(day, session, slot, &text, old);
            }
            let text = self.slots[slot].statement();
            return self.tell(day, session, slot, &text, None);
        }
        if roll < 88 {
            let slot = *self.rng.pick(&stated);
            return self.ask(day, session, slot);
        }
        self.chatter(session)
    }

    fn chatter(&mut self, session: &str) -> anyhow::Result<()> {
        let text = *self.rng.pick(&CHATTER);
        self.say(session, "user", text)?;
        self.say(session, "assistant", "Sure.")
    }

    /// The user states `text` about `slot`; the agent stores it (or, for a
    /// correction, corrects the memory that held the old value).
    fn tell(
        &mut self,
        day: u32,
        session: &str,
        slot: usize,
        text: &str,
        correcting: Option<String>,
    ) -> anyhow::Result<()> {
        self.say(session, "user", text)?;
        self.m.context(NS, text, Some(session), 5)?;
        let corrected = match correcting.and_then(|id| self.resolve(&id).ok().flatten()) {
            Some(old) => Some(self.m.correct(NS, &old.id, text)?),
            None => None,
        };
        let memory = match corrected {
            Some(m) => m,
            None => {
                // Who the user is, the agent marks as such (seed 004's
                // identity category); the rest it stores plainly.
                let identity = !self.slots[slot].mutable();
                self.m
                    .remember(RememberRequest {
                        namespace: NS.into(),
                        content: text.into(),
                        session_id: Some(session.into()),
                        source: Some("agent".into()),
                        tags: if identity {
                            vec!["identity".into()]
                        } else {
                            Vec::new()
                        },
                        importance: identity.then_some(IDENTITY_IMPORTANCE),
                        ..Default::default()
                    })?
                    .memory
            }
        };
        self.statements.push(Statement {
            day,
            text: text.into(),
            memory: memory.id,
            recalled: None,
        });
        self.current[slot] = Some(self.statements.len() - 1);
        self.say(session, "assistant", "Noted, I will remember that.")
    }

    /// The user asks about `slot`; the agent recalls (an access) and, when
    /// the answer waits in the trash, brings it back.
    fn ask(&mut self, day: u32, session: &str, slot: usize) -> anyhow::Result<()> {
        let question = self.slots[slot].question();
        self.say(session, "user", &question)?;
        self.m.context(NS, &question, Some(session), 5)?;
        let hits = self.m.recall(RecallRequest {
            query: question.clone(),
            namespace: NS.into(),
            limit: 10,
            ..Default::default()
        })?;
        let Some(current) = self.current[slot] else {
            return Ok(());
        };
        let expected = self.statements[current].memory.clone();
        let found = match self.resolve(&expected)? {
            Some(m) => hits.hits.iter().any(|h| item_id(&h.item) == m.id),
            None => {
                // In the trash: the user insists, the agent restores it.
                let gone = self.m.get(NS, &expected)?;
                if gone.invalid_reason.is_some() {
                    self.m.restore(NS, &gone.id)?;
                    self.restored += 1;
                }
                false
            }
        };
        if found {
            self.statements[current].recalled = Some(day);
        }
        let answer = format!("You told me: {}", self.statements[current].text);
        self.say(session, "assistant", &answer)
    }

    /// The active memory a stored id leads to, following merges and
    /// supersessions (`superseded_by`); `None` when the chain ends inactive.
    pub(crate) fn resolve(&mut self, id: &str) -> anyhow::Result<Option<Memory>> {
        measure::resolve(&mut self.m, id)
    }

    /// Recall@10 (dry) of the probes' expected memories, and how many of
    /// those memories were not active (a miss by loss, not by ranking).
    fn probe(&mut self, slots: &[usize]) -> anyhow::Result<(f32, usize)> {
        if slots.is_empty() {
            return Ok((0.0, 0));
        }
        let (mut found, mut inactive) = (0, 0);
        for &slot in slots {
            let Some(current) = self.current[slot] else {
                continue;
            };
            let expected = self.statements[current].memory.clone();
            let Some(target) = self.resolve(&expected)? else {
                inactive += 1;
                continue;
            };
            let hits = self.m.recall(RecallRequest {
                query: self.slots[slot].probe(),
                namespace: NS.into(),
                limit: 10,
                dry: true,
                ..Default::default()
            })?;
            found += usize::from(hits.hits.iter().any(|h| item_id(&h.item) == target.id));
        }
        Ok((found as f32 / slots.len() as f32, inactive))
    }
}

fn item_id(item: &Item) -> &str {
    match item {
        Item::Memory(m) => &m.id,
        Item::Episode(e) => &e.id,
    }
}
