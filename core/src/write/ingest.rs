//! Seed 003's hot path: a dialogue turn stored as an episode, with no LLM
//! call and no blocking embedding; a new session reports the open ones.

use crate::engine::Engine;
use crate::error::CoreResult;
use crate::ids::new_id;
use crate::model::*;
use crate::ports::{Ports, Storage};
use crate::thresholds::*;
use crate::validate;

impl<P: Ports> Engine<P> {
    /// Store one dialogue turn as an episode (seed 003 hot path: no LLM, no
    /// embedding). A new session id reports the open sessions before it.
    pub fn ingest(&self, turn: Turn) -> CoreResult<IngestOutcome> {
        let namespace = validate::namespace(&turn.namespace)?;
        let session_id =
            validate::required_field("session_id", &turn.session_id, MAX_SESSION_CHARS)?;
        let role = validate::required_field("role", &turn.role, MAX_ROLE_CHARS)?;
        let content = validate::content(&turn.content)?;
        let attributes = validate::attributes(turn.attributes.as_deref())?;
        let storage = self.ports().storage();
        let now = self.now();

        let (session, new_session) = match storage.get_session(&namespace, &session_id)? {
            Some(mut s) => {
                s.last_seen_at = now;
                s.turn_count = s.turn_count.saturating_add(1);
                // A turn after the session was consolidated re-opens it: the
                // turns past its watermark are consolidated too.
                s.consolidated_at = None;
                (s, false)
            }
            None => (
                Session {
                    id: session_id.clone(),
                    namespace: namespace.clone(),
                    first_seen_at: now,
                    last_seen_at: now,
                    turn_count: 1,
                    consolidated_at: None,
                    consolidated_turns: 0,
                },
                true,
            ),
        };
        // Seed 003's trigger, bounded: a new session closes the session it
        // follows (the namespace's most recently active pending one), not
        // every session still pending. Older pending ones (a consolidation
        // that failed, say) are the cycle's, so a model that answers badly
        // is not asked again about every earlier session at each new one.
        let pending_sessions = if new_session {
            storage
                .pending_sessions(&namespace, Some(&session_id))?
                .into_iter()
                .max_by(|a, b| (a.last_seen_at, &a.id).cmp(&(b.last_seen_at, &b.id)))
                .map(|s| s.id)
                .into_iter()
                .collect()
        } else {
            Vec::new()
        };
        storage.put_session(&session)?;
        let attributes = with_session_turn(attributes, session.turn_count);

        let episode = Episode {
            id: new_id("ep", self.ports().clock()),
            namespace: namespace.clone(),
            session_id,
            source_role: role,
            content,
            event_time: turn.event_time.unwrap_or(now),
            created_at: now,
            valid_until: None,
            invalid_reason: None,
            attributes,
        };
        storage.insert_episode(&episode)?;
        let entities =
            self.link_entities(&namespace, Target::Episodes, &episode.id, &episode.content)?;
        Ok(IngestOutcome {
            episode,
            new_session,
            pending_sessions,
            entities,
        })
    }
}

/// `attributes` (a JSON object, validated) with the turn's place in its
/// session under `SESSION_TURN_KEY`, unless the caller already set it:
/// recall's reply term (`read/dialogue.rs`) finds the turn before a turn
/// by it without reading the session.
fn with_session_turn(attributes: String, turn: u32) -> String {
    match serde_json::from_str::<serde_json::Value>(&attributes) {
        Ok(serde_json::Value::Object(mut o)) => {
            o.entry(SESSION_TURN_KEY).or_insert(turn.into());
            serde_json::Value::Object(o).to_string()
        }
        _ => attributes,
    }
}
