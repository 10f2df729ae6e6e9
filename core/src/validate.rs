//! Input validation (seed 004 §2.1 limits). Every check runs before anything
//! is written, and says what to change.

use crate::error::{CoreError, CoreResult};
use crate::thresholds::*;

pub const DEFAULT_NAMESPACE: &str = "default";

/// An empty namespace means `default`; otherwise `[A-Za-z0-9_.:-]`, ≤ 64 chars.
pub fn namespace(ns: &str) -> CoreResult<String> {
    let ns = ns.trim();
    if ns.is_empty() {
        return Ok(DEFAULT_NAMESPACE.to_string());
    }
    if ns.chars().count() > MAX_NAMESPACE_CHARS {
        return Err(CoreError::invalid(format!(
            "namespace is longer than {MAX_NAMESPACE_CHARS} characters"
        )));
    }
    if !ns
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
    {
        return Err(CoreError::invalid(format!(
            "namespace `{ns}` may only contain letters, digits, `_`, `-`, `.` and `:`"
        )));
    }
    Ok(ns.to_string())
}

pub fn content(text: &str) -> CoreResult<String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(CoreError::invalid("content is empty"));
    }
    let n = trimmed.chars().count();
    if n > MAX_CONTENT_CHARS {
        return Err(CoreError::invalid(format!(
            "content is {n} characters; the limit is {MAX_CONTENT_CHARS} — split it into several memories"
        )));
    }
    if trimmed.contains('\0') {
        return Err(CoreError::invalid("content contains a NUL character"));
    }
    Ok(trimmed.to_string())
}

/// Trimmed, de-duplicated, ≤ 20 tags of ≤ 32 chars.
pub fn tags(tags: &[String]) -> CoreResult<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for t in tags {
        let t = t.trim();
        if t.is_empty() {
            return Err(CoreError::invalid("a tag is empty"));
        }
        if t.chars().count() > MAX_TAG_CHARS {
            return Err(CoreError::invalid(format!(
                "tag `{t}` is longer than {MAX_TAG_CHARS} characters"
            )));
        }
        if !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    }
    let users = out.iter().filter(|t| !crate::model::is_marker(t)).count();
    if users > MAX_TAGS {
        return Err(CoreError::invalid(format!(
            "{users} tags given; at most {MAX_TAGS} are allowed"
        )));
    }
    Ok(out)
}

pub fn short_field(name: &str, value: Option<&str>, max: usize) -> CoreResult<Option<String>> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) if v.chars().count() > max => Err(CoreError::invalid(format!(
            "{name} is longer than {max} characters"
        ))),
        Some(v) => Ok(Some(v.to_string())),
    }
}

pub fn required_field(name: &str, value: &str, max: usize) -> CoreResult<String> {
    short_field(name, Some(value), max)?
        .ok_or_else(|| CoreError::invalid(format!("{name} is empty")))
}

/// Attributes must be a JSON object; absent means `{}`.
pub fn attributes(attrs: Option<&str>) -> CoreResult<String> {
    match attrs.map(str::trim) {
        None | Some("") => Ok("{}".to_string()),
        Some(a) => match serde_json::from_str::<serde_json::Value>(a) {
            Ok(v @ serde_json::Value::Object(_)) => Ok(v.to_string()),
            Ok(_) => Err(CoreError::invalid("attributes must be a JSON object")),
            Err(e) => Err(CoreError::invalid(format!(
                "attributes are not valid JSON: {e}"
            ))),
        },
    }
}

pub fn unit_interval(name: &str, v: Option<f32>) -> CoreResult<Option<f32>> {
    match v {
        Some(x) if !(0.0..=1.0).contains(&x) || x.is_nan() => Err(CoreError::invalid(format!(
            "{name} must be between 0.0 and 1.0, got {x}"
        ))),
        other => Ok(other),
    }
}

/// A whole memory from outside (an import line, or a version's snapshot):
/// what a write checks, plus the numbers it would otherwise compute —
/// importance and confidence in 0–1, a finite decay rate ≥ 0 (a NaN would
/// be stored as NULL, and the row could no longer be read).
pub fn stored_memory(m: &mut crate::model::Memory) -> CoreResult<()> {
    m.namespace = namespace(&m.namespace)?;
    content(&m.content)?;
    m.tags = tags(&m.tags)?;
    m.attributes = attributes(Some(&m.attributes))?;
    unit_interval("importance", Some(m.importance))?;
    unit_interval("confidence", Some(m.confidence))?;
    if !(m.decay_rate.is_finite() && m.decay_rate >= 0.0) {
        return Err(CoreError::invalid(format!(
            "decay_rate must be a finite number ≥ 0, got {}",
            m.decay_rate
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_defaults_and_rejects_odd_characters() {
        // The schemas' statement of this rule names the same limit.
        assert!(NAMESPACE_PATTERN.ends_with(&format!("{{0,{MAX_NAMESPACE_CHARS}}}$")));
        assert_eq!(namespace("").unwrap(), "default");
        assert_eq!(namespace("proj-1").unwrap(), "proj-1");
        assert!(matches!(namespace("a b"), Err(CoreError::InvalidInput(_))));
        assert!(matches!(
            namespace(&"x".repeat(65)),
            Err(CoreError::InvalidInput(_))
        ));
    }

    #[test]
    fn content_limits() {
        assert!(matches!(content("   "), Err(CoreError::InvalidInput(_))));
        assert!(content(&"a".repeat(MAX_CONTENT_CHARS)).is_ok());
        assert!(matches!(
            content(&"a".repeat(MAX_CONTENT_CHARS + 1)),
            Err(CoreError::InvalidInput(_))
        ));
    }

    #[test]
    fn tag_limits() {
        let many: Vec<String> = (0..21).map(|i| format!("t{i}")).collect();
        assert!(matches!(tags(&many), Err(CoreError::InvalidInput(_))));
        assert!(tags(&many[..20]).is_ok());
        assert!(matches!(
            tags(&["x".repeat(33)]),
            Err(CoreError::InvalidInput(_))
        ));
        assert_eq!(tags(&["a".into(), " a ".into()]).unwrap(), ["a"]);
    }

    #[test]
    fn attributes_must_be_objects() {
        assert_eq!(attributes(None).unwrap(), "{}");
        assert!(matches!(
            attributes(Some("[1]")),
            Err(CoreError::InvalidInput(_))
        ));
        assert!(matches!(
            attributes(Some("{bad")),
            Err(CoreError::InvalidInput(_))
        ));
        assert!(attributes(Some(r#"{"a":1}"#)).is_ok());
    }
}
