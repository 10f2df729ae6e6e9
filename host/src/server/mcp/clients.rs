//! `mnemo mcp --print-config CLIENT`: the snippet that registers this
//! mnemo with an MCP client, with this binary's absolute path (stdio), or
//! with a server's `/mcp` URL (`--http URL`, and the bearer key when
//! `MNEMO_API_KEY` is set). The formats are each client's own: a JSON
//! `mcpServers` entry (Claude Desktop, Cursor, Claude Code's `.mcp.json`),
//! VS Code's `servers`, Codex's TOML table; Claude Code also takes a
//! `claude mcp add` line. docs/guide/mcp.md shows each.

use std::path::Path;

use serde_json::{Value, json};

/// The MCP clients `--print-config` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum McpClient {
    /// Claude Code: a `claude mcp add` line and the `.mcp.json` entry.
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Cursor: `~/.cursor/mcp.json` (or `.cursor/mcp.json` in a project).
    Cursor,
    /// VS Code: `.vscode/mcp.json` (or the user's `mcp.json`).
    Vscode,
    /// Codex: `~/.codex/config.toml`.
    Codex,
}

/// Settings passed on to a stdio server when they are set here, so the
/// client's mnemo opens the same store with the same model and LLM (keys
/// are left out: a snippet is pasted into files people share).
pub const PASSED_ON: &[&str] = &[
    "MNEMO_DATA_DIR",
    "MNEMO_DB",
    "MNEMO_CONFIG",
    "MNEMO_MODEL_DIR",
    "MNEMO_EMBEDDER",
    "MNEMO_LLM_PROVIDER",
    "MNEMO_LLM_LEVEL",
    "MNEMO_LLM_URL",
    "MNEMO_LLM_MODEL",
];

/// Where the client reaches mnemo.
pub enum Transport<'a> {
    /// Starts `BIN mcp` itself (with `env`) and speaks over its stdin and
    /// stdout.
    Stdio {
        bin: &'a Path,
        env: &'a [(String, String)],
    },
    /// Posts to a running server's `/mcp`.
    Http { url: &'a str, key: Option<&'a str> },
}

