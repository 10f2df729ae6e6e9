//! The OpenAPI 3.1 document (`GET /openapi.json`), built from the route
//! table and the types of each handler's signature: its `Query<T>` gives the
//! query parameters, its `Body<T>` the request body, its `Answer<T>` the
//! answer, `{x}` in the path the path parameters; every schema is derived
//! from the Rust type (schemars) and lands in `components.schemas`. A route
//! cannot exist undocumented (the table is the router) nor differ from its
//! schema (the schema is the type the handler reads or writes).

use std::future::Future;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use rmcp::schemars::generate::SchemaSettings;
use rmcp::schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use super::error::ApiError;
use super::reply::{Body, Ndjson, OptionalBody, Reply};

/// What one operation takes and gives, as its handler's types say.
#[derive(Default)]
pub struct OpDoc {
    /// The query string's object schema (its properties become parameters).
    query: Option<Value>,
    /// The request body's `content` and whether it is required.
    body: Option<(Value, bool)>,
    /// The answer's `content`.
    answer: Value,
    /// The handler reads the headers: `X-Namespace` applies.
    headers: bool,
}

/// An argument of a handler, as the document sees it.
pub trait ArgDoc {
    fn document(_op: &mut OpDoc, _g: &mut SchemaGenerator) {}
}

impl<S> ArgDoc for State<S> {}
impl ArgDoc for HeaderMap {
    fn document(op: &mut OpDoc, _g: &mut SchemaGenerator) {
        op.headers = true;
    }
}
/// Path parameters come from the path's `{name}`s.
impl<T> ArgDoc for Path<T> {}

impl<T: JsonSchema> ArgDoc for Query<T> {
    fn document(op: &mut OpDoc, g: &mut SchemaGenerator) {
        op.query = Some(T::json_schema(g).to_value());
    }
}

fn json_content(schema: Value) -> Value {
    json!({ "application/json": { "schema": schema } })
}

fn ndjson_content() -> Value {
    json!({ "application/x-ndjson": { "schema": { "type": "string", "description": "JSON lines" } } })
}

impl<T: JsonSchema> ArgDoc for Body<T> {
    fn document(op: &mut OpDoc, g: &mut SchemaGenerator) {
        op.body = Some((json_content(g.subschema_for::<T>().to_value()), true));
    }
}

impl<T: JsonSchema> ArgDoc for OptionalBody<T> {
    fn document(op: &mut OpDoc, g: &mut SchemaGenerator) {
        op.body = Some((json_content(g.subschema_for::<T>().to_value()), false));
    }
}

/// A raw body: `POST /import`'s JSON lines.
impl ArgDoc for Bytes {
    fn document(op: &mut OpDoc, _g: &mut SchemaGenerator) {
        op.body = Some((ndjson_content(), true));
    }
}

/// A handler's answer, as the document sees it.
pub trait AnswerDoc {
    fn content(g: &mut SchemaGenerator) -> Value;
}

impl<T: JsonSchema> AnswerDoc for Reply<T> {
    fn content(g: &mut SchemaGenerator) -> Value {
        json_content(g.subschema_for::<T>().to_value())
    }
}

impl AnswerDoc for Ndjson {
    fn content(_g: &mut SchemaGenerator) -> Value {
        ndjson_content()
    }
}

/// A handler whose arguments and answer can be documented: any async fn
/// of documented arguments answering `Result<impl AnswerDoc, ApiError>`.
pub trait Documented<Args> {
    fn document(g: &mut SchemaGenerator) -> OpDoc;
}

macro_rules! documented {
    ($($arg:ident),*) => {
        impl<F, Fut, R, $($arg: ArgDoc,)*> Documented<($($arg,)*)> for F
        where
            F: FnOnce($($arg),*) -> Fut,
            Fut: Future<Output = Result<R, ApiError>>,
            R: AnswerDoc,
        {
            #[allow(unused_mut)]
            fn document(g: &mut SchemaGenerator) -> OpDoc {
                let mut op = OpDoc::default();
                $(<$arg as ArgDoc>::document(&mut op, g);)*
                op.answer = R::content(g);
                op
            }
        }
    };
}

