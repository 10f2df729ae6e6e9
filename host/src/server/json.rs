//! JSON answers without f32 noise. The records keep scores, importances
//! and confidences as `f32`; `serde_json::Value` (what `json!` builds)
//! holds `f64`, so 0.1f32 would print as 0.10000000149011612. Every number
//! that is exactly an `f32` is printed as that `f32` (0.1) instead, in one
//! place: `tidied`, behind this `Json` (which the routes use in place of
//! axum's) and MCP's results.

use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Number, Value};

/// axum's `Json`, with numbers printed as stored.
pub struct Json<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        match tidied(&self.0) {
            Ok(v) => axum::Json(v).into_response(),
            Err(e) => crate::server::error::ApiError::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                format!("cannot encode the answer: {e}"),
            )
            .into_response(),
        }
    }
}

/// `v` as JSON with numbers printed as stored (the routes' answers, MCP's
/// structured results and resources).
pub fn tidied(v: impl Serialize) -> serde_json::Result<Value> {
    let mut v = serde_json::to_value(v)?;
    tidy(&mut v);
    Ok(v)
}

/// Replaces every float that is exactly an `f32` by the shortest decimal
/// that reads back as that `f32`.
fn tidy(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            if let Some(x) = n.as_f64()
                && (x as f32) as f64 == x
                && let Ok(short) = (x as f32).to_string().parse::<f64>()
                && let Some(tidied) = Number::from_f64(short)
            {
                *n = tidied;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        Value::Object(map) => map.values_mut().for_each(tidy),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_values_print_as_stored() {
        let mut v = serde_json::json!({ "a": 0.1f32, "b": [0.3f32, 2.5], "c": 0.1f64, "d": 7 });
        tidy(&mut v);
        assert_eq!(v.to_string(), r#"{"a":0.1,"b":[0.3,2.5],"c":0.1,"d":7}"#);
    }
}
