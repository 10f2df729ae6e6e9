//! The local embedding models against sentence-transformers' own output
//! (`tests/fixtures/{minilm,mpnet}-reference.json`, computed once by
//! `tests/fixtures/make_embedding_reference.py`), in f32 and in 8 bits. Needs the model files:
//! `.ci/run` installs them and sets `MNEMO_MODEL_DIR`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use mnemo_core::model::*;
use mnemo_host::config::{Config, EmbedderChoice};
use mnemo_host::embedding::{EmbeddingProvider, LocalEmbedder, Precision};

fn model_dir() -> std::path::PathBuf {
    let settings = mnemo_host::config::Settings::load(None).unwrap();
    let dir = Config::model_dir_of(&settings);
    assert!(
        dir.join("model.safetensors").is_file(),
        "the embedding model is not installed at {}; run `scripts/fetch-model` (or `.ci/run`, which does)",
        dir.display()
    );
    dir
}

/// A store in `dir` that embeds with the local model.
fn open_local(dir: &std::path::Path) -> mnemo_host::Mnemo {
    let mut cfg = common::config(dir);
    cfg.embedder = EmbedderChoice::Local {
        dir: model_dir(),
        dimension: None,
        precision: Precision::Auto,
    };
    mnemo_host::Mnemo::open(&cfg).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

/// all-mpnet-base-v2's folder: `MNEMO_MPNET_DIR`, else where
/// `scripts/fetch-model --mpnet` puts it.
fn mpnet_dir() -> std::path::PathBuf {
    let settings = mnemo_host::config::Settings::load(None).unwrap();
    let dir = std::env::var_os("MNEMO_MPNET_DIR").map_or_else(
        || {
            Config::data_dir_of(&settings)
                .join("models")
                .join("all-mpnet-base-v2")
        },
        std::path::PathBuf::from,
    );
    assert!(
        dir.join("model.safetensors").is_file(),
        "all-mpnet-base-v2 is not installed at {}; run `scripts/fetch-model --mpnet` (or `.ci/run`, which does)",
        dir.display()
    );
    dir
}

fn reference() -> (Vec<String>, Vec<Vec<f32>>) {
    reference_of("minilm-reference.json")
}

fn reference_of(fixture: &str) -> (Vec<String>, Vec<Vec<f32>>) {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures")
            .join(fixture),
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let sentences = serde_json::from_value(v["sentences"].clone()).unwrap();
    let embeddings = serde_json::from_value(v["embeddings"].clone()).unwrap();
    (sentences, embeddings)
}

/// A model folder's vectors at every precision against
/// sentence-transformers' own (`tests/fixtures/make_embedding_reference.py`),
/// batched and alone, stored and query. f32 weights are the reference's
/// own arithmetic; 8-bit ones (the query path by default, everything at
/// `q8`) stay close enough that rankings do not move (docs/evaluation.md).
/// `floors`: the least cosine in f32, and in 8 bits.
fn matches_at_every_precision(dir: &std::path::Path, fixture: &str, floors: (f32, f32)) {
    let (sentences, expected) = reference_of(fixture);
    let (f32_floor, q8_floor) = floors;
    for (precision, stored_floor, query_floor) in [
        (Precision::F32, f32_floor, f32_floor),
        (Precision::Auto, f32_floor, q8_floor),
        (Precision::Q8, q8_floor, q8_floor),
    ] {
        let model = LocalEmbedder::load_with(dir, None, precision).unwrap();
        assert_eq!(model.info().dimension as usize, expected[0].len());
        let stored = model.embed(&sentences).unwrap();
        let queries = model.embed_queries(&sentences).unwrap();
        for (i, s) in sentences.iter().enumerate() {
            let want = &expected[i];
            let one = model.embed(std::slice::from_ref(s)).unwrap();
            let one_query = model.embed_queries(std::slice::from_ref(s)).unwrap();
            for (what, got, floor) in [
                ("batched", &stored[i], stored_floor),
                ("single", &one[0], stored_floor),
                ("batched query", &queries[i], query_floor),
                ("single query", &one_query[0], query_floor),
            ] {
                let c = cosine(got, want);
                assert!(c >= floor, "{precision:?}, {what} sentence {i}: cosine {c}");
                let norm: f32 = got.iter().map(|x| x * x).sum::<f32>().sqrt();
                assert!((norm - 1.0).abs() < 1e-4);
            }
        }
    }
}

/// all-MiniLM-L6-v2 through `bert.rs`. The lowest cosines measured over
/// these sentences: 0.9999999 in f32, 0.9989 in 8 bits.
#[test]
fn minilm_matches_sentence_transformers_at_every_precision() {
    let model = LocalEmbedder::load(&model_dir(), None).unwrap();
    assert_eq!(model.info().model, "all-MiniLM-L6-v2");
    matches_at_every_precision(&model_dir(), "minilm-reference.json", (0.9999, 0.995));
}

/// all-mpnet-base-v2 (`scripts/fetch-model --mpnet`; `.ci/run` installs it
/// and sets `MNEMO_MPNET_DIR`) through `mpnet.rs`. The lowest cosines
/// measured over these sentences: 0.9999999 in f32, 0.9987 in 8 bits.
#[test]
fn mpnet_matches_sentence_transformers_at_every_precision() {
    let dir = mpnet_dir();
    let model = LocalEmbedder::load(&dir, None).unwrap();
    assert_eq!(
        model.info().model,
        dir.file_name().unwrap().to_str().unwrap()
    );
    matches_at_every_precision(&dir, "mpnet-reference.json", (0.9999, 0.995));
}

/// Through the real component, with either model: a memory's stored
/// vector comes from the f32 encoder and a recall's query from the 8-bit
/// one, so asking for the memory's own words finds it at a cosine just
/// under 1 (at `f32`, 1).
#[test]
fn a_recall_searches_with_the_eight_bit_encoder_and_stores_f32() {
    let text = "Melanie signed up for a pottery class yesterday";
    for model in [model_dir(), mpnet_dir()] {
        let mut cosines = Vec::new();
        for precision in [Precision::Auto, Precision::F32] {
            let dir = tempfile::tempdir().unwrap();
            let mut cfg = common::config(dir.path());
            cfg.embedder = EmbedderChoice::Local {
                dir: model.clone(),
                dimension: None,
                precision,
            };
            let mut m = mnemo_host::Mnemo::open(&cfg).unwrap();
            common::remember(&mut m, "", text);
            let r = m
                .recall(RecallRequest {
                    query: text.into(),
                    ..Default::default()
                })
                .unwrap();
            let vector = r.hits[0]
                .explanation
                .channels
                .iter()
                .find(|c| c.channel == Channel::Vector)
                .unwrap();
            cosines.push(vector.raw_score);
        }
        let (auto, f32) = (cosines[0], cosines[1]);
        let name = model.display();
        assert!(
            f32 > 0.99999,
            "{name}: f32 query against its stored vector: {f32}"
        );
        assert!(
            (0.995..0.99999).contains(&auto),
            "{name}: 8-bit query: {auto}"
        );
    }
}

#[test]
fn an_unknown_precision_names_the_setting() {
    let err = "q4".parse::<Precision>().unwrap_err();
    assert!(err.contains("MNEMO_MODEL_PRECISION"), "{err}");
}

#[test]
fn matryoshka_truncation_renormalises() {
    let model = LocalEmbedder::load(&model_dir(), Some(256)).unwrap();
    assert_eq!(model.info().dimension, 256);
    assert_eq!(model.info().model, "all-MiniLM-L6-v2@256");
    let (sentences, expected) = reference();
    let got = model.embed(&sentences[..2]).unwrap();
    for (g, want) in got.iter().zip(&expected) {
        assert_eq!(g.len(), 256);
        let norm: f32 = g.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
        assert!(cosine(g, &want[..256]) >= 0.99);
    }
    assert!(LocalEmbedder::load(&model_dir(), Some(1000)).is_err());
}

#[test]
fn a_missing_model_says_how_to_install_it() {
    let err = LocalEmbedder::load(std::path::Path::new("/nonexistent/model"), None)
        .err()
        .unwrap();
    assert!(format!("{err:#}").contains("scripts/fetch-model"));
}

#[test]
fn recall_finds_paraphrases_with_the_local_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open_local(dir.path());
    common::remember(
        &mut m,
        "",
        "The user adores felines and has two of them at home",
    );
    common::remember(&mut m, "", "Quarterly revenue grew by twelve percent");
    let r = m
        .recall(RecallRequest {
            query: "does she have cats?".into(),
            ..Default::default()
        })
        .unwrap();
    assert!(r.channels_run.contains(&Channel::Vector));
    assert!(
        r.hits[0].item.content().contains("felines"),
        "{:?}",
        r.hits.iter().map(|h| h.item.content()).collect::<Vec<_>>()
    );
    assert!(
        r.hits[0]
            .explanation
            .channels
            .iter()
            .any(|c| c.channel == Channel::Vector)
    );
}