documented!();
documented!(A1);
documented!(A1, A2);
documented!(A1, A2, A3);
documented!(A1, A2, A3, A4);
documented!(A1, A2, A3, A4, A5);

/// `handler`'s documentation (the value only fixes the type).
pub fn document_of<Args, H: Documented<Args>>(_handler: &H, g: &mut SchemaGenerator) -> OpDoc {
    H::document(g)
}

/// One row of the route table, for the document.
pub struct Operation {
    pub path: &'static str,
    pub method: &'static str,
    pub summary: &'static str,
    pub document: fn(&mut SchemaGenerator) -> OpDoc,
}

/// Routes anyone may read, even with an API key set.
pub const PUBLIC: &[&str] = &["/health", "/openapi.json"];

/// The OpenAPI document of `operations` (the route table's, `table.rs`).
pub fn build(operations: &[Operation]) -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    settings.meta_schema = None;
    let mut g = settings.into_generator();
    let mut paths = Map::new();
    for op in operations {
        let doc = (op.document)(&mut g);
        let mut parameters: Vec<Value> = path_parameters(op.path)
            .map(|name| {
                json!({
                    "name": name,
                    "in": "path",
                    "required": true,
                    "description": path_parameter_doc(op.path, name),
                    "schema": { "type": "string" },
                })
            })
            .collect();
        parameters.extend(doc.query.as_ref().map(query_parameters).unwrap_or_default());
        if doc.headers {
            parameters.push(json!({ "$ref": "#/components/parameters/namespace" }));
        }
        let mut operation = json!({
            "operationId": operation_id(op.method, op.path),
            "summary": op.summary,
            "parameters": parameters,
            "responses": {
                "2XX": { "description": "Success", "content": doc.answer },
                "default": { "$ref": "#/components/responses/error" },
            },
        });
        if let Some((content, required)) = doc.body {
            operation["requestBody"] = json!({ "required": required, "content": content });
        }
        if PUBLIC.contains(&op.path) {
            operation["security"] = json!([]);
        }
        let item = paths.entry(op.path).or_insert_with(|| json!({}));
        item[op.method] = operation;
    }
    let mut schemas = g.take_definitions(true);
    for schema in schemas.values_mut() {
        bound_unsigned(schema);
    }
    for item in paths.values_mut() {
        bound_unsigned(item);
    }
    schemas.insert("Error".into(), error_schema());
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "mnemo",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Long-term memory for AI agents. Generated from the route table and the Rust types of each route (host/src/server/doc.rs). With MNEMO_API_KEY set, or keys made (`POST /keys`, `mnemo keys`), every route but /health and /openapi.json needs `Authorization: Bearer <key>`: MNEMO_API_KEY is an admin key of every namespace; a made key has a role (read, write, admin) and the namespaces it may use, and anything else is refused with 403.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "parameters": {
                "namespace": {
                    "name": "X-Namespace",
                    "in": "header",
                    "required": false,
                    "description": "The namespace when the body or query names none (else `default`; the operator's reads and runs cover every namespace).",
                    "schema": { "type": "string", "pattern": mnemo_core::thresholds::NAMESPACE_PATTERN },
                },
            },
            "responses": {
                "error": {
                    "description": "A typed error: 400 malformed_json, invalid_input or invalid_request; 401 unauthorized; 404 not_found; 405 method_not_allowed; 409 conflict; 413 payload_too_large; 415 unsupported_media_type; 422 invalid_request; 503 unavailable, read_only or storage.",
                    "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } },
                },
            },
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
        },
        // Auth is on only when the server has a key: either form is valid.
        "security": [{ "bearer": [] }, {}],
    })
}

/// `"format": "uint32"` says the value fits in 32 bits; JSON Schema's own
/// keywords say it too (`maximum`), so a client or fuzzer that reads only
/// those knows the bound the server enforces.
fn bound_unsigned(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let max = match map.get("format").and_then(Value::as_str) {
                Some("uint8") => Some(u64::from(u8::MAX)),
                Some("uint16") => Some(u64::from(u16::MAX)),
                Some("uint32") => Some(u64::from(u32::MAX)),
                _ => None,
            };
            if let Some(max) = max {
                map.entry("maximum").or_insert(Value::from(max));
            }
            map.values_mut().for_each(bound_unsigned);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_unsigned),
        _ => {}
    }
}

