//! The simulated user: a seeded pool of facts about their life ("slots":
//! a sister's name, a city, a job, a deadline), stated, restated, corrected
//! and contradicted over daily sessions, and the questions that ask for
//! them. Deterministic for a seed.

/// A small, fast, seeded generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const NAMES: [&str; 24] = [
    "Anna", "Bruno", "Carla", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas",
    "Keiko", "Lars", "Marta", "Nadia", "Oscar", "Priya", "Quentin", "Rosa", "Stefan", "Tariq",
    "Ulla", "Viktor", "Wanda", "Yusuf",
];
const CITIES: [&str; 16] = [
    "Lisbon", "Porto", "Madrid", "Berlin", "Vienna", "Prague", "Oslo", "Dublin", "Lyon", "Turin",
    "Ghent", "Krakow", "Tallinn", "Seville", "Bergen", "Zagreb",
];
const JOBS: [&str; 10] = [
    "nurse",
    "carpenter",
    "data analyst",
    "teacher",
    "pilot",
    "chef",
    "architect",
    "lawyer",
    "translator",
    "electrician",
];
const VALUES: [&str; 16] = [
    "ramen",
    "jazz",
    "chess",
    "tennis",
    "green tea",
    "sci-fi novels",
    "hiking",
    "salsa",
    "pottery",
    "sushi",
    "blues",
    "rowing",
    "sourdough",
    "poetry",
    "cycling",
    "opera",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// What a slot holds, and whether it can change (a correction or a
/// contradiction needs a slot that can).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotKind {
    /// "My sister's name is Anna" — never changes: the probes ask these.
    Relation,
    BornIn,
    LivesIn,
    Job,
    Favourite,
    Deadline,
}

#[derive(Debug, Clone)]
pub struct Slot {
    pub kind: SlotKind,
    /// The relation or the topic ("sister", "food", "Apollo").
    pub key: String,
    pub value: String,
}

const RELATIONS: [&str; 14] = [
    "sister",
    "brother",
    "mother",
    "father",
    "dog",
    "cat",
    "manager",
    "dentist",
    "best friend",
    "neighbour",
    "cousin",
    "grandmother",
    "landlord",
    "piano teacher",
];
const TOPICS: [&str; 8] = [
    "food", "band", "sport", "drink", "hobby", "book", "film", "game",
];
const PROJECTS: [&str; 8] = [
    "Apollo", "Borealis", "Cedar", "Delta", "Ember", "Fjord", "Granite", "Helix",
];

impl Slot {
    /// Every slot the simulated user may talk about.
    pub fn all() -> Vec<(SlotKind, String)> {
        let mut out: Vec<(SlotKind, String)> = RELATIONS
            .iter()
            .map(|r| (SlotKind::Relation, (*r).to_string()))
            .collect();
        out.push((SlotKind::BornIn, "birthplace".into()));
        out.push((SlotKind::LivesIn, "home".into()));
        out.push((SlotKind::Job, "job".into()));
        out.extend(
            TOPICS
                .iter()
                .map(|t| (SlotKind::Favourite, (*t).to_string())),
        );
        out.extend(
            PROJECTS
                .iter()
                .map(|p| (SlotKind::Deadline, (*p).to_string())),
        );
        out
    }

    pub fn mutable(&self) -> bool {
        !matches!(self.kind, SlotKind::Relation | SlotKind::BornIn)
    }

    pub fn new_value(kind: SlotKind, rng: &mut Rng) -> String {
        match kind {
            SlotKind::Relation => rng.pick(&NAMES).to_string(),
            SlotKind::BornIn | SlotKind::LivesIn => rng.pick(&CITIES).to_string(),
            SlotKind::Job => rng.pick(&JOBS).to_string(),
            SlotKind::Favourite => rng.pick(&VALUES).to_string(),
            SlotKind::Deadline => format!("{} {}", rng.pick(&MONTHS), 1 + rng.below(28)),
        }
    }

