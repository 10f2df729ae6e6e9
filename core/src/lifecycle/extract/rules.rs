//! The rule tables of the extractor: first-person cues and the predicate
//! each gives, possessive relations ("my sister lives in …"), and the words
//! that mark a hedge, end an object or make an object not a fact. Tuned on
//! `tests/fixtures/extraction/turns.jsonl` (labelled before tuning; see
//! `quality.rs`).

/// (cue, predicate, single-valued). The cue is matched at a word start in
/// the lower-cased clause; the object is what follows it.
pub(super) const CUES: &[(&str, &str, bool)] = &[
    ("my name is ", "is named", true),
    ("i live in ", "lives in", true),
    ("i moved to ", "lives in", true),
    ("i live near ", "lives near", true),
    ("i used to live in ", "used to live in", false),
    ("i was born in ", "was born in", true),
    ("i work at ", "works at", true),
    ("i work for ", "works at", true),
    ("i work as a ", "works as", true),
    ("i work as an ", "works as", true),
    ("i'm originally from ", "is from", true),
    ("i am originally from ", "is from", true),
    ("i'm from ", "is from", true),
    ("i am from ", "is from", true),
    ("i'm married to ", "is married to", true),
    ("i am married to ", "is married to", true),
    ("i'm moving to ", "is moving to", true),
    ("i am moving to ", "is moving to", true),
    ("i'm allergic to ", "is allergic to", false),
    ("i am allergic to ", "is allergic to", false),
    ("i'm afraid of ", "is afraid of", false),
    ("i am afraid of ", "is afraid of", false),
    ("i'm learning ", "is learning", false),
    ("i am learning ", "is learning", false),
    ("i'm working on ", "is working on", false),
    ("i am working on ", "is working on", false),
    ("i'm training for ", "is training for", false),
    ("i am training for ", "is training for", false),
    ("i'm looking for ", "is looking for", false),
    ("i am looking for ", "is looking for", false),
    ("i'm really into ", "is into", false),
    ("i'm into ", "is into", false),
    ("i am into ", "is into", false),
    ("i graduated from ", "graduated from", true),
    ("i study ", "studies", false),
    ("i speak ", "speaks", false),
    ("i play ", "plays", false),
    ("i drive ", "drives", false),
    ("i own ", "owns", false),
    ("i collect ", "collects", false),
    ("i listen to ", "listens to", false),
    ("i prefer ", "prefers", false),
    ("i love ", "loves", false),
    ("i like ", "likes", false),
    ("i enjoy ", "enjoys", false),
    ("i hate ", "dislikes", false),
    ("i dislike ", "dislikes", false),
    ("i don't like ", "dislikes", false),
    ("i do not like ", "dislikes", false),
    ("i never liked ", "dislikes", false),
    ("i don't eat ", "does not eat", false),
    ("i do not eat ", "does not eat", false),
    ("i don't have ", "does not have", false),
    ("i do not have ", "does not have", false),
    ("i'm a ", "is a", false),
    ("i am a ", "is a", false),
    ("i'm an ", "is an", false),
    ("i am an ", "is an", false),
    ("i have a ", "has a", false),
    ("i have an ", "has an", false),
];

/// (cue, predicate): the object must start with a number ("I'm 29", "I
/// have two kids", "I am 34 years old").
pub(super) const COUNTED: &[(&str, &str)] = &[("i'm ", "is"), ("i am ", "is"), ("i have ", "has")];

/// What follows "my <relation>" (one or two words): (verb, predicate
/// suffix, single-valued). "My sister lives in Toronto" → "sister lives in".
pub(super) const RELATION_VERBS: &[(&str, &str, bool)] = &[
    ("'s name is ", "'s name", true),
    (" is called ", " is called", true),
    (" is named ", " is named", true),
    (" lives in ", " lives in", true),
    (" works at ", " works at", true),
    (" works for ", " works at", true),
    (" is ", " is", true),
];

/// Relations "my …" may name (family, people around, pets, dates).
pub(super) const RELATIONS: &[&str] = &[
    "wife",
    "husband",
    "partner",
    "girlfriend",
    "boyfriend",
    "son",
    "daughter",
    "kid",
    "child",
    "mother",
    "mom",
    "mum",
    "father",
    "dad",
    "sister",
    "brother",
    "grandmother",
    "grandfather",
    "aunt",
    "uncle",
    "cousin",
    "niece",
    "nephew",
    "friend",
    "best friend",
    "boss",
    "manager",
    "colleague",
    "neighbour",
    "neighbor",
    "landlord",
    "doctor",
    "dentist",
    "therapist",
    "dog",
    "cat",
    "pet",
    "birthday",
    "anniversary",
    "hometown",
];

/// Words before a cue that make the clause a hedge, not a statement.
pub(super) const HEDGES: &[&str] = &[
    "maybe",
    "might",
    "perhaps",
    "probably",
    "i guess",
    "i think",
    "not sure",
    "i wonder",
    "wondering",
    "if i",
    "would",
    "i'd",
];

/// Words that end an object: the clause goes on with something else.
pub(super) const STOPS: &[&str] = &[
    "and",
    "but",
    "because",
    "so",
    "which",
    "who",
    "when",
    "since",
    "though",
    "although",
    "if",
    "or",
    "too",
    "as",
    "with",
    "last",
    "these",
    "this",
    "yesterday",
    "today",
    "tomorrow",
];

/// Objects that are not facts about the speaker: pronouns and the things
/// one "has" for a moment ("I have a question", "I'm a bit tired").
pub(super) const NOT_OBJECTS: &[&str] = &[
    "you", "it", "that", "this", "them", "those", "these", "him", "her", "question", "meeting",
    "call", "problem", "idea", "feeling", "moment", "minute", "second", "look", "chance", "go",
    "bit", "little", "lot", "favour", "favor", "quick", "few", "great", "good", "nice", "long",
];

/// Number words that may open a counted object.
pub(super) const NUMBER_WORDS: &[&str] = &[
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
];
