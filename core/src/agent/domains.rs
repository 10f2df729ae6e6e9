//! Life domains for context injection: a prompt and a memory are placed in
//! the domains of a person's life (food, health, travel, …) by the
//! embedder's cosine to short descriptions of each (the best of a domain's
//! descriptions is its affinity), so a prompt that acts in a domain
//! ("suggest a dinner recipe") can bring the standing facts of that domain
//! (a food intolerance, a diet) that share no words and little meaning with
//! it. The descriptions say what belongs to a domain, in general words;
//! none is taken from an evaluation set. Their vectors are made once per
//! engine instance and embedder.

use std::sync::{Mutex, PoisonError};

use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Embedder, Storage};
use crate::vector;

/// Each domain's name and the descriptions its affinity is the best of.
pub const DOMAINS: [(&str, &[&str]); 16] = [
    (
        "food",
        &[
            "cooking a meal or dinner",
            "a recipe to make",
            "snacks and drinks",
            "eating out at a restaurant or ordering takeaway",
            "what someone eats and does not eat",
            "a food allergy or intolerance",
            "a diet such as vegetarian, vegan or gluten-free",
            "coffee, tea and drinks",
        ],
    ),
    (
        "health",
        &[
            "a health problem or illness",
            "seeing a doctor",
            "medicine and medication",
            "an allergy",
            "pain or an injury",
            "a chronic condition",
            "symptoms such as a headache or tiredness",
        ],
    ),
    (
        "fitness",
        &[
            "a workout or training plan",
            "going for a run",
            "exercise at the gym",
            "playing a sport",
            "a race or a long walk",
            "an injury that limits exercise",
            "a sports team and its matches",
        ],
    ),
    (
        "sleep",
        &[
            "trouble sleeping",
            "going to bed and waking up",
            "feeling tired at night",
        ],
    ),
    (
        "travel",
        &[
            "a holiday or trip",
            "booking a flight",
            "a seat on a plane",
            "hotels and sightseeing",
            "travelling by boat or train",
            "a passport",
            "fear or sickness while travelling",
        ],
    ),
    (
        "work",
        &[
            "the job and career",
            "the manager and colleagues",
            "a meeting at work",
            "a work project or presentation",
            "working hours",
        ],
    ),
    (
        "home",
        &[
            "the house or flat",
            "repairs at home",
            "furniture and appliances",
            "the garden or balcony",
            "the landlord and rent",
            "neighbours",
        ],
    ),
    (
        "money",
        &[
            "money and budget",
            "saving money",
            "spending and bills",
            "the bank account",
            "a loan",
        ],
    ),
    (
        "family",
        &[
            "the partner, wife or husband",
            "the children",
            "parents and relatives",
            "a birthday present for family",
            "a brother or sister",
        ],
    ),
    (
        "pets",
        &[
            "the dog",
            "the cat",
            "the vet",
            "food and treats for a pet",
            "walking the dog",
            "a pet's health",
        ],
    ),
    (
        "tech",
        &[
            "the phone",
            "the laptop or computer",
            "the internet and Wi-Fi",
            "apps and software",
        ],
    ),
    (
        "learning",
        &[
            "learning a language",
            "a course or lessons",
            "practising an instrument",
            "studying for an exam",
        ],
    ),
    (
        "leisure",
        &[
            "a book to read",
            "a film or series to watch",
            "music",
            "a hobby",
            "games",
        ],
    ),
    (
        "social",
        &[
            "friends",
            "a party or hosting guests",
            "helping a friend",
            "a gift for a friend",
        ],
    ),
    (
        "schedule",
        &[
            "an appointment",
            "a reminder",
            "the time to leave",
            "a routine in the morning",
            "what is booked this month",
        ],
    ),
    (
        "transport",
        &[
            "commuting to work",
            "driving the car",
            "the bus, metro or train",
            "cycling",
        ],
    ),
];

/// The descriptions' vectors for one embedder, in `DOMAINS` order, with
/// the domain each belongs to.
#[derive(Clone)]
pub(crate) struct Prototypes {
    model: String,
    vectors: Vec<(usize, Vec<f32>)>,
}

/// One engine instance's prototypes (an instance runs one call at a time;
/// the lock only makes the `static` sound).
static HELD: Mutex<Option<Prototypes>> = Mutex::new(None);

impl Prototypes {
    /// The prototypes of `embedder`, made on first use. Each description
    /// is embedded alone, so a host's cache of single texts serves every
    /// instance after the first.
    pub(crate) fn of(embedder: &impl Embedder) -> CoreResult<Self> {
        let model = embedder.info().model;
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = held.as_ref().filter(|p| p.model == model) {
            return Ok(p.clone());
        }
        let mut vectors = Vec::new();
        for (domain, (_, texts)) in DOMAINS.iter().enumerate() {
            for text in *texts {
                if let Some(v) = embedder.embed(&[text.to_string()])?.pop() {
                    vectors.push((domain, v));
                }
            }
        }
        let made = Self { model, vectors };
        *held = Some(made.clone());
        Ok(made)
    }

    /// A vector's affinity to each domain: its best cosine to the domain's
    /// descriptions (−1 for a domain with none).
    pub(crate) fn affinities(&self, v: &[f32]) -> Vec<f32> {
        let mut out = vec![-1.0f32; DOMAINS.len()];
        for (domain, p) in &self.vectors {
            out[*domain] = out[*domain].max(vector::cosine(v, p));
        }
        out
    }

    /// The memories nearest each description of `domain`, `k` each (the
    /// domain channel's candidates), under `filter`.
    pub(crate) fn nearest(
        &self,
        storage: &impl Storage,
        domain: usize,
        filter: &SearchFilter,
        k: u32,
    ) -> CoreResult<Vec<String>> {
        let mut out = Vec::new();
        for (_, p) in self.vectors.iter().filter(|(d, _)| *d == domain) {
            for hit in storage.vector_search(Target::Memories, p, filter, k)? {
                if !out.contains(&hit.id) {
                    out.push(hit.id);
                }
            }
        }
        Ok(out)
    }
}

/// The domains' names and descriptions (for the lab's study of them).
pub fn described() -> impl Iterator<Item = (&'static str, &'static str)> {
    DOMAINS
        .iter()
        .flat_map(|(name, texts)| texts.iter().map(move |t| (*name, *t)))
}
