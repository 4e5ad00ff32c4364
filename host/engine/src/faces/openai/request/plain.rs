//! The common chat-completions request — a model, text messages, and at
//! most `stream`, `max_tokens`, `max_completion_tokens`, `temperature` and
//! `top_p` — read in one pass from its text with the cursor of
//! [`crate::wire::json::scan`], without the JSON tree the general reader builds first
//! (more than half of reading a short request) or a `serde` visitor's
//! calls (most of the rest: docs/performance.md).
//!
//! Anything else — another field, a message with more than a role and a
//! string, a name written with escapes, a value the general reader would
//! refuse or keep as it came — makes this reader give up, and the general
//! one reads the request: this one never refuses and never decides
//! differently (a property test holds the two to the same request on every
//! body this one takes).

use std::borrow::Cow;

use super::text_role;
use crate::model::{ChatRequest, Message};
use crate::wire::json::scan::{Cursor, Number};

/// The request in `body`, when it is a plain one.
pub(crate) fn plain_request(body: &[u8]) -> Option<ChatRequest> {
    let text = std::str::from_utf8(body).ok()?;
    let mut cursor = Cursor::new(text);
    let mut model = None;
    let mut turns = None;
    let (mut stream, mut max_tokens, mut max_completion_tokens) = (false, None, None);
    let (mut temperature, mut top_p) = (None, None);
    // A repeated name means its last value, as in a parsed object.
    cursor.object(|cursor, name, escaped| {
        (!escaped).then_some(())?;
        match cursor.slice(name) {
            "model" => model = cursor.text()?,
            "messages" => turns = Some(read_turns(cursor)?),
            "stream" => stream = cursor.boolean()?,
            "max_tokens" => max_tokens = Some(positive(cursor)?),
            "max_completion_tokens" => max_completion_tokens = Some(positive(cursor)?),
            "temperature" => temperature = fraction(cursor)?,
            "top_p" => top_p = fraction(cursor)?,
            _ => return None,
        }
        Some(())
    })?;
    cursor.at_end().then_some(())?;
    let model = model.filter(|m| !m.trim().is_empty())?;
    let Turns { system, messages } = turns?;
    if system.is_empty() && messages.is_empty() {
        return None;
    }
    Some(ChatRequest {
        model: model.into_owned(),
        system: (!system.is_empty()).then(|| system.join("\n\n")),
        messages,
        stream,
        // As the general reader has it: the later name wins.
        max_tokens: max_completion_tokens.or(max_tokens),
        temperature,
        top_p,
        ..ChatRequest::default()
    })
}

/// A token bound: a positive integer; anything else is for the general
/// reader (which refuses it, or skips a null).
fn positive(cursor: &mut Cursor<'_>) -> Option<u64> {
    cursor.count()?.filter(|count| *count > 0)
}

/// An optional number, as `serde_json` reads an `Option<f64>`: `null`, or
/// a number (an integer converted, any other read by `serde_json` itself,
/// which refuses one out of range); anything else is for the general
/// reader.
fn fraction(cursor: &mut Cursor<'_>) -> Option<Option<f64>> {
    if cursor.null()? {
        return Some(None);
    }
    let start = cursor.at();
    match cursor.number()? {
        Number::Count(count) => Some(Some(count as f64)),
        Number::Negative | Number::Other => {
            serde_json::from_str(cursor.slice(start..cursor.at())).ok()
        }
    }
}

/// The messages: system texts apart, the turns in order.
struct Turns {
    system: Vec<String>,
    messages: Vec<Message>,
}

/// The `messages` array, every element a text message of a role the
/// general reader reads as text.
fn read_turns(cursor: &mut Cursor<'_>) -> Option<Turns> {
    let mut turns = Turns {
        system: Vec::new(),
        messages: Vec::with_capacity(4),
    };
    cursor.array(|cursor, _| {
        let (mut role, mut content) = (None, None);
        cursor.object(|cursor, name, escaped| {
            (!escaped).then_some(())?;
            match cursor.slice(name) {
                "role" => role = cursor.text()?,
                "content" => content = cursor.text()?,
                _ => return None,
            }
            Some(())
        })?;
        let role = role.as_deref().and_then(text_role)?;
        let content = content.map(Cow::into_owned)?;
        match role {
            None => turns.system.push(content),
            Some(role) => turns.messages.push(Message { role, content }),
        }
        Some(())
    })?;
    Some(turns)
}

#[cfg(test)]
mod tests {
    use super::super::request_from_value;
    use super::*;
    use proptest::prelude::*;

    /// What the general reader makes of `body`.
    fn general(body: &[u8]) -> Option<ChatRequest> {
        request_from_value(serde_json::from_slice(body).ok()?).ok()
    }

    #[test]
    fn the_usual_requests_are_read_here_as_the_general_reader_reads_them() {
        for body in [
            r#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#,
            r#"{"messages":[{"content":"be brief","role":"system"},{"role":"developer","content":"x"},{"role":"user","content":"h\u00e9"},{"role":"assistant","content":""}],"model":"openai/gpt-4o","stream":true,"max_tokens":5,"max_completion_tokens":7,"temperature":0,"top_p":0.5}"#,
            r#"{"model":"a","model":"b","messages":[],"messages":[{"role":"system","content":"only"}],"temperature":null}"#,
        ] {
            let plain = plain_request(body.as_bytes());
            assert!(plain.is_some(), "not read here: {body}");
            assert_eq!(plain, general(body.as_bytes()), "{body}");
        }
    }

