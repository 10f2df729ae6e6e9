//! Which candidates a context injects. With a model embedder each
//! candidate's signals (`Signals`) are weighed by a logistic model whose
//! weights were fitted on a labelled user and checked on another
//! (`thresholds.rs`, `CONTEXT_WEIGHTS`); a prompt about the world rather
//! than the user (`personal`, `CONTEXT_OFF_TOPIC_COSINE`) injects nothing.
//! The hash embedder's cosine is word overlap, so its gate stays recall's
//! relevance (`HashGate`).

use crate::model::*;
use crate::thresholds::*;

/// What a gate reads of one candidate memory, in `CONTEXT_WEIGHTS`' order.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Signals {
    /// The prompt's cosine to the memory.
    pub cosine: f32,
    /// `cosine` less the best candidate's (≤ 0).
    pub cosine_gap: f32,
    /// BM25 over the best BM25 of recall's hits (0: no keyword match).
    pub keywords: f32,
    /// 1 for recall's first hit.
    pub first: f32,
    /// The domain link: over the prompt's two best life domains, the best
    /// of the smaller of the prompt's and the memory's affinity.
    pub domain_link: f32,
    /// The best candidate's cosine (how close the prompt is to anything).
    pub best_cosine: f32,
    /// The prompt's affinity to its best domain.
    pub domain_strength: f32,
    /// 1 for a hard constraint (`hard_constraint`).
    pub hard: f32,
    /// `hard` × the memory's affinity to the prompt's best domain × the
    /// prompt's: a constraint of the domain the prompt acts in.
    pub hard_in_domain: f32,
}

impl Signals {
    fn values(&self) -> [f32; 9] {
        [
            self.cosine,
            self.cosine_gap,
            self.keywords,
            self.first,
            self.domain_link,
            self.best_cosine,
            self.domain_strength,
            self.hard,
            self.hard_in_domain,
        ]
    }

    /// The model's log-odds that the memory is needed.
    pub fn score(&self) -> f32 {
        self.values()
            .iter()
            .zip(CONTEXT_WEIGHTS)
            .map(|(x, w)| x * w)
            .sum::<f32>()
            + CONTEXT_INTERCEPT
    }
}

/// The words of a text as written, apostrophes kept inside a word
/// ("can't", "I'm").
fn raw_words(text: &str) -> Vec<String> {
    text.replace('\u{2019}', "'")
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\'').to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

/// `raw_words`, lower-cased.
fn words(text: &str) -> Vec<String> {
    raw_words(text).iter().map(|w| w.to_lowercase()).collect()
}

/// Whether a memory states a hard constraint: a health condition, an
/// allergy, a diet or an aversion that limits what may be suggested in its
/// domain (seed 004's CONSTRAINT category, read from the words). English
/// only; a memory in another language is scored without it.
pub fn hard_constraint(text: &str) -> bool {
    const STEMS: [&str; 6] = [
        "allerg",
        "intoleran",
        "diabet",
        "injur",
        "sprain",
        "herniat",
    ];
    const WORDS: [&str; 14] = [
        "coeliac",
        "celiac",
        "gluten",
        "vegetarian",
        "vegan",
        "pescatarian",
        "halal",
        "kosher",
        "asthma",
        "chronic",
        "arthritis",
        "epipen",
        "inhaler",
        "seasick",
    ];
    const PHRASES: [&[&str]; 13] = [
        &["must", "not"],
        &["mustn't"],
        &["can't", "eat"],
        &["cannot", "eat"],
        &["doesn't", "eat"],
        &["does", "not", "eat"],
        &["doesn't", "drink"],
        &["does", "not", "drink"],
        &["no", "meat"],
        &["afraid", "of"],
        &["car", "sick"],
        &["travel", "sick"],
        &["motion", "sick"],
    ];
    let w = words(text);
    w.iter()
        .any(|x| STEMS.iter().any(|s| x.starts_with(s)) || WORDS.contains(&x.as_str()))
        || PHRASES.iter().any(|p| {
            w.windows(p.len())
                .any(|win| win.iter().zip(*p).all(|(a, b)| a == b))
        })
}

/// Whether a prompt is about the user (a first-person word, or a request
/// an assistant carries out for them: "plan …", "book …"), not a question
/// about the world. "Me" after tell, give or show asks for something
/// ("tell me a joke"); "US" in capitals is the country.
pub fn personal(prompt: &str) -> bool {
    const FIRST_PERSON: [&str; 16] = [
        "i",
        "i'm",
        "i've",
        "i'd",
        "i'll",
        "my",
        "mine",
        "myself",
        "we",
        "we're",
        "we've",
        "we'll",
        "our",
        "ours",
        "ourselves",
        "us",
    ];
    const ASKING: [&str; 3] = ["tell", "give", "show"];
    const REQUESTS: [&str; 13] = [
        "plan",
        "suggest",
        "recommend",
        "book",
        "find",
        "help",
        "remind",
        "pick",
        "choose",
        "organise",
        "organize",
        "schedule",
        "order",
    ];
    let raw = raw_words(prompt);
    let w: Vec<String> = raw.iter().map(|x| x.to_lowercase()).collect();
    let first_person = w
        .iter()
        .zip(&raw)
        .any(|(x, r)| FIRST_PERSON.contains(&x.as_str()) && !(x == "us" && *r == "US"));
    let me = w
        .iter()
        .enumerate()
        .any(|(i, x)| x == "me" && (i == 0 || !ASKING.contains(&w[i - 1].as_str())));
    first_person || me || w.first().is_some_and(|x| REQUESTS.contains(&x.as_str()))
}

