//! Helpers the engine's lifecycle tests share: an engine over the fakes,
//! writes, reads and one cycle as the scheduler would run it.

use crate::Engine;
use crate::model::*;
use crate::ports::Storage;
use crate::testing::FakePorts;

pub(super) fn engine() -> Engine<FakePorts> {
    Engine::new(FakePorts::default())
}

pub(super) fn remember(e: &Engine<FakePorts>, text: &str, tags: &[&str], kind: Kind) -> Memory {
    e.remember(RememberRequest {
        namespace: "default".into(),
        content: text.into(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        kind: Some(kind),
        ..Default::default()
    })
    .expect("remember")
    .memory
}

/// Two Buffer memories the cycle's dedup folds: a restatement stored past
/// the insert-time dedup.
pub(super) fn buffer_duplicates(e: &Engine<FakePorts>) -> (Memory, Memory) {
    let a = remember(
        e,
        "The user likes green tea in the morning",
        &[],
        Kind::Semantic,
    );
    let b = e
        .remember(RememberRequest {
            namespace: "default".into(),
            content: "the user likes green tea in the morning!!".into(),
            skip_dedup: true,
            ..Default::default()
        })
        .expect("remember")
        .memory;
    (a, b)
}

pub(super) fn get(e: &Engine<FakePorts>, id: &str) -> Memory {
    e.ports()
        .storage
        .get_memories(&[id.to_string()])
        .expect("get")
        .pop()
        .expect("stored")
}

/// One cycle that closes every pending session (no idle wait).
pub(super) fn consolidate(e: &Engine<FakePorts>, dry: bool) -> ConsolidateReport {
    e.consolidate(ConsolidateRequest {
        namespace: None,
        dry,
        if_changed: false,
        session_idle_minutes: Some(0),
        ..Default::default()
    })
    .expect("consolidate")
}

pub(super) fn set_counts(
    e: &Engine<FakePorts>,
    id: &str,
    access: u32,
    repetition: u32,
    importance: f32,
) {
    let mut m = get(e, id);
    m.access_count = access;
    m.repetition_count = repetition;
    m.importance = importance;
    e.ports().storage.update_memory(&m).expect("update");
}

pub(super) fn cosine(a: &str, b: &str) -> f32 {
    use crate::ports::Embedder;
    let v = crate::testing::BowEmbedder::default()
        .embed(&[a.to_string(), b.to_string()])
        .expect("embed");
    crate::vector::cosine(&v[0], &v[1])
}

/// A memory stored as it is (no dedup) and moved to `layer`.
pub(super) fn in_layer(e: &Engine<FakePorts>, text: &str, tags: &[&str], layer: Layer) -> Memory {
    let m = e
        .remember(RememberRequest {
            namespace: "default".into(),
            content: text.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            skip_dedup: true,
            ..Default::default()
        })
        .expect("remember")
        .memory;
    let mut w = get(e, &m.id);
    w.layer = layer;
    e.ports().storage.update_memory(&w).expect("update");
    w
}

pub(super) fn working(e: &Engine<FakePorts>, text: &str) -> Memory {
    in_layer(e, text, &[], Layer::Working)
}

pub(super) fn say(e: &Engine<FakePorts>, session: &str, role: &str, text: &str) {
    e.ingest(Turn {
        namespace: "default".into(),
        session_id: session.into(),
        role: role.into(),
        content: text.into(),
        event_time: None,
        attributes: None,
    })
    .expect("ingest");
}

pub(super) fn cycle_as_scheduled(e: &Engine<FakePorts>) -> ConsolidateReport {
    e.consolidate(ConsolidateRequest::default())
        .expect("consolidate")
}

/// How many requests the scripted LLM got for `component`.
pub(super) fn llm_calls(e: &Engine<FakePorts>, component: LlmComponent) -> usize {
    e.ports()
        .llm
        .requests
        .borrow()
        .iter()
        .filter(|r| r.component == component)
        .count()
}