    #[test]
    fn what_is_more_than_plain_is_left_to_the_general_reader() {
        for body in [
            r#"{"model":"a","messages":[{"role":"user","content":"x"}],"user":"u"}"#,
            r#"{"model":"a","messages":[{"role":"user","content":"x","name":"n"}]}"#,
            r#"{"model":"a","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}"#,
            r#"{"model":"a","messages":[{"role":"tool","content":"x"}]}"#,
            r#"{"model":" ","messages":[{"role":"user","content":"x"}]}"#,
            r#"{"model":"a","messages":[]}"#,
            r#"{"model":"a","messages":[{"role":"user","content":"x"}],"stream":null}"#,
            r#"{"model":"a","messages":[{"role":"user","content":"x"}],"max_tokens":0}"#,
            r#"{"model":"a","messages":[{"role":"user","content":"x"}]} x"#,
            r#"[1]"#,
        ] {
            assert_eq!(plain_request(body.as_bytes()), None, "{body}");
        }
    }

    /// A value for a field: right, wrong, or odd.
    fn values(choices: &'static [&'static str]) -> impl Strategy<Value = String> {
        proptest::sample::select(choices).prop_map(str::to_owned)
    }

    fn message() -> impl Strategy<Value = String> {
        let role = values(&[
            r#""user""#,
            r#""user""#,
            r#""assistant""#,
            r#""assistant""#,
            r#""system""#,
            r#""developer""#,
            r#""tool""#,
            r#""us\u0065r""#,
            r#""x""#,
            "5",
            "null",
        ]);
        let content = values(&[
            r#""hi""#,
            r#""hi""#,
            r#""""#,
            r#""""#,
            r#""a\nb\u00e9""#,
            "null",
            "5",
            r#"[{"type":"text","text":"t"}]"#,
            r#"{"x":1}"#,
        ]);
        let extra = values(&[
            "",
            "",
            "",
            r#","name":"n""#,
            r#","tool_calls":[]"#,
            r#","role":"user""#,
        ]);
        (role, content, extra, any::<bool>()).prop_map(|(role, content, extra, flip)| {
            if flip {
                format!(r#"{{"content":{content},"role":{role}{extra}}}"#)
            } else {
                format!(r#"{{"role":{role},"content":{content}{extra}}}"#)
            }
        })
    }

    fn field() -> impl Strategy<Value = String> {
        let number = values(&[
            "1",
            "0",
            "-1",
            "0.5",
            "1e2",
            "18446744073709551615",
            "null",
            r#""1""#,
            "true",
        ]);
        prop_oneof![
            values(&[
                r#""auto""#,
                r#""openai/gpt-x""#,
                r#""""#,
                r#"" ""#,
                "5",
                "null",
                r#""a\"b""#
            ])
            .prop_map(|m| format!(r#""model":{m}"#)),
            proptest::collection::vec(message(), 0..4)
                .prop_map(|m| format!(r#""messages":[{}]"#, m.join(","))),
            values(&["true", "false", "null", "1"]).prop_map(|s| format!(r#""stream":{s}"#)),
            (
                values(&[
                    "max_tokens",
                    "max_completion_tokens",
                    "temperature",
                    "top_p"
                ]),
                number
            )
                .prop_map(|(name, value)| format!(r#""{name}":{value}"#)),
            values(&[
                r#""n":1"#,
                r#""user":"u""#,
                r#""stop":"x""#,
                r#""models":[]"#
            ]),
        ]
    }

    /// Mostly plain fields: a model, messages, a few options — with now and
    /// then one the plain reader must leave alone.
    fn mostly_plain() -> impl Strategy<Value = Vec<String>> {
        let model = values(&[
            r#""model":"auto""#,
            r#""model":"openai/gpt-x""#,
            r#""model":"""#,
        ]);
        let text = (
            values(&[
                r#""user""#,
                r#""assistant""#,
                r#""system""#,
                r#""developer""#,
            ]),
            values(&[r#""hi""#, r#""""#, r#""a\nb\u00e9 \"q\"""#]),
        )
            .prop_map(|(role, content)| format!(r#"{{"role":{role},"content":{content}}}"#));
        let turn = prop_oneof![4 => text, 1 => message()];
        let messages = proptest::collection::vec(turn, 1..4)
            .prop_map(|m| format!(r#""messages":[{}]"#, m.join(",")));
        (model, messages, proptest::collection::vec(field(), 0..3)).prop_map(
            |(model, messages, mut fields)| {
                fields.extend([model, messages]);
                fields
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        #[test]
        fn a_body_read_here_reads_as_the_general_reader_reads_it(
            fields in prop_oneof![
                mostly_plain().prop_shuffle(),
                proptest::collection::vec(field(), 0..7),
            ],
        ) {
            let body = format!("{{{}}}", fields.join(","));
            if let Some(plain) = plain_request(body.as_bytes()) {
                prop_assert_eq!(Some(plain), general(body.as_bytes()), "{}", body);
            }
        }
    }
}
