//! The reference pages of `docs/reference/`, generated from the code that
//! defines each surface: the typed settings ([`Settings::REFERENCE`]), the
//! `mnemo` command line (clap), the HTTP API (the OpenAPI document built
//! from the route table) and the MCP tools (the tool registry). A test
//! (`tests/it/reference.rs`) fails when a committed page differs from what
//! this module writes, so the pages cannot drift from the code.

use std::fmt::Write as _;

use serde_json::Value;

use crate::config::Settings;

/// Each page: its file name under `docs/reference/` and its text.
pub fn pages() -> Vec<(&'static str, String)> {
    vec![
        ("configuration.md", configuration()),
        ("cli.md", cli()),
        ("http-api.md", http_api(crate::server::table::document())),
        ("mcp-tools.md", mcp_tools()),
    ]
}

const GENERATED: &str = "<!-- Generated from the code by host/src/reference.rs; do not edit. \
Regenerate: `MNEMO_UPDATE_REFERENCE=1 cargo test -p mnemo-host --test it reference`. -->";

/// A table cell: one line, pipes escaped.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// The configuration page: every setting, its variable, default and meaning.
pub fn configuration() -> String {
    let mut out = format!(
        "# Configuration\n\n{GENERATED}\n\n\
         Every setting is read from the environment (`MNEMO_` + the name in upper\n\
         case) and from a TOML config file (`--config FILE`, `$MNEMO_CONFIG`, or\n\
         `<data dir>/config.toml` when present) whose keys are the names below; the\n\
         environment wins. An unknown key or a bad value stops mnemo with a message\n\
         naming the setting; an empty variable counts as unset. The `<tier>_*`\n\
         settings route one group of LLM steps to its own endpoint; what they leave\n\
         unset comes from the `llm_*` ones.\n\n\
         | setting | variable | default | meaning |\n|---|---|---|---|\n"
    );
    for s in Settings::REFERENCE {
        let _ = writeln!(
            out,
            "| `{}` | `MNEMO_{}` | {} | {} |",
            s.name,
            s.name.to_ascii_uppercase(),
            cell(s.default),
            cell(s.doc)
        );
    }
    out
}

/// The CLI page: every command of `mnemo`, its usage and its arguments.
pub fn cli() -> String {
    let mut root = crate::cli::command();
    root.build();
    let mut out = format!(
        "# The `mnemo` command line\n\n{GENERATED}\n\n\
         Output is human-readable, or JSON with `--json`. Invalid input exits 2\n\
         with one line on stderr and writes nothing; a missing id exits 3, a\n\
         conflict 4, any other failure 1. Every command takes `--db` and\n\
         `--config`.\n\n| command | what it does |\n|---|---|\n"
    );
    let mut sections = String::new();
    walk(&root, "mnemo", &mut out, &mut sections);
    out.push('\n');
    out.push_str(&sections);
    out
}

fn walk(cmd: &clap::Command, path: &str, index: &mut String, sections: &mut String) {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        let name = format!("{path} {}", sub.get_name());
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let anchor = name.replace(' ', "-");
        let _ = writeln!(index, "| [`{name}`](#{anchor}) | {} |", cell(&about));
        let _ = writeln!(sections, "## {name}\n");
        let long = sub.get_long_about().map(|a| a.to_string());
        let _ = writeln!(sections, "{}\n", long.unwrap_or(about));
        let usage = sub.clone().render_usage().to_string();
        let usage = usage.trim_start_matches("Usage: ");
        let _ = writeln!(sections, "```text\n{usage}\n```\n");
        let args: Vec<&clap::Arg> = sub
            .get_arguments()
            .filter(|a| !a.is_hide_set() && !a.is_global_set())
            .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
            .collect();
        if !args.is_empty() {
            sections.push_str("| argument | default | meaning |\n|---|---|---|\n");
            for a in args {
                let _ = writeln!(
                    sections,
                    "| {} | {} | {} |",
                    arg_name(a),
                    arg_default(a),
                    cell(&a.get_help().map(|h| h.to_string()).unwrap_or_default())
                );
            }
            sections.push('\n');
        }
        walk(sub, &name, index, sections);
    }
}

