//! Structured output that survives small models (issue 17). A local model
//! asked for a tool call often answers around it: the JSON in a markdown
//! fence, after a `<think>` block or a sentence of prose, with a trailing
//! comma, wrapped as `{"name", "arguments"}`, or the tool's schema echoed
//! back instead of an answer. [`json`] repairs what can be read without
//! guessing and names what cannot; [`ask`] then shows the model its error
//! once before the step fails with a typed `llm` error (the caller keeps
//! the item for the next cycle: nothing is dropped or half-applied).

use serde_json::Value;

use crate::error::{CoreError, CoreResult};
use crate::model::{ChatMessage, ChatRequest};
use crate::ports::Llm;

/// The JSON object in a model's answer, repaired where that is safe.
pub fn json(step: &str, answer: &str) -> CoreResult<Value> {
    let malformed = |why: String| CoreError::Llm(format!("malformed {step} answer: {why}"));
    let text = without_thinking(answer)
        .ok_or_else(|| malformed("only thinking, no answer (an unclosed <think>)".into()))?;
    let text = unfenced(text);
    let value = match serde_json::from_str::<Value>(text) {
        Ok(v) => v,
        Err(first) => {
            let object = first_object(text).ok_or_else(|| malformed(format!("{first}")))?;
            serde_json::from_str::<Value>(&without_trailing_commas(object))
                .map_err(|e| malformed(format!("{e}")))?
        }
    };
    let value = unwrapped(value);
    if echoes_a_schema(&value) {
        return Err(malformed(
            "the tool's schema was echoed instead of an answer".into(),
        ));
    }
    Ok(value)
}

/// Asks `llm`; on an answer `parse` cannot use, asks once more with the
/// error shown to the model; then fails with a typed `llm` error. A call
/// that brought no answer (the provider's own error: unreachable, refused,
/// cut off at max tokens) is not repeated here: the host already retried
/// it, and the step's item waits for the next cycle.
pub fn ask<L: Llm + ?Sized, T>(
    llm: &L,
    request: &ChatRequest,
    parse: impl Fn(&str) -> CoreResult<T>,
) -> CoreResult<T> {
    let first = llm.complete(request)?;
    let why = match parse(&first.content) {
        Ok(v) => return Ok(v),
        Err(CoreError::Llm(why)) => why,
        Err(other) => return Err(other),
    };
    let mut again = request.clone();
    again.messages.push(ChatMessage {
        role: "assistant".into(),
        content: first.content,
    });
    let tool = request
        .tool
        .as_ref()
        .map_or("the tool", |t| t.name.as_str());
    again.messages.push(ChatMessage {
        role: "user".into(),
        content: format!(
            "That answer could not be used: {why}. Answer again with one call of `{tool}` whose \
             arguments are a JSON object that follows its schema: no prose, no markdown."
        ),
    });
    let second = llm.complete(&again)?;
    parse(&second.content).map_err(|e| match e {
        CoreError::Llm(why) => CoreError::Llm(format!("{why} (after one retry)")),
        other => other,
    })
}

/// The text after any `<think>…</think>` blocks; `None` when a block is
/// never closed (the answer was all thinking, or cut off inside it).
fn without_thinking(text: &str) -> Option<&str> {
    let mut rest = text.trim_start();
    while let Some(after) = rest.strip_prefix("<think>") {
        let end = after.find("</think>")?;
        rest = after.get(end + "</think>".len()..)?.trim_start();
    }
    Some(rest.trim())
}

/// The inside of a markdown code fence (```json … ```), else the text.
fn unfenced(text: &str) -> &str {
    let Some(start) = text.find("```") else {
        return text;
    };
    let Some(after) = text.get(start + 3..) else {
        return text;
    };
    // The fence's language tag runs to the end of its line.
    let body = after
        .find('\n')
        .and_then(|nl| after.get(nl + 1..))
        .unwrap_or(after);
    match body.find("```") {
        Some(end) => body.get(..end).unwrap_or(body).trim(),
        None => body.trim(),
    }
}

/// Where a character of JSON text stands: inside a string literal or not.
#[derive(Default)]
struct Strings {
    inside: bool,
    escaped: bool,
}

impl Strings {
    /// Whether `c`, the next character, is structure (outside every string
    /// literal, and not a quote).
    fn structural(&mut self, c: char) -> bool {
        if self.inside {
            match (self.escaped, c) {
                (true, _) => self.escaped = false,
                (false, '\\') => self.escaped = true,
                (false, '"') => self.inside = false,
                _ => {}
            }
            return false;
        }
        if c == '"' {
            self.inside = true;
            return false;
        }
        true
    }
}