/// Whether the prompt names, with a definite article, a thing `content`
/// names: "a treat for the dog" and "The user's dog is a whippet". "The"
/// presumes the listener knows which dog, so a memory naming one is the
/// user's: a concept link that holds where the model's cosine is low (0.32
/// for that pair with MiniLM). The noun is the word right after "the" (two
/// words let "why is the sky blue?" name a memory's blue hair); a plural
/// matches its singular.
pub fn refers_to(prompt: &str, content: &str) -> bool {
    let named: Vec<String> = words(content).iter().map(|w| singular(w)).collect();
    words(prompt)
        .windows(2)
        .any(|p| p[0] == "the" && p[1].len() > 2 && named.contains(&singular(&p[1])))
}

/// `word` without a plural's "s" ("dogs" → "dog"; "glass" stays).
fn singular(word: &str) -> String {
    match word.strip_suffix('s') {
        Some(stem) if stem.len() > 2 && !stem.ends_with('s') => stem.to_string(),
        _ => word.to_string(),
    }
}

/// The hash embedder's gate: recall's relevance, or (in `blend`) the
/// prompt's best keyword match.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HashGate {
    pub min_relevance: Score,
    pub best_keyword_match: bool,
}

impl HashGate {
    pub fn for_mode(mode: Relevance) -> Self {
        Self {
            min_relevance: match mode {
                Relevance::Blend => CONTEXT_MIN_RELEVANCE_HASH_BLEND,
                Relevance::Semantic => CONTEXT_MIN_RELEVANCE_HASH_SEMANTIC,
            },
            best_keyword_match: mode == Relevance::Blend,
        }
    }

    pub fn passes(&self, hit: &Hit) -> bool {
        let first_by_keywords = self.best_keyword_match
            && hit
                .explanation
                .channels
                .iter()
                .any(|c| c.channel == Channel::Fts && c.rank == 1);
        first_by_keywords || hit.explanation.relevance >= self.min_relevance
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_constraints_are_read_from_the_words() {
        for yes in [
            "The user is lactose intolerant.",
            "Aiko has coeliac disease and has to eat strictly gluten-free.",
            "Biscoito must not have ordinary dog treats.",
            "She sprained her ankle in October.",
            "The user is afraid of heights.",
            "Omar doesn't eat pork.",
            "Her son is allergic to peanuts.",
        ] {
            assert!(hard_constraint(yes), "{yes}");
        }
        for no in [
            "The user loves Thai curries.",
            "The user's dog is a grey whippet called Pixel.",
            "The user can't wait for the holidays.",
            "Dinner is at eight.",
        ] {
            assert!(!hard_constraint(no), "{no}");
        }
    }

    #[test]
    fn a_prompt_about_the_user_is_told_from_one_about_the_world() {
        for yes in [
            "what should I make for dinner tonight?",
            "book me a flight to Berlin",
            "plan snacks for game night",
            "we're visiting Madeira",
            "when is our next release?",
        ] {
            assert!(personal(yes), "{yes}");
        }
        for no in [
            "how many days are there in a leap year?",
            "tell me a joke about penguins",
            "give me a synonym for 'happy'",
            "how does a bill become law in the US?",
            "what's a good treat for the dog?",
        ] {
            assert!(!personal(no), "{no}");
        }
    }

    #[test]
    fn a_definite_noun_links_to_the_memory_naming_it() {
        let dog = "The user's dog is a grey whippet called Pixel";
        assert!(refers_to("what's a good treat for the dog?", dog));
        assert!(refers_to("how often should I walk the dogs", dog));
        assert!(!refers_to("write a limerick about a dog", dog));
        assert!(!refers_to("why is the sky blue?", dog));
        assert!(!refers_to(
            "why is the sky blue?",
            "Aiko once dyed her hair blue."
        ));
        assert!(!refers_to("the grass needs cutting", "a glass of wine"));
    }

    #[test]
    fn the_score_rises_with_each_positive_signal() {
        let base = Signals {
            cosine: 0.2,
            cosine_gap: -0.1,
            best_cosine: 0.3,
            domain_strength: 0.4,
            ..Default::default()
        };
        let s = base.score();
        assert!(
            Signals {
                cosine: 0.4,
                ..base
            }
            .score()
                > s
        );
        assert!(
            Signals {
                keywords: 1.0,
                ..base
            }
            .score()
                > s
        );
        assert!(Signals { first: 1.0, ..base }.score() > s);
        assert!(
            Signals {
                hard: 1.0,
                hard_in_domain: 0.2,
                ..base
            }
            .score()
                > s
        );
        assert!(CONTEXT_WEIGHTS.iter().all(|w| *w > 0.0));
    }
}