fn arg_name(a: &clap::Arg) -> String {
    let value = a
        .get_value_names()
        .and_then(|v| v.first())
        .map(|v| v.to_string())
        .unwrap_or_else(|| a.get_id().to_string().to_ascii_uppercase());
    if a.is_positional() {
        return format!("`<{value}>`");
    }
    let takes_value = a.get_num_args().is_some_and(|n| n.takes_values());
    let mut name = match (a.get_long(), a.get_short()) {
        (Some(l), Some(s)) => format!("`-{s}`, `--{l}`"),
        (Some(l), None) => format!("`--{l}`"),
        (None, Some(s)) => format!("`-{s}`"),
        (None, None) => format!("`{value}`"),
    };
    if takes_value {
        let _ = write!(name, " `{value}`");
    }
    name
}

fn arg_default(a: &clap::Arg) -> String {
    let defaults: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    let takes_value = a.get_num_args().is_some_and(|n| n.takes_values());
    match (defaults.is_empty(), takes_value) {
        (false, true) => format!("`{}`", defaults.join(",")),
        _ => String::new(),
    }
}

/// The HTTP page: every route of the OpenAPI document, its parameters, body
/// and answer, then the types they name.
pub fn http_api(doc: &Value) -> String {
    let mut out = format!(
        "# The HTTP API\n\n{GENERATED}\n\n\
         The server's own document is `GET /openapi.json` (OpenAPI 3.1). With\n\
         `MNEMO_API_KEY` set, every route but `/health` and `/openapi.json` needs\n\
         `Authorization: Bearer <key>`. The namespace comes from the body or the\n\
         query, else the `X-Namespace` header, else `default`. Errors are JSON:\n\
         `{{\"error\": {{\"code\", \"message\"}}}}` with a 4xx or 503 status.\n\n\
         | method | path | what it does |\n|---|---|---|\n"
    );
    let empty = serde_json::Map::new();
    let paths = doc["paths"].as_object().unwrap_or(&empty);
    let mut sections = String::new();
    for (path, item) in paths {
        let Some(ops) = item.as_object() else {
            continue;
        };
        for (method, op) in ops {
            let title = format!("{} {path}", method.to_ascii_uppercase());
            let summary = op["summary"].as_str().unwrap_or_default();
            let anchor: String = title
                .to_ascii_lowercase()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
                .map(|c| if c == ' ' { '-' } else { c })
                .collect();
            let _ = writeln!(
                out,
                "| {} | [`{path}`](#{anchor}) | {} |",
                method.to_ascii_uppercase(),
                cell(summary)
            );
            let _ = writeln!(sections, "## {title}\n\n{summary}\n");
            operation(op, doc, &mut sections);
        }
    }
    out.push('\n');
    out.push_str(&sections);
    out.push_str("## Types\n\n");
    let schemas = doc["components"]["schemas"].as_object().unwrap_or(&empty);
    for (name, schema) in schemas {
        let _ = writeln!(out, "### {name}\n");
        if let Some(d) = schema["description"].as_str() {
            let _ = writeln!(out, "{}\n", d.trim());
        }
        match schema["properties"].as_object() {
            Some(props) => {
                let required = required_of(schema);
                out.push_str("| field | type | required | meaning |\n|---|---|---|---|\n");
                for (field, p) in props {
                    let _ = writeln!(
                        out,
                        "| `{field}` | {} | {} | {} |",
                        type_of(p, true),
                        if required.contains(&field.as_str()) {
                            "yes"
                        } else {
                            ""
                        },
                        cell(p["description"].as_str().unwrap_or_default())
                    );
                }
                out.push('\n');
            }
            None => {
                let _ = writeln!(out, "{}\n", type_of(schema, true));
            }
        }
    }
    out
}

