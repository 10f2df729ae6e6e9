//! Fading: seed 003's nightly Ebbinghaus decay of *confidence*,
//! `confidence × exp(−decay_rate × days)` over the days since the memory was
//! last accessed or last faded, so running it twice a night fades no more
//! than once. Buffer memories below the prune threshold go to the trash
//! (reason `faded`, restorable); a Working memory keeps its faded
//! confidence and stays searchable (seed 004 §10, invariant 4: Working memories are
//! never deleted; only Buffer entries can be evicted). `decay_rate = 0` is
//! protected. Only the layers of the request fade — by default Buffer and
//! Working: Core is what the agent is shown at every session start and
//! never fades (the design's rule, `docs/design/forgetting.md`). (The per-epoch decay of *importance* is
//! another thing: `importance.rs`.)

use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Clock, Ports, Storage};
use crate::thresholds::CONFIDENCE_PRUNE_THRESHOLD;

const MS_PER_DAY: f64 = 86_400_000.0;
/// The layers that fade when a request names none (docs/design/forgetting.md).
pub const DEFAULT_FADE_LAYERS: [Layer; 2] = [Layer::Buffer, Layer::Working];
/// The layers whose faded memories go to the trash: the Buffer only (seed
/// 004 §10, invariant 4: "only Buffer entries can be evicted"; seed 003's pruning
/// applies to what the lifecycle has not vetted yet).
pub const PRUNED_LAYERS: [Layer; 1] = [Layer::Buffer];

/// The faded confidence after `days`.
pub fn faded(confidence: f32, decay_rate: f32, days: f64) -> f32 {
    (f64::from(confidence) * (-f64::from(decay_rate.max(0.0)) * days.max(0.0)).exp()) as f32
}

/// The latest of when the memory last faded (stores written before the
/// rename carry `decayed_at`) and when it was last shown to the agent
/// (`renewed_at`, by resume and context injection).
fn faded_or_renewed_at(attributes: &str) -> Option<Millis> {
    let v = serde_json::from_str::<serde_json::Value>(attributes).ok()?;
    let faded = v["faded_at"].as_i64().or_else(|| v["decayed_at"].as_i64());
    faded.max(v["renewed_at"].as_i64())
}

impl<P: Ports> Engine<P> {
    /// Seed 003's nightly fading of the unprotected active memories of the
    /// requested layers.
    pub fn fade(&self, req: FadeRequest) -> CoreResult<FadeReport> {
        let layers = match req.layers.is_empty() {
            true => DEFAULT_FADE_LAYERS.to_vec(),
            false => req.layers,
        };
        let now = self.ports().clock().now();
        let mut report = FadeReport::default();
        let q = ListQuery {
            state: ListState::Active,
            layers,
            ..Default::default()
        };
        self.walk_memories(q, |page| {
            for m in page {
                self.fade_one(m, now, &mut report)?;
            }
            Ok(true)
        })?;
        Ok(report)
    }

