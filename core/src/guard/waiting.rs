//! Items whose LLM step failed (issue 42): a session whose extraction, a
//! pair whose merge, a candidate whose gate or triage answer could not be
//! used. Each failure is recorded with its error; the item is left alone
//! for `retry_base_ms`, doubled at each further failure, so only a later
//! cycle tries it again; after `retry_limit` failures it is parked until
//! retried by hand (`retry_waiting`: `mnemo consolidate --retry`, `POST
//! /llm/retry`). A success forgets the record. Nothing about the item
//! itself changes: it stays pending, in its layer, with its text.
//!
//! Stored per namespace in the metadata table (`llm_waiting:<namespace>`,
//! a JSON map by `<step>:<id>`), with the namespaces that have any listed
//! under `llm_waiting`.

use std::collections::{BTreeMap, BTreeSet};

use super::circuit::clip;
use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports::{Clock, Ports, Storage};

const INDEX: &str = "llm_waiting";

fn ns_key(namespace: &str) -> String {
    format!("{INDEX}:{namespace}")
}

fn item_key(step: LlmComponent, id: &str) -> String {
    format!("{step}:{id}")
}

fn json<T: serde::Serialize>(v: &T) -> CoreResult<String> {
    serde_json::to_string(v).map_err(|e| CoreError::Storage(e.to_string()))
}

impl<P: Ports> Engine<P> {
    fn waiting_in(&self, namespace: &str) -> CoreResult<BTreeMap<String, WaitingItem>> {
        if let Some(w) = self.guard.borrow().waiting.get(namespace) {
            return Ok(w.clone());
        }
        let stored = self.ports().storage().get_meta(&ns_key(namespace))?;
        let w: BTreeMap<String, WaitingItem> = stored
            .and_then(|v| serde_json::from_str(&v).ok())
            .unwrap_or_default();
        self.guard
            .borrow_mut()
            .waiting
            .insert(namespace.to_string(), w.clone());
        Ok(w)
    }

    fn namespaces_waiting(&self) -> CoreResult<BTreeSet<String>> {
        Ok(self
            .ports()
            .storage()
            .get_meta(INDEX)?
            .and_then(|v| serde_json::from_str(&v).ok())
            .unwrap_or_default())
    }

    /// `namespace`, or (`None`) every namespace with a waiting item.
    fn waiting_namespaces(&self, namespace: Option<&str>) -> CoreResult<Vec<String>> {
        match namespace {
            Some(ns) => Ok(vec![ns.to_string()]),
            None => Ok(self.namespaces_waiting()?.into_iter().collect()),
        }
    }

    fn save_waiting(&self, namespace: &str, w: BTreeMap<String, WaitingItem>) -> CoreResult<()> {
        let storage = self.ports().storage();
        let mut index = self.namespaces_waiting()?;
        let listed = if w.is_empty() {
            index.remove(namespace)
        } else {
            index.insert(namespace.to_string())
        };
        if listed {
            storage.set_meta(INDEX, &json(&index)?)?;
        }
        storage.set_meta(&ns_key(namespace), &json(&w)?)?;
        self.guard
            .borrow_mut()
            .waiting
            .insert(namespace.to_string(), w);
        Ok(())
    }

    /// The record of an item that may not be tried now (its backoff runs,
    /// or it is parked); `None` when it is due.
    pub(crate) fn waits(
        &self,
        namespace: &str,
        step: LlmComponent,
        id: &str,
    ) -> CoreResult<Option<WaitingItem>> {
        let now = self.ports().clock().now();
        Ok(self
            .waiting_in(namespace)?
            .remove(&item_key(step, id))
            .filter(|w| w.retry_at.is_none_or(|at| now < at)))
    }

    /// Records a failed step on an item. Only an `llm` error counts: a
    /// budget's or a circuit's refusal leaves the record as it was.
    pub(crate) fn item_failed(
        &self,
        namespace: &str,
        step: LlmComponent,
        id: &str,
        error: &CoreError,
    ) -> CoreResult<()> {
        let CoreError::Llm(why) = error else {
            return Ok(());
        };
        let (base, limit) = {
            let p = &self.guard.borrow().policy;
            (p.retry_base_ms, p.retry_limit.max(1))
        };
        let now = self.ports().clock().now();
        let mut w = self.waiting_in(namespace)?;
        let key = item_key(step, id);
        let failures = w.get(&key).map_or(0, |i| i.failures).saturating_add(1);
        let wait = base.saturating_mul(1 << (failures - 1).min(30));
        w.insert(
            key,
            WaitingItem {
                namespace: namespace.to_string(),
                step,
                id: id.to_string(),
                failures,
                last_error: clip(why),
                failed_at: now,
                retry_at: (failures < limit).then(|| now.saturating_add(wait)),
            },
        );
        self.save_waiting(namespace, w)
    }

    /// An item's step went through: its record, if any, is forgotten.
    pub(crate) fn item_done(
        &self,
        namespace: &str,
        step: LlmComponent,
        id: &str,
    ) -> CoreResult<()> {
        let mut w = self.waiting_in(namespace)?;
        if w.remove(&item_key(step, id)).is_some() {
            self.save_waiting(namespace, w)?;
        }
        Ok(())
    }

    /// Every waiting item of `namespace` (or of all), oldest failure first.
    pub(super) fn waiting_items(&self, namespace: Option<&str>) -> CoreResult<Vec<WaitingItem>> {
        let mut out = Vec::new();
        for ns in self.waiting_namespaces(namespace)? {
            out.extend(self.waiting_in(&ns)?.into_values());
        }
        out.sort_by_key(|w| w.failed_at);
        Ok(out)
    }

    /// Makes waiting and parked items due now — every one of `namespace`
    /// (or of all), or only those with `id` — keeping their failure count
    /// and last error. Returns how many.
    pub fn retry_waiting(&self, namespace: Option<&str>, id: Option<&str>) -> CoreResult<u32> {
        let namespace = namespace.map(crate::validate::namespace).transpose()?;
        let now = self.ports().clock().now();
        // Due now, with one more try before it parks again.
        let failures_kept = self.guard.borrow().policy.retry_limit.saturating_sub(1);
        let mut made = 0;
        for ns in self.waiting_namespaces(namespace.as_deref())? {
            let mut w = self.waiting_in(&ns)?;
            let mut changed = false;
            for item in w.values_mut() {
                if id.is_some_and(|id| id != item.id) {
                    continue;
                }
                item.retry_at = Some(now);
                item.failures = item.failures.min(failures_kept);
                made += 1;
                changed = true;
            }
            if changed {
                self.save_waiting(&ns, w)?;
            }
        }
        Ok(made)
    }
}