fn operation(op: &Value, doc: &Value, out: &mut String) {
    let params: Vec<Value> = op["parameters"]
        .as_array()
        .map(|ps| ps.iter().map(|p| resolve(p, doc).clone()).collect())
        .unwrap_or_default();
    if !params.is_empty() {
        out.push_str("| parameter | in | type | required | meaning |\n|---|---|---|---|---|\n");
        for p in &params {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} |",
                p["name"].as_str().unwrap_or_default(),
                p["in"].as_str().unwrap_or_default(),
                type_of(&p["schema"], true),
                if p["required"] == true { "yes" } else { "" },
                cell(p["description"].as_str().unwrap_or_default())
            );
        }
        out.push('\n');
    }
    if let Some(content) = op["requestBody"]["content"].as_object() {
        for (media, c) in content {
            let _ = writeln!(out, "Body ({media}): {}\n", type_of(&c["schema"], true));
        }
    }
    if let Some(content) = op["responses"]["2XX"]["content"].as_object() {
        for (media, c) in content {
            let _ = writeln!(out, "Answer ({media}): {}\n", type_of(&c["schema"], true));
        }
    }
}

/// `v`, or what its `$ref` points to in `doc`.
fn resolve<'a>(v: &'a Value, doc: &'a Value) -> &'a Value {
    match v["$ref"].as_str() {
        Some(r) => doc.pointer(r.trim_start_matches('#')).unwrap_or(v),
        None => v,
    }
}

