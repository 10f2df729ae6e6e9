//! Attributes are JSON objects kept as text (in the store and across the
//! WIT boundary) but shown as JSON: serialised as the object they hold,
//! read from an object or, as round 1 wrote them (exports, clients), from a
//! string holding one.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The text as the JSON it holds (text that is not JSON stays a string).
pub fn serialize<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => v.serialize(s),
        Err(_) => s.serialize_str(text),
    }
}

/// An object (or any JSON) as its text; a string as it is.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        other => other.to_string(),
    })
}

/// The same for an optional attribute field (requests).
pub mod option {
    use super::*;

    pub fn serialize<S: Serializer>(text: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
        match text {
            Some(t) => super::serialize(t, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Ok(match Option::<Value>::deserialize(d)? {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => Some(other.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::model::*;

    #[test]
    fn attributes_are_objects_in_json_and_strings_are_still_read() {
        let mut m = Memory::new("mem_1".into(), "default".into(), "x".into(), 0, 0);
        m.attributes = r#"{"k":[1,2]}"#.into();
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v["attributes"], serde_json::json!({"k": [1, 2]}));
        let back: Memory = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(back, m);
        let mut old = v;
        old["attributes"] = serde_json::json!(r#"{"k":[1,2]}"#);
        let read: Memory = serde_json::from_value(old).unwrap();
        assert_eq!(read.attributes, m.attributes, "round 1's string form");
        let req: RememberRequest =
            serde_json::from_str(r#"{"content": "x", "attributes": {"a": 1}}"#).unwrap();
        assert_eq!(req.attributes.as_deref(), Some(r#"{"a":1}"#));
        let none: RememberRequest = serde_json::from_str(r#"{"content": "x"}"#).unwrap();
        assert_eq!(none.attributes, None);
    }
}