/// `get /memories/{id}/history` → `get_memories_id_history`.
fn operation_id(method: &str, path: &str) -> String {
    let words: Vec<&str> = path
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    format!("{method}_{}", words.join("_"))
}

/// What a path's `{id}` or `{name}` names.
fn path_parameter_doc(path: &str, name: &str) -> &'static str {
    match (path.split('/').nth(1), name) {
        (Some("memories"), _) => "The memory's id (`mem_…`).",
        (Some("sessions"), _) => "The session's id, as the agent gave it.",
        (Some("entities"), _) => "The entity's name or one of its aliases.",
        (Some("triggers"), _) => "The trigger's name: the memories tagged `trigger:<name>`.",
        _ => "An identifier.",
    }
}

fn path_parameters(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
}

/// A query object's properties as OpenAPI parameters: optional ones are
/// simply left out (a query string has no null).
fn query_parameters(schema: &Value) -> Vec<Value> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let mut property = property.clone();
            let description = property
                .as_object_mut()
                .and_then(|p| p.remove("description"));
            not_null(&mut property);
            let mut parameter = json!({
                "name": name,
                "in": "query",
                "required": required.contains(&name.as_str()),
                "schema": property,
            });
            if let Some(d) = description {
                parameter["description"] = d;
            }
            parameter
        })
        .collect()
}

/// `{"type": ["integer", "null"], "default": null}` → `{"type": "integer"}`.
fn not_null(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if object.get("default") == Some(&Value::Null) {
        object.remove("default");
    }
    if let Some(Value::Array(types)) = object.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if kept.len() == 1 {
            object.insert("type".into(), kept[0].clone());
        } else {
            object.insert("type".into(), Value::Array(kept));
        }
    }
    if let Some(Value::Array(any)) = object.get_mut("anyOf") {
        any.retain(|s| s.get("type") != Some(&json!("null")));
        if any.len() == 1 {
            let only = any.remove(0);
            object.remove("anyOf");
            if let Some(o) = only.as_object() {
                object.extend(o.clone());
            }
        }
    }
}

fn error_schema() -> Value {
    json!({
        "type": "object",
        "description": "Every failure: a stable code and a message.",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "description": "What went wrong.",
                "required": ["code", "message"],
                "properties": {
                    "code": { "type": "string", "description": "Stable: malformed_json, invalid_input, invalid_request, unauthorized, not_found, method_not_allowed, conflict, payload_too_large, unsupported_media_type, unavailable, read_only, storage, internal." },
                    "message": { "type": "string", "description": "What went wrong, for a person." },
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// Every property of every schema, and every parameter, says what it is.
    #[test]
    fn every_field_is_documented() {
        let doc = crate::server::table::document();
        let mut missing = Vec::new();
        for (name, schema) in doc["components"]["schemas"]
            .as_object()
            .into_iter()
            .flatten()
        {
            undocumented(name, schema, &mut missing);
        }
        for (path, ops) in doc["paths"].as_object().into_iter().flatten() {
            for (method, op) in ops.as_object().into_iter().flatten() {
                for p in op["parameters"].as_array().into_iter().flatten() {
                    if p.get("$ref").is_none() && p.get("description").is_none() {
                        missing.push(format!("{method} {path} ?{}", p["name"]));
                    }
                }
            }
        }
        assert!(missing.is_empty(), "undocumented: {missing:#?}");
    }

    fn undocumented(at: &str, schema: &Value, out: &mut Vec<String>) {
        for (field, property) in schema["properties"].as_object().into_iter().flatten() {
            // A tag's constant (`"type": "memory"`) says what it is.
            if property.get("description").is_none() && property.get("const").is_none() {
                out.push(format!("{at}.{field}"));
            }
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            for (i, part) in schema[key].as_array().into_iter().flatten().enumerate() {
                undocumented(&format!("{at}/{key}/{i}"), part, out);
            }
        }
    }
}