fn required_of(schema: &Value) -> Vec<&str> {
    schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A schema's type in a few words: a named type links to its section.
fn type_of(s: &Value, link: bool) -> String {
    if let Some(r) = s["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap_or(r);
        return match link {
            true => format!("[{name}](#{})", name.to_ascii_lowercase()),
            false => format!("`{name}`"),
        };
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(options) = s[key].as_array() {
            let parts: Vec<String> = options.iter().map(|o| type_of(o, link)).collect();
            return parts.join(" or ");
        }
    }
    if let Some(values) = s["enum"].as_array() {
        let parts: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        return parts.join(", ");
    }
    if let Some(c) = s.get("const") {
        return format!("`{c}`");
    }
    let types: Vec<String> = match &s["type"] {
        Value::String(t) => vec![t.clone()],
        Value::Array(ts) => ts
            .iter()
            .filter_map(|t| t.as_str().map(String::from))
            .collect(),
        _ => return "any".into(),
    };
    types
        .iter()
        .map(|t| match t.as_str() {
            "array" => format!("array of {}", type_of(&s["items"], link)),
            "object" if s["additionalProperties"].is_object() => {
                format!("map to {}", type_of(&s["additionalProperties"], link))
            }
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" or ")
}

/// The MCP page: every tool `mnemo mcp` lists, with its annotations, its
/// arguments and what it answers; then the resources and the prompts.
pub fn mcp_tools() -> String {
    let mut out = format!(
        "# MCP: tools, resources, prompts\n\n{GENERATED}\n\n\
         `mnemo mcp` speaks the Model Context Protocol over stdio (and `/mcp` on\n\
         the HTTP server, streamable HTTP). A tool's `namespace` argument wins over\n\
         the `X-Namespace` header; without either it is `default`. Every tool\n\
         declares its `outputSchema` and answers `structuredContent` (and the same\n\
         JSON as text); an error is a result with `isError` and\n\
         `{{\"error\": {{\"code\", \"message\"}}}}`.\n\n\
         **Effect** is the tool's annotations: *read-only* changes nothing;\n\
         *additive* only adds or reinforces (recall counts an access, and\n\
         what recall, context or resume shows is renewed); *destructive*\n\
         replaces or removes something\n\
         (always kept in a memory's history or the trash, restorable);\n\
         *idempotent* means calling it again with the same arguments changes\n\
         nothing more; *LLM* means it may call the configured LLM.\n\n\
         | tool | title | effect | what it does |\n|---|---|---|---|\n"
    );
    let tools = crate::server::mcp::tools();
    let mut sections = String::new();
    for tool in &tools {
        let description = tool.description.as_deref().unwrap_or_default();
        let first = description.split(". ").next().unwrap_or(description);
        let _ = writeln!(
            out,
            "| [`{}`](#{}) | {} | {} | {} |",
            tool.name,
            tool.name,
            tool.title.as_deref().unwrap_or_default(),
            effect(tool.annotations.as_ref()),
            cell(first)
        );
        let _ = writeln!(sections, "## {}\n\n{}\n", tool.name, description.trim());
        let schema = Value::Object((*tool.input_schema).clone());
        if let Some(props) = schema["properties"].as_object().filter(|p| !p.is_empty()) {
            let required = required_of(&schema);
            sections.push_str("| argument | type | required | meaning |\n|---|---|---|---|\n");
            for (name, p) in props {
                let _ = writeln!(
                    sections,
                    "| `{name}` | {} | {} | {} |",
                    type_of(p, false),
                    if required.contains(&name.as_str()) {
                        "yes"
                    } else {
                        ""
                    },
                    cell(p["description"].as_str().unwrap_or_default())
                );
            }
            sections.push('\n');
        }
        if let Some(output) = &tool.output_schema {
            let output = Value::Object((**output).clone());
            if let Some(props) = output["properties"].as_object() {
                let fields: Vec<String> = props.keys().map(|k| format!("`{k}`")).collect();
                let _ = writeln!(sections, "Answers: {}.\n", fields.join(", "));
            }
        }
    }
    out.push('\n');
    out.push_str(&sections);
    out.push_str(&mcp_resources_and_prompts());
    out
}

/// A tool's annotations in words.
fn effect(a: Option<&rmcp::model::ToolAnnotations>) -> String {
    let Some(a) = a else {
        return "unannotated".into();
    };
    let mut words = vec![match (a.read_only_hint, a.destructive_hint) {
        (Some(true), _) => "read-only",
        (_, Some(false)) => "additive",
        _ => "destructive",
    }];
    if a.read_only_hint != Some(true) && a.idempotent_hint == Some(true) {
        words.push("idempotent");
    }
    if a.open_world_hint == Some(true) {
        words.push("LLM");
    }
    words.join(", ")
}

/// The resources (their templates) and the prompts.
fn mcp_resources_and_prompts() -> String {
    let mut out = String::from(
        "# Resources\n\n\
         JSON, the same value the matching tool answers. `resources/list` names\n\
         the request's namespace's resume, Core and topics. A client may\n\
         subscribe to any of them (`subscriptions/listen`, or `resources/subscribe`\n\
         in a session): it is told when what it would read changes.\n\n\
         | URI template | title | what |\n|---|---|---|\n",
    );
    for t in crate::server::mcp::resources::templates().resource_templates {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            t.uri_template,
            t.title.as_deref().unwrap_or_default(),
            cell(t.description.as_deref().unwrap_or_default())
        );
    }
    out.push_str(
        "\n# Prompts\n\n\
         Completions (`completion/complete`) offer the store's namespaces for a\n\
         `namespace` argument and a namespace's topic ids for `review_topic`'s\n\
         `topic` and the topic template's `id`.\n\n\
         | prompt | title | arguments | what |\n|---|---|---|---|\n",
    );
    for p in crate::server::mcp::prompts() {
        let args: Vec<String> = p
            .arguments
            .iter()
            .flatten()
            .map(|a| {
                let required = if a.required == Some(true) {
                    " (required)"
                } else {
                    ""
                };
                format!("`{}`{required}", a.name)
            })
            .collect();
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} |",
            p.name,
            p.title.as_deref().unwrap_or_default(),
            args.join(", "),
            cell(p.description.as_deref().unwrap_or_default())
        );
    }
    out
}
