//! The scheduler of `mnemo serve`: 5-field cron expressions (minute hour
//! day-of-month month day-of-week, UTC; `*`, lists, ranges, steps) for seed
//! 003's nightly and weekly tasks (enrichment 02:00, consolidation 03:00,
//! fading 04:00, reflection Sunday 03:00) and seed 004's 30-minute
//! consolidation interval, which skips a cycle when nothing was written.
//!
//! [`Ticker`] decides what starts in a minute: each due task once, and not
//! while its previous run is still going ([`RunGuard`]). [`run`] performs one
//! task and logs it with its outcome — tracing, and the decision log (action
//! `scheduled`, target the task's name, detail the outcome).

use mnemo_core::ports::Storage as _;
use std::collections::HashSet;
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, bail};
use mnemo_core::model::{Action, ConsolidateRequest, Decision};

use crate::Mnemo;

/// One cron expression, as bit sets.
#[derive(Debug, Clone, PartialEq)]
pub struct Cron {
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    weekdays: u8,
    days_any: bool,
    weekdays_any: bool,
}

fn field(text: &str, min: u32, max: u32, name: &str) -> anyhow::Result<(u64, bool)> {
    let mut bits = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (
                r,
                s.parse::<u32>()
                    .ok()
                    .filter(|&s| s > 0)
                    .with_context(|| format!("bad step `{s}` in the {name} field"))?,
            ),
            None => (part, 1),
        };
        let (lo, hi) = if range == "*" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (
                a.parse::<u32>()
                    .with_context(|| format!("bad {name} `{a}`"))?,
                b.parse::<u32>()
                    .with_context(|| format!("bad {name} `{b}`"))?,
            )
        } else {
            let v = range
                .parse::<u32>()
                .with_context(|| format!("bad {name} `{range}`"))?;
            (v, if part.contains('/') { max } else { v })
        };
        if lo < min || hi > max || lo > hi {
            bail!("{name} `{range}` is outside {min}-{max}");
        }
        let mut v = lo;
        while v <= hi {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok((bits, text == "*"))
}

impl FromStr for Cron {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Self> {
        let f: Vec<&str> = s.split_whitespace().collect();
        let [m, h, dom, mon, dow] = f.as_slice() else {
            bail!("cron `{s}` needs 5 fields: minute hour day-of-month month day-of-week");
        };
        let (minutes, _) = field(m, 0, 59, "minute")?;
        let (hours, _) = field(h, 0, 23, "hour")?;
        let (days, days_any) = field(dom, 1, 31, "day-of-month")?;
        let (months, _) = field(mon, 1, 12, "month")?;
        let (mut weekdays, weekdays_any) = field(dow, 0, 7, "day-of-week")?;
        if weekdays & (1 << 7) != 0 {
            weekdays |= 1; // 7 is Sunday too
        }
        Ok(Self {
            minutes,
            hours: hours as u32,
            days: days as u32,
            months: months as u16,
            weekdays: (weekdays & 0x7f) as u8,
            days_any,
            weekdays_any,
        })
    }
}

/// UTC calendar fields of a Unix time in milliseconds.
pub fn utc(ms: i64) -> (u32, u32, u32, u32, u32) {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let weekday = (days + 4).rem_euclid(7) as u32; // 1970-01-01 was a Thursday
    (
        (rem / 60 % 60) as u32,
        (rem / 3600) as u32,
        day,
        month,
        weekday,
    )
}

impl Cron {
    /// Whether the minute containing `ms` matches.
    pub fn matches(&self, ms: i64) -> bool {
        let (minute, hour, day, month, weekday) = utc(ms);
        let day_ok = self.days & (1 << day) != 0;
        let weekday_ok = self.weekdays & (1 << weekday) != 0;
        // Standard cron: when both day fields are restricted, either may match.
        let date_ok = match (self.days_any, self.weekdays_any) {
            (true, true) => true,
            (true, false) => weekday_ok,
            (false, true) => day_ok,
            (false, false) => day_ok || weekday_ok,
        };
        self.minutes & (1 << minute) != 0
            && self.hours & (1 << hour) != 0
            && self.months & (1 << month) != 0
            && date_ok
    }
}

/// The scheduled maintenance tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Task {
    /// Seed 003: accurate NER over items with few entities (02:00).
    Enrich,
    /// Seed 003: the nightly consolidation of every pending session, with a
    /// full lifecycle cycle (03:00).
    Consolidate,
    /// Seed 004: the interval cycle, skipped when nothing was written.
    Interval,
    /// Seed 003's nightly Ebbinghaus decay of confidence: fading (04:00).
    Fade,
    /// Seed 003: the weekly reflection (Sunday 03:00).
    Reflect,
}