/// A dialogue turn of several sentences is stored with the vector the core
/// makes of its parts (`vector_parts`, `combine_parts`) through the real
/// backfill, and that vector brings the question about one of its clauses
/// closer than the whole turn's embedding alone.
#[test]
fn a_turn_is_embedded_whole_and_by_sentence() {
    use mnemo_core::ports::Storage;
    let dir = tempfile::tempdir().unwrap();
    let mut m = open_local(dir.path());
    let turn = "Melanie: Yep, Caroline. Taking care of ourselves is vital. \
                I'm off to go swimming with the kids. Talk to you soon!";
    let id = m
        .ingest(Turn {
            session_id: "s1".into(),
            role: "Melanie".into(),
            content: turn.into(),
            ..Default::default()
        })
        .unwrap()
        .episode
        .id;
    assert_eq!(m.backfill_all(16, |_| {}).unwrap(), 1);
    let stored = m
        .ports()
        .store
        .get_vectors(Target::Episodes, &[id])
        .unwrap();
    let stored = &stored[0].1;

    let model = LocalEmbedder::load(&model_dir(), None).unwrap();
    let parts = mnemo_core::vector_parts(Target::Episodes, turn);
    assert_eq!(parts.len(), 5, "the turn and its four sentences: {parts:?}");
    assert_eq!(parts[3], "Melanie: I'm off to go swimming with the kids.");
    let expected = mnemo_core::combine_parts(&model.embed(&parts).unwrap());
    assert!(
        cosine(stored, &expected) > 0.9999,
        "the stored vector is the parts' combination"
    );

    let question = &model
        .embed(&["What activities does Melanie partake in?".into()])
        .unwrap()[0];
    let whole = &model.embed(&[turn.to_string()]).unwrap()[0];
    assert!(
        cosine(stored, question) > cosine(whole, question),
        "parts {} against whole {}",
        cosine(stored, question),
        cosine(whole, question)
    );
}