/// The first balanced `{…}` in `text`, strings and escapes respected.
fn first_object(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let (mut depth, mut strings) = (0usize, Strings::default());
    for (i, c) in text.get(start..)?.char_indices() {
        if !strings.structural(c) {
            continue;
        }
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return text.get(start..start + i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// `{"a": [1, 2,],}` → `{"a": [1, 2]}`: commas before a closing bracket
/// dropped, outside strings.
fn without_trailing_commas(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut strings = Strings::default();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        if strings.structural(c) && c == ',' {
            let next = chars.iter().skip(i + 1).find(|n| !n.is_whitespace());
            if matches!(next, Some('}') | Some(']')) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// `{"name": "gate", "arguments": {…}}` (a tool call written out as text)
/// → the arguments; arguments given as a JSON string are read too.
fn unwrapped(value: Value) -> Value {
    let Some(object) = value.as_object() else {
        return value;
    };
    let inner = ["arguments", "parameters", "input"]
        .iter()
        .find_map(|k| object.get(*k));
    let only_call = object.keys().all(|k| {
        matches!(
            k.as_str(),
            "name" | "arguments" | "parameters" | "input" | "type" | "id"
        )
    });
    match inner {
        Some(Value::Object(args)) if only_call => Value::Object(args.clone()),
        Some(Value::String(args)) if only_call => serde_json::from_str(args).unwrap_or(value),
        _ => value,
    }
}

/// A JSON Schema where an answer was due: `{"type": "object", "properties":
/// {…}}` (no answer of mnemo's tools has a `properties` key).
fn echoes_a_schema(value: &Value) -> bool {
    value.get("properties").is_some_and(Value::is_object)
        && (value.get("type") == Some(&Value::from("object")) || value.get("$schema").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LlmComponent, LlmLevel};
    use crate::testing::ScriptedLlm;
    use serde_json::json;

    fn ok(answer: &str) -> Value {
        json("gate", answer).unwrap_or_else(|e| panic!("{answer:?}: {e}"))
    }

    fn malformed(answer: &str) -> String {
        match json("gate", answer) {
            Err(CoreError::Llm(why)) => why,
            other => panic!("{answer:?} gave {other:?}"),
        }
    }

    #[test]
    fn what_a_small_model_wraps_around_the_json_is_taken_off() {
        let want = json!({"verdicts": [{"id": "a1", "promote": true}]});
        let plain = r#"{"verdicts": [{"id": "a1", "promote": true}]}"#;
        for answer in [
            plain.to_string(),
            format!("```json\n{plain}\n```"),
            format!("```\n{plain}\n```"),
            format!("<think>The user wants a verdict. {{not json}}</think>\n{plain}"),
            format!("<think>a</think><think>b</think>```json\n{plain}```"),
            format!("Here is the JSON you asked for:\n{plain}\nHope this helps!"),
            r#"{"verdicts": [{"id": "a1", "promote": true,},],}"#.to_string(),
            format!(r#"{{"name": "gate", "arguments": {plain}}}"#),
            format!(
                r#"{{"name": "gate", "arguments": {}}}"#,
                serde_json::to_string(plain).unwrap_or_default()
            ),
        ] {
            assert_eq!(ok(&answer), want, "{answer}");
        }
        // Braces and commas inside strings are text, not structure.
        assert_eq!(
            ok(r#"Sure: {"reason": "a } b ,]", "ok": true,}"#),
            json!({"reason": "a } b ,]", "ok": true})
        );
        // So are escaped quotes.
        assert_eq!(
            ok(r#"ok: {"reason": "he said \"},\" then left",}"#),
            json!({"reason": "he said \"},\" then left"})
        );
    }

    #[test]
    fn what_cannot_be_read_without_guessing_is_a_typed_error() {
        assert!(
            malformed("<think>still thinking when the tokens ran out").contains("unclosed <think>")
        );
        assert!(malformed(r#"{"verdicts": [{"id": "a1""#).contains("malformed gate answer"));
        assert!(malformed("I cannot help with that.").contains("malformed gate answer"));
        let echo = r#"{"type": "object", "properties": {"verdicts": {"type": "array"}}, "required": ["verdicts"]}"#;
        assert!(malformed(echo).contains("schema was echoed"));
    }

    fn parse(content: &str) -> CoreResult<Value> {
        let v = json("gate", content)?;
        if v.get("verdicts").is_none() {
            return Err(CoreError::Llm(
                "malformed gate answer: no `verdicts` list".into(),
            ));
        }
        Ok(v)
    }

    fn request() -> ChatRequest {
        super::super::chat(
            LlmComponent::Gate,
            "system",
            "user".into(),
            super::super::tool("gate", "d", json!({"type": "object"})),
            100,
        )
    }

    #[test]
    fn one_retry_shows_the_model_its_error() {
        let llm = ScriptedLlm::default();
        llm.script(LlmLevel::Full, LlmComponent::Gate, r#"{"verdict": []}"#);
        llm.script(LlmLevel::Full, LlmComponent::Gate, r#"{"verdicts": []}"#);
        assert_eq!(
            ask(&llm, &request(), parse).ok(),
            Some(json!({"verdicts": []}))
        );
        let requests = llm.requests.borrow();
        assert_eq!(requests.len(), 2);
        let retry = &requests[1].messages;
        assert_eq!(retry.len(), 4);
        assert_eq!(retry[2].role, "assistant");
        assert_eq!(retry[2].content, r#"{"verdict": []}"#);
        assert!(
            retry[3].content.contains("no `verdicts` list"),
            "{}",
            retry[3].content
        );
        assert!(retry[3].content.contains("`gate`"));
    }

    #[test]
    fn a_second_bad_answer_is_a_typed_error_and_no_third_call() {
        let llm = ScriptedLlm::default();
        for _ in 0..3 {
            llm.script(LlmLevel::Full, LlmComponent::Gate, "no idea");
        }
        match ask(&llm, &request(), parse) {
            Err(CoreError::Llm(why)) => assert!(why.ends_with("(after one retry)"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(llm.requests.borrow().len(), 2);
        // A good first answer costs one call.
        let llm = ScriptedLlm::default();
        llm.script(LlmLevel::Full, LlmComponent::Gate, r#"{"verdicts": []}"#);
        assert!(ask(&llm, &request(), parse).is_ok());
        assert_eq!(llm.requests.borrow().len(), 1);
    }
}