    /// Fades one memory (and prunes it from the Buffer when it falls under
    /// the threshold).
    fn fade_one(&self, mut m: Memory, now: Millis, report: &mut FadeReport) -> CoreResult<()> {
        let storage = self.ports().storage();
        report.examined += 1;
        if m.is_protected() {
            return Ok(());
        }
        let since = m
            .last_accessed
            .unwrap_or(m.created_at)
            .max(faded_or_renewed_at(&m.attributes).unwrap_or(0));
        let days = (now - since) as f64 / MS_PER_DAY;
        if days <= 0.0 {
            return Ok(());
        }
        m.confidence = faded(m.confidence, m.decay_rate, days);
        let mut attrs: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&m.attributes).unwrap_or_default();
        attrs.insert("faded_at".into(), serde_json::json!(now));
        m.attributes = serde_json::Value::Object(attrs).to_string();
        report.faded += 1;
        if m.confidence < CONFIDENCE_PRUNE_THRESHOLD && PRUNED_LAYERS.contains(&m.layer) {
            m.valid_until = Some(now);
            m.invalid_reason = Some("faded".into());
            report.pruned += 1;
            storage.update_memory(&m)?;
            self.log_decision(
                &m.namespace,
                Action::Fade,
                &m.id,
                format!(
                    "confidence {:.3} under {CONFIDENCE_PRUNE_THRESHOLD}",
                    m.confidence
                ),
            )?;
        } else {
            storage.update_memory(&m)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Storage;
    use crate::testing::FakePorts;

    /// A memory of `text` in `layer`.
    fn memory_in(e: &Engine<FakePorts>, text: &str, layer: Layer) -> Memory {
        let mut m = e
            .remember(RememberRequest {
                content: text.into(),
                ..Default::default()
            })
            .unwrap()
            .memory;
        if m.layer != layer {
            m.layer = layer;
            e.ports().storage.update_memory(&m).unwrap();
        }
        m
    }

    #[test]
    fn the_curve() {
        assert_eq!(faded(1.0, 0.0, 100.0), 1.0);
        assert!((faded(1.0, 0.1, 10.0) - (-1.0f32).exp()).abs() < 1e-6);
        // Two steps compose into one.
        let twice = faded(faded(0.9, 0.1, 3.0), 0.1, 4.0);
        assert!((twice - faded(0.9, 0.1, 7.0)).abs() < 1e-6);
    }

    #[test]
    fn fading_prunes_softly_spares_protected_and_is_idempotent() {
        let e = Engine::new(FakePorts::default());
        let keep = memory_in(&e, "recently useful", Layer::Buffer);
        let old = memory_in(&e, "long forgotten", Layer::Buffer);
        let safe = memory_in(&e, "confirmed forever", Layer::Buffer);
        e.confirm("", &safe.id).unwrap();
        e.ports().clock.advance_hours(24 * 40); // 40 days: 0.1/day → exp(-4) ≈ 0.018
        e.ports()
            .storage
            .touch_memories(
                std::slice::from_ref(&keep.id),
                e.ports().clock.now.get() - 86_400_000,
            )
            .unwrap();
        let r = e.fade(FadeRequest::default()).unwrap();
        assert_eq!((r.examined, r.faded, r.pruned), (3, 2, 1));
        let mems = e.ports().storage.memories.borrow().clone();
        assert_eq!(mems[&old.id].invalid_reason.as_deref(), Some("faded"));
        assert!(
            (mems[&keep.id].confidence - (-0.1f32).exp()).abs() < 1e-4,
            "one day since access"
        );
        assert_eq!(mems[&safe.id].confidence, 1.0);
        // A second run the same instant changes nothing.
        let again = e.fade(FadeRequest::default()).unwrap();
        assert_eq!((again.faded, again.pruned), (0, 0));
        assert!(
            e.restore("", &old.id).is_ok(),
            "nothing is lost: faded memories come back"
        );
    }

    #[test]
    fn core_never_fades_and_the_layers_are_a_setting() {
        let e = Engine::new(FakePorts::default());
        let core = memory_in(&e, "the user's name is Ada", Layer::Core);
        let working = memory_in(&e, "the user is learning Go", Layer::Working);
        e.ports().clock.advance_hours(24 * 40);
        // Only Buffer, as a user may configure it: Working is left alone.
        let r = e
            .fade(FadeRequest {
                layers: vec![Layer::Buffer],
            })
            .unwrap();
        assert_eq!(r.examined, 0);
        let r = e.fade(FadeRequest::default()).unwrap();
        assert_eq!(
            (r.examined, r.faded, r.pruned),
            (1, 1, 0),
            "Working fades by default, and stays"
        );
        assert!(e.get("", &core.id).unwrap().is_active(), "Core never fades");
        assert!((e.get("", &core.id).unwrap().confidence - 1.0).abs() < 1e-6);
        let w = e.get("", &working.id).unwrap();
        assert!(w.is_active(), "Working memories are never deleted");
        assert!(
            w.confidence < CONFIDENCE_PRUNE_THRESHOLD,
            "{}",
            w.confidence
        );
    }

    #[test]
    fn what_the_agent_is_shown_does_not_fade() {
        let e = Engine::new(FakePorts::default());
        let shown = memory_in(&e, "the harbour ferry leaves at seven", Layer::Buffer);
        let unseen = memory_in(&e, "the bakery closes on tuesdays", Layer::Buffer);
        e.ports().clock.advance_hours(24 * 25);
        // Injected as context for a new session: its life renews.
        let block = e
            .context("", "when does the harbour ferry leave?", Some("s9"), 5)
            .unwrap();
        assert!(block.memories.iter().any(|m| m.id == shown.id), "{block:?}");
        let access = e.get("", &shown.id).unwrap().access_count;
        e.ports().clock.advance_hours(24 * 25);
        let r = e.fade(FadeRequest::default()).unwrap();
        assert_eq!(r.pruned, 1, "{r:?}");
        let shown_now = e.get("", &shown.id).unwrap();
        assert!(shown_now.is_active(), "shown 25 days ago: still here");
        assert_eq!(shown_now.access_count, access, "renewal is not an access");
        assert!(
            !e.ports().storage.memories.borrow()[&unseen.id].is_active(),
            "50 days unseen: faded to the trash"
        );
    }
}
