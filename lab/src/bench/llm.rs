//! `mnemo-lab bench llm`: what running a provider as a sandboxed plugin costs
//! per call. The same chat request, with a forced tool call, goes to the
//! same stub OpenAI-compatible server on 127.0.0.1 (no delay) through
//! - the `openai` plugin, via the LLM client (routing, grant, ledger), and
//! - a native client: the body built, posted and read in the host, as the
//!   native `llm/openai.rs` did before providers became plugins (kept here
//!   only as the baseline).
//!
//! The difference of the medians is the plugin's price. Prints a table;
//! never asserts a time.

use std::time::{Duration, Instant};

use mnemo_core::model::{ChatMessage, ChatRequest, LlmComponent, LlmLevel, ToolSpec};
use mnemo_core::ports::Llm;
use mnemo_host::http::{HttpPolicy, Limiter, post_json};
use mnemo_host::ledger::Ledger;
use mnemo_host::llm::{Endpoint, LlmClient, LlmConfig};
use serde_json::{Value, json};

use super::{Table, ms, percentile};

#[derive(clap::Args)]
pub struct LlmBenchArgs {
    /// Calls per path.
    #[arg(long, default_value_t = 2_000)]
    calls: usize,
    /// Print the rows as one JSON array at the end instead of the table.
    #[arg(long)]
    json: bool,
}

fn request() -> ChatRequest {
    ChatRequest {
        component: LlmComponent::Gate,
        messages: vec![
            ChatMessage {
                role: "system".into(),
                content: "You decide which memories to keep.".into(),
            },
            ChatMessage {
                role: "user".into(),
                content: "1. the user moved to Lisbon in May\n2. ok\n3. the user's sister is Ana"
                    .into(),
            },
        ],
        json: true,
        max_tokens: Some(256),
        tool: Some(ToolSpec {
            name: "decide".into(),
            description: "Record the decisions".into(),
            parameters: json!({"type": "object", "properties": {"decisions": {"type": "array"}}, "required": ["decisions"]}).to_string(),
        }),
    }
}

/// The native baseline: the OpenAI request built, posted and read in the host.
fn native(
    base: &str,
    req: &ChatRequest,
    policy: &HttpPolicy,
    limiter: &Limiter,
) -> anyhow::Result<String> {
    let tool = req
        .tool
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("no tool"))?;
    let parameters: Value = serde_json::from_str(&tool.parameters)?;
    let body = json!({
        "model": "bench",
        "messages": req.messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect::<Vec<_>>(),
        "max_tokens": req.max_tokens,
        "tools": [{"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": parameters}}],
        "tool_choice": {"type": "function", "function": {"name": tool.name}},
    });
    let v = post_json(
        &format!("{base}/chat/completions"),
        &[],
        &body,
        policy,
        limiter,
    )?;
    v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow::anyhow!("no tool call"))
}

/// Times one call.
fn once(f: impl FnOnce() -> anyhow::Result<String>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    f()?;
    Ok(started.elapsed())
}

pub fn run(a: LlmBenchArgs) -> anyhow::Result<()> {
    let stubs = super::stubs::start(8, Duration::ZERO)?;
    let policy = HttpPolicy::default();
    let config = LlmConfig {
        level: LlmLevel::Auto,
        default: Some(Endpoint {
            provider: "openai".into(),
            base_url: stubs.base.clone(),
            api_key: Some("bench-key".into()),
            model: "bench".into(),
        }),
        policy: policy.clone(),
        ..Default::default()
    };
    let client = LlmClient::new(config, Ledger::default());
    let limiter = Limiter::new(2);
    let req = request();
    let mut t = Table {
        json: a.json,
        rows: Vec::new(),
    };
    let started = Instant::now();
    client.complete(&req)?;
    t.row(
        "openai plugin: first call",
        ms(started.elapsed()),
        "ms",
        "compile the bundled plugin (no disk cache), instantiate, call",
    );
    // Warm both paths (connection pool, instance pool) before timing.
    for _ in 0..20 {
        client.complete(&req)?;
        native(&stubs.base, &req, &policy, &limiter)?;
    }
    let how = format!(
        "{} calls each, interleaved, forced tool call, stub on 127.0.0.1",
        a.calls
    );
    // Interleaved, so drift in the machine's load falls on both paths alike.
    let mut plugin = Vec::with_capacity(a.calls);
    let mut base = Vec::with_capacity(a.calls);
    let mut paired: Vec<f64> = Vec::with_capacity(a.calls);
    for _ in 0..a.calls {
        let p = once(|| Ok(client.complete(&req)?.content))?;
        let n = once(|| native(&stubs.base, &req, &policy, &limiter))?;
        paired.push(p.as_secs_f64() - n.as_secs_f64());
        plugin.push(p);
        base.push(n);
    }
    plugin.sort();
    base.sort();
    paired.sort_by(f64::total_cmp);
    for (label, times) in [("openai plugin", &plugin), ("native client", &base)] {
        t.row(
            &format!("{label}: p50"),
            ms(percentile(times, 0.5)),
            "ms",
            &how,
        );
        t.row(
            &format!("{label}: p99"),
            ms(percentile(times, 0.99)),
            "ms",
            &how,
        );
        let total: Duration = times.iter().sum();
        t.row(
            &format!("{label}: throughput"),
            format!("{:.0}", times.len() as f64 / total.as_secs_f64().max(1e-9)),
            "calls/s",
            &how,
        );
    }
    let median = paired.get(paired.len() / 2).copied().unwrap_or_default();
    t.row(
        "plugin overhead per call (median of pairs)",
        format!("{:.1}", median * 1e6),
        "µs",
        "plugin minus native, call by call: the sandboxed instance, copies across the boundary, the guest's JSON",
    );
    if a.json {
        println!("{}", serde_json::to_string_pretty(&t.rows)?);
    }
    Ok(())
}