    /// The statement of the slot's value.
    pub fn statement(&self) -> String {
        let (k, v) = (&self.key, &self.value);
        match self.kind {
            SlotKind::Relation => format!("My {k}'s name is {v}"),
            SlotKind::BornIn => format!("I was born in {v}"),
            SlotKind::LivesIn => format!("I live in {v} these days"),
            SlotKind::Job => format!("I work as a {v}"),
            SlotKind::Favourite => format!("My favourite {k} is {v}"),
            SlotKind::Deadline => format!("The {k} project deadline is {v}"),
        }
    }

    /// The same fact, worded again.
    pub fn restatement(&self, rng: &mut Rng) -> String {
        let lead = *rng.pick(&[
            "As I said, ",
            "Just so you remember, ",
            "Again: ",
            "Reminder: ",
        ]);
        let s = self.statement();
        let mut chars = s.chars();
        let first = chars
            .next()
            .map(|c| c.to_lowercase().to_string())
            .unwrap_or_default();
        let body = if s.starts_with("I ") {
            s.clone()
        } else {
            format!("{first}{}", chars.as_str())
        };
        format!("{lead}{body}")
    }

    /// A correction to `self`'s (new) value.
    pub fn correction(&self) -> String {
        format!(
            "Actually, that changed: {}",
            self.statement().to_lowercase()
        )
    }

    /// The question the user asks in a session.
    pub fn question(&self) -> String {
        let k = &self.key;
        match self.kind {
            SlotKind::Relation => format!("What is my {k}'s name?"),
            SlotKind::BornIn => "Where was I born?".into(),
            SlotKind::LivesIn => "Which city do I live in these days?".into(),
            SlotKind::Job => "What do I work as?".into(),
            SlotKind::Favourite => format!("What is my favourite {k}?"),
            SlotKind::Deadline => format!("When is the {k} project deadline?"),
        }
    }

    /// The probe: the same question in other words (never asked in a
    /// session), so probe recall measures more than word overlap.
    pub fn probe(&self) -> String {
        let k = &self.key;
        match self.kind {
            SlotKind::Relation => format!("Remind me who my {k} is"),
            SlotKind::BornIn => "Which town do I come from originally?".into(),
            SlotKind::LivesIn => "Where am I living right now?".into(),
            SlotKind::Job => "What job do I have?".into(),
            SlotKind::Favourite => format!("Which {k} do I like the most?"),
            SlotKind::Deadline => format!("By when is {k} due?"),
        }
    }
}

/// Small talk between the facts.
pub const CHATTER: [&str; 8] = [
    "ok thanks",
    "sounds good",
    "let me think about it",
    "it rained a bit this morning",
    "I had a long day",
    "haha nice",
    "can you help me plan the week",
    "I am a bit tired today",
];

/// The seed's calendar: two idle gaps (a week, then two) and a week when
/// the LLM answers nothing usable, each placed by the seed.
#[derive(Debug, Clone)]
pub struct Calendar {
    idle: [std::ops::Range<u32>; 2],
    llm_bad: std::ops::Range<u32>,
}

impl Calendar {
    pub fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed.rotate_left(17));
        let first = 16 + rng.below(9) as u32;
        let second = 50 + rng.below(11) as u32;
        let bad = 28 + rng.below(15) as u32;
        Self {
            idle: [first..first + 7, second..second + 14],
            llm_bad: bad..bad + 7,
        }
    }

    /// Days without any session (the agent is not used; the scheduler runs).
    pub fn idle(&self, day: u32) -> bool {
        self.idle.iter().any(|r| r.contains(&day))
    }

    /// Days the scripted LLM answers every call malformed (a provider gone
    /// bad after weeks of working): its circuits and backoff must keep
    /// everything told, and the work it could not do is done after.
    pub fn llm_bad(&self, day: u32) -> bool {
        self.llm_bad.contains(&day)
    }
}