impl Task {
    pub const ALL: [Task; 5] = [
        Task::Enrich,
        Task::Consolidate,
        Task::Interval,
        Task::Fade,
        Task::Reflect,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Task::Enrich => "enrich",
            Task::Consolidate => "consolidate",
            Task::Interval => "interval",
            Task::Fade => "fade",
            Task::Reflect => "reflect",
        }
    }

    /// The setting that overrides the schedule (`MNEMO_CRON_ENRICH`, ...).
    pub fn setting(self) -> &'static str {
        match self {
            Task::Enrich => "MNEMO_CRON_ENRICH",
            Task::Consolidate => "MNEMO_CRON_CONSOLIDATE",
            Task::Interval => "MNEMO_CRON_INTERVAL",
            Task::Fade => "MNEMO_CRON_FADE",
            Task::Reflect => "MNEMO_CRON_REFLECT",
        }
    }

    /// Seed defaults: seed 003's nightly and weekly tasks, seed 004's
    /// 30-minute consolidation interval.
    pub fn default_cron(self) -> &'static str {
        match self {
            Task::Enrich => "0 2 * * *",
            Task::Consolidate => "0 3 * * *",
            Task::Interval => "*/30 * * * *",
            Task::Fade => "0 4 * * *",
            Task::Reflect => "0 3 * * 0",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Schedule {
    pub tasks: Vec<(Task, Cron)>,
}

impl Schedule {
    /// The seeds' defaults, overridable per task (`off` disables one):
    /// `setting` gives a task's override, if any.
    pub fn new(setting: impl Fn(Task) -> Option<String>) -> anyhow::Result<Self> {
        let mut tasks = Vec::new();
        for task in Task::ALL {
            let value = setting(task);
            let expr = value.as_deref().unwrap_or(task.default_cron());
            if expr.trim() != "off" {
                tasks.push((
                    task,
                    expr.parse()
                        .with_context(|| format!("the {} schedule", task.name()))?,
                ));
            }
        }
        Ok(Self { tasks })
    }

    pub fn due(&self, ms: i64) -> Vec<Task> {
        self.tasks
            .iter()
            .filter(|(_, c)| c.matches(ms))
            .map(|(t, _)| *t)
            .collect()
    }
}

/// What starts when: every due task once per minute, none twice at a time.
#[derive(Debug, Default)]
pub struct Ticker {
    schedule: Schedule,
    last_minute: Option<i64>,
    running: Arc<Mutex<HashSet<Task>>>,
}

/// Marks a task as running until dropped — when its run ends, or when the
/// run is dropped without starting (the engine stopped).
#[derive(Debug)]
pub struct RunGuard {
    task: Task,
    running: Arc<Mutex<HashSet<Task>>>,
}

impl RunGuard {
    pub fn task(&self) -> Task {
        self.task
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.task);
    }
}

impl Ticker {
    pub fn new(schedule: Schedule) -> Self {
        Self {
            schedule,
            ..Self::default()
        }
    }

    /// The runs to start at `ms`: the tasks due in its minute, unless this
    /// minute was already handled; a task whose last run still holds its
    /// guard is skipped (and the skip logged).
    pub fn tick(&mut self, ms: i64) -> Vec<RunGuard> {
        let minute = ms.div_euclid(60_000);
        if self.last_minute == Some(minute) {
            return Vec::new();
        }
        self.last_minute = Some(minute);
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let mut start = Vec::new();
        for task in self.schedule.due(ms) {
            if running.insert(task) {
                start.push(RunGuard {
                    task,
                    running: self.running.clone(),
                });
            } else {
                tracing::warn!(task = task.name(), "still running; this run is skipped");
            }
        }
        start
    }
}

/// Runs one task now, logs it (tracing and the audit log) and returns the
/// outcome line: `ok: ...`, `skipped: ...` or `failed: ...`.
pub fn run(m: &mut Mnemo, task: Task) -> String {
    run_in(m, task, None)
}