/// `{command, args, env}` (and `type` where the client wants it).
fn stdio_entry(bin: &Path, env: &[(String, String)], kind: Option<&str>) -> Value {
    let mut e = json!({ "command": bin, "args": ["mcp"] });
    if let Some(k) = kind {
        e["type"] = json!(k);
    }
    if !env.is_empty() {
        e["env"] = env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    }
    e
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// The server's JSON entry: `{command, args, env}` or `{url, headers}`,
/// each with the `type` a client wants (`types.0` for stdio, `.1` for HTTP).
fn entry(t: &Transport, types: (Option<&str>, Option<&str>)) -> Value {
    match t {
        Transport::Stdio { bin, env } => stdio_entry(bin, env, types.0),
        Transport::Http { url, key } => {
            let mut e = json!({ "url": url });
            if let Some(kind) = types.1 {
                e["type"] = json!(kind);
            }
            if let Some(k) = key {
                e["headers"] = json!({ "Authorization": format!("Bearer {k}") });
            }
            e
        }
    }
}

/// A JSON `mcpServers` entry (Claude Desktop, Cursor, `.mcp.json`).
fn mcp_servers(t: &Transport, http_type: Option<&str>) -> Value {
    json!({ "mcpServers": { "mnemo": entry(t, (None, http_type)) } })
}

/// The snippet for `client`, ready to paste, with where it goes.
pub fn snippet(client: McpClient, t: &Transport) -> String {
    match client {
        McpClient::ClaudeCode => {
            let line = match t {
                Transport::Stdio { bin, env } => {
                    let envs: String = env.iter().map(|(k, v)| format!(" -e {k}={v}")).collect();
                    format!(
                        "claude mcp add --scope user{envs} mnemo -- {} mcp",
                        bin.display()
                    )
                }
                Transport::Http { url, key } => {
                    let header = key
                        .map(|k| format!(" --header \"Authorization: Bearer {k}\""))
                        .unwrap_or_default();
                    format!("claude mcp add --scope user --transport http{header} mnemo {url}")
                }
            };
            format!(
                "# Run once:\n{line}\n\n# Or, for one project, in .mcp.json at its root:\n{}\n",
                pretty(&mcp_servers(t, Some("http")))
            )
        }
        McpClient::ClaudeDesktop => match t {
            Transport::Stdio { .. } => format!(
                "# In claude_desktop_config.json (Settings > Developer > Edit Config), then restart Claude:\n{}\n",
                pretty(&mcp_servers(t, None))
            ),
            Transport::Http { url, .. } => format!(
                "# Claude Desktop adds a remote server in Settings > Connectors > Add custom connector\n\
                 # (name: mnemo, URL below; it must be reachable over HTTPS). On this machine the\n\
                 # stdio entry needs no server: mnemo mcp --print-config claude-desktop\n{url}\n"
            ),
        },
        McpClient::Cursor => format!(
            "# In ~/.cursor/mcp.json (every project) or .cursor/mcp.json (one project):\n{}\n",
            pretty(&mcp_servers(t, None))
        ),
        McpClient::Vscode => {
            let entry = entry(t, (Some("stdio"), Some("http")));
            format!(
                "# In .vscode/mcp.json (this workspace) or your user mcp.json (MCP: Open User Configuration):\n{}\n",
                pretty(&json!({ "servers": { "mnemo": entry } }))
            )
        }
        McpClient::Codex => {
            let body = match t {
                Transport::Stdio { bin, env } => {
                    let mut s = format!(
                        "command = {}\nargs = [\"mcp\"]",
                        toml_string(&bin.display().to_string())
                    );
                    if !env.is_empty() {
                        let pairs: Vec<String> = env
                            .iter()
                            .map(|(k, v)| format!("{k} = {}", toml_string(v)))
                            .collect();
                        s.push_str(&format!("\nenv = {{ {} }}", pairs.join(", ")));
                    }
                    s
                }
                Transport::Http { url, key } => {
                    let mut s = format!("url = {}", toml_string(url));
                    if let Some(k) = key {
                        s.push_str(&format!(
                            "\nhttp_headers = {{ Authorization = {} }}",
                            toml_string(&format!("Bearer {k}"))
                        ));
                    }
                    s
                }
            };
            format!("# In ~/.codex/config.toml:\n[mcp_servers.mnemo]\n{body}\n")
        }
    }
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_gets_a_snippet_that_parses() {
        let bin = Path::new("/opt/mnemo/bin/mnemo");
        let env = [("MNEMO_DATA_DIR".to_string(), "/srv/mnemo".to_string())];
        for client in [
            McpClient::ClaudeCode,
            McpClient::ClaudeDesktop,
            McpClient::Cursor,
            McpClient::Vscode,
            McpClient::Codex,
        ] {
            for t in [
                Transport::Stdio { bin, env: &env },
                Transport::Http {
                    url: "http://127.0.0.1:7878/mcp",
                    key: Some("mnemo_k_s"),
                },
            ] {
                let text = snippet(client, &t);
                let body: String = text
                    .lines()
                    .filter(|l| !l.starts_with('#') && !l.starts_with("claude "))
                    .collect::<Vec<_>>()
                    .join("\n");
                let body = body.trim();
                let remote_desktop =
                    client == McpClient::ClaudeDesktop && matches!(t, Transport::Http { .. });
                if remote_desktop {
                    assert_eq!(body, "http://127.0.0.1:7878/mcp", "{text}");
                } else if client == McpClient::Codex {
                    assert!(body.starts_with("[mcp_servers.mnemo]"), "{text}");
                } else {
                    let v: Value = serde_json::from_str(body)
                        .unwrap_or_else(|e| panic!("{client:?}: {e}: {text}"));
                    assert!(v.to_string().contains("mnemo"), "{text}");
                }
                match t {
                    Transport::Stdio { .. } => {
                        assert!(text.contains("/opt/mnemo/bin/mnemo"), "{text}");
                        assert!(text.contains("MNEMO_DATA_DIR"), "{text}");
                    }
                    Transport::Http { .. } => assert!(text.contains("http://127.0.0.1:7878/mcp")),
                }
            }
        }
    }
}