/// Context injection finds a paraphrase that shares no word with the fact
/// (the local model's cosine decides), and injects nothing for a prompt
/// about nothing remembered.
#[test]
fn context_injects_a_paraphrase_with_the_local_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open_local(dir.path());
    for fact in [
        "The user's daughter is allergic to peanuts",
        "The user runs three times a week",
        "The user's car is a 2018 Toyota Yaris",
        "The user works as a data engineer",
    ] {
        m.remember(RememberRequest {
            content: fact.into(),
            ..Default::default()
        })
        .unwrap();
    }
    m.backfill_all(64, |_| {}).unwrap();
    let injected = |m: &mut mnemo_host::Mnemo, prompt: &str| -> Vec<String> {
        let block = m.context("default", prompt, None, 0).unwrap();
        block.memories.into_iter().map(|x| x.content).collect()
    };
    for prompt in [
        "any allergies I should know about?",
        "what should I cook for my daughter tonight?",
    ] {
        let got = injected(&mut m, prompt);
        assert!(
            got.contains(&"The user's daughter is allergic to peanuts".to_string()),
            "{prompt}: {got:?}"
        );
    }
    assert_eq!(
        injected(&mut m, "What's the capital of Australia?"),
        Vec::<String>::new()
    );
}

/// Issue 71's two examples on a fresh store: recall ranks the memory first
/// and the context now injects it; a question about the world injects
/// nothing; a prompt that acts in a domain brings that domain's constraint.
#[test]
fn context_injects_what_recall_ranks_first_and_the_domains_constraints() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open_local(dir.path());
    for fact in [
        "The user's dog is a grey whippet called Pixel",
        "The user sleeps badly when they eat late",
        "The user is vegetarian",
        "The user hurt their knee skiing and can't run for now",
        "The user prefers an aisle seat on flights",
        "The user works as a data engineer at a bank",
        "The user's sister lives in Leeds",
        "The user's favourite colour is green",
    ] {
        m.remember(RememberRequest {
            content: fact.into(),
            ..Default::default()
        })
        .unwrap();
    }
    m.backfill_all(64, |_| {}).unwrap();
    let injected = |m: &mut mnemo_host::Mnemo, prompt: &str| -> Vec<String> {
        let block = m.context("default", prompt, None, 0).unwrap();
        block.memories.into_iter().map(|x| x.content).collect()
    };
    for (prompt, needs) in [
        (
            "what's a good treat for the dog?",
            "The user's dog is a grey whippet called Pixel",
        ),
        (
            "I can't sleep, any advice?",
            "The user sleeps badly when they eat late",
        ),
        ("suggest a dinner recipe for me", "The user is vegetarian"),
    ] {
        let got = injected(&mut m, prompt);
        assert!(got.contains(&needs.to_string()), "{prompt}: {got:?}");
    }
    for prompt in [
        "how many days are there in a leap year?",
        "who wrote Pride and Prejudice?",
    ] {
        assert_eq!(injected(&mut m, prompt), Vec::<String>::new(), "{prompt}");
    }
}