/// [`run`] over one namespace (`Some`), or the whole store.
pub fn run_in(m: &mut Mnemo, task: Task, namespace: Option<&str>) -> String {
    let started = std::time::Instant::now();
    let outcome = perform(m, task, namespace).unwrap_or_else(|e| format!("failed: {e:#}"));
    tracing::info!(
        task = task.name(),
        namespace = namespace.unwrap_or("*"),
        ms = started.elapsed().as_millis() as u64,
        %outcome,
        "scheduled task ran"
    );
    let entry = Decision {
        at: crate::ledger::now_ms(),
        namespace: namespace.unwrap_or("*").into(),
        action: Action::Scheduled,
        target_id: task.name().into(),
        detail: outcome.clone(),
    };
    if let Err(e) = m.ports().store.log_decision(&entry) {
        tracing::warn!(error = %e, "could not log the scheduled run");
    }
    outcome
}

/// The scheduled minutes this server claimed, when it shares a Postgres
/// database with others (`storage/postgres/coordinate.rs`); a SQLite file
/// has one server, which runs every task it schedules.
pub struct Claims(Option<crate::storage::PgStore>);

impl Claims {
    /// A connection of its own to `db` when it is Postgres.
    pub fn open(db: &std::path::Path) -> anyhow::Result<Self> {
        match db.to_str().filter(|d| crate::storage::is_postgres_url(d)) {
            Some(url) => Ok(Self(Some(crate::storage::PgStore::open(url)?))),
            None => Ok(Self(None)),
        }
    }

    /// Whether this server runs `task` in minute `slot` (a failed claim is
    /// logged and skips the run: the next minute due asks again).
    pub fn claim(&self, task: Task, slot: i64) -> bool {
        self.claim_key(task.name(), slot)
    }

    /// The namespaces a run of `task` on a shared Postgres database goes
    /// through one at a time, each claimed on its own ([`Self::claim_in`]),
    /// so the servers share the work and each cycle holds only its
    /// namespace's write lock; `None`: one whole-store run (a SQLite file,
    /// and the tasks that are not per namespace).
    pub fn split(&self, task: Task) -> Option<Vec<String>> {
        let pg = self.0.as_ref()?;
        if !matches!(task, Task::Consolidate | Task::Interval | Task::Reflect) {
            return None;
        }
        match pg.namespaces() {
            Ok(namespaces) => Some(namespaces),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "could not list the namespaces; the run is whole-store");
                None
            }
        }
    }

    /// Whether this server runs `task` over `namespace` in minute `slot`.
    pub fn claim_in(&self, task: Task, namespace: &str, slot: i64) -> bool {
        self.claim_key(&format!("{}:{namespace}", task.name()), slot)
    }

    fn claim_key(&self, key: &str, slot: i64) -> bool {
        let Some(pg) = &self.0 else {
            return true;
        };
        match pg.claim_slot(key, slot) {
            Ok(true) => true,
            Ok(false) => {
                tracing::info!(
                    task = key,
                    "scheduled task runs on another server this time"
                );
                false
            }
            Err(e) => {
                tracing::warn!(task = key, error = %format!("{e:#}"), "could not claim the scheduled run; skipped");
                false
            }
        }
    }
}

/// `task`'s work without its log lines: the rehearsal of a planned run
/// (whose writes are forgotten; only its LLM answers are kept).
pub fn rehearse(m: &mut Mnemo, task: Task, namespace: Option<&str>) {
    let _ = perform(m, task, namespace);
}

fn perform(m: &mut Mnemo, task: Task, namespace: Option<&str>) -> anyhow::Result<String> {
    let cycle = |m: &mut Mnemo, if_changed: bool| {
        let req = ConsolidateRequest {
            namespace: namespace.map(str::to_string),
            dry: false,
            if_changed,
            session_idle_minutes: None,
            ..Default::default()
        };
        let r = m.consolidate_as_configured(req)?;
        Ok(if r.skipped {
            "skipped: nothing written since the last cycle".to_string()
        } else {
            let mut outcome = format!(
                "ok: epoch {}, {} actions, {} sessions, {} facts, {} warnings",
                r.epoch,
                r.actions.len(),
                r.sessions.len(),
                r.facts_added,
                r.warnings.len()
            );
            // Each warning's text, so a malformed LLM answer can be found
            // in the decision log, not only counted.
            for w in &r.warnings {
                outcome.push_str("\n  warning: ");
                outcome.push_str(w);
            }
            outcome
        })
    };
    match task {
        Task::Enrich => {
            let r = m.enrich(0)?;
            Ok(format!("ok: examined {}, linked {}", r.examined, r.linked))
        }
        Task::Fade => {
            let r = m.fade_as_configured()?;
            Ok(format!("ok: faded {}, to the trash {}", r.faded, r.pruned))
        }
        Task::Consolidate => cycle(m, false),
        Task::Interval => cycle(m, true),
        Task::Reflect => {
            let mut written = 0;
            let namespaces = match namespace {
                Some(ns) => vec![ns.to_string()],
                None => m.ports().store.namespaces()?,
            };
            for ns in namespaces {
                if m.reflect(&ns, false)?.memory.is_some() {
                    written += 1;
                }
            }
            Ok(format!("ok: {written} reflections"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2023-05-08 (a Monday) 02:00 UTC
    const MON_0200: i64 = 1_683_511_200_000;

    #[test]
    fn calendar_fields() {
        assert_eq!(utc(MON_0200), (0, 2, 8, 5, 1));
        assert_eq!(utc(0), (0, 0, 1, 1, 4));
    }

    #[test]
    fn expressions_match_their_minutes() {
        let nightly: Cron = "0 2 * * *".parse().unwrap_or_else(|_| unreachable!());
        assert!(nightly.matches(MON_0200));
        assert!(nightly.matches(MON_0200 + 59_000), "the whole minute");
        assert!(!nightly.matches(MON_0200 + 60_000));
        let sunday: Cron = "0 3 * * 0".parse().unwrap_or_else(|_| unreachable!());
        assert!(sunday.matches(MON_0200 - 86_400_000 + 3_600_000));
        assert!(!sunday.matches(MON_0200 + 3_600_000));
        let every15: Cron = "*/15 * * * *".parse().unwrap_or_else(|_| unreachable!());
        assert!(
            every15.matches(MON_0200 + 45 * 60_000) && !every15.matches(MON_0200 + 50 * 60_000)
        );
        let list: Cron = "5,10-12 0-3 8 5 7"
            .parse()
            .unwrap_or_else(|_| unreachable!());
        assert!(
            list.matches(MON_0200 + 11 * 60_000),
            "day 8 matches even though Monday is not Sunday"
        );
    }

    #[test]
    fn bad_expressions_say_what_is_wrong() {
        for (bad, says) in [
            ("0 2 * *", "5 fields"),
            ("61 * * * *", "outside"),
            ("*/0 * * * *", "step"),
            ("a * * * *", "minute"),
        ] {
            let e = format!(
                "{:#}",
                bad.parse::<Cron>().err().unwrap_or_else(|| unreachable!())
            );
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_default_schedule_is_seed_003s() {
        let s = Schedule::new(|t| (t == Task::Fade).then(|| "off".to_string())).unwrap_or_default();
        assert_eq!(s.due(MON_0200), [Task::Enrich, Task::Interval]);
        assert_eq!(
            s.due(MON_0200 + 3_600_000),
            [Task::Consolidate, Task::Interval]
        );
        assert_eq!(
            s.due(MON_0200 + 2 * 3_600_000),
            [Task::Interval],
            "fading is off"
        );
        let s = Schedule::new(|_| None).unwrap_or_default();
        assert_eq!(
            s.due(MON_0200 + 2 * 3_600_000),
            [Task::Interval, Task::Fade]
        );
        assert!(s.due(MON_0200 + 10 * 60_000).is_empty());
        // Sunday 03:00: the nightly cycle, the interval and the reflection.
        assert_eq!(
            s.due(MON_0200 - 86_400_000 + 3_600_000),
            [Task::Consolidate, Task::Interval, Task::Reflect]
        );
        assert!(Schedule::new(|t| (t == Task::Enrich).then(|| "nonsense".into())).is_err());
    }

    #[test]
    fn a_minute_starts_once_and_a_running_task_is_not_started_twice() {
        let mut t = Ticker::new(Schedule::new(|_| None).unwrap_or_default());
        let names = |g: &[RunGuard]| g.iter().map(|g| g.task()).collect::<Vec<_>>();
        let first = t.tick(MON_0200 + 5_000);
        assert_eq!(names(&first), [Task::Enrich, Task::Interval]);
        assert!(t.tick(MON_0200 + 15_000).is_empty(), "same minute");
        let [enrich, interval] =
            <[RunGuard; 2]>::try_from(first).unwrap_or_else(|_| unreachable!());
        // 02:30: the interval is due, but its 02:00 run still holds the guard.
        assert!(t.tick(MON_0200 + 30 * 60_000).is_empty(), "skipped");
        drop(interval);
        assert_eq!(
            names(&t.tick(MON_0200 + 60 * 60_000)),
            [Task::Consolidate, Task::Interval],
            "03:00: the interval runs again once its last run ended"
        );
        drop(enrich);
    }
}
