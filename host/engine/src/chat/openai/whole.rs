//! An OpenAI-shaped upstream's whole (non-streaming) reply: read for what
//! the gateway needs of it, and relayed to OpenAI clients as it came.
//!
//! The reply is split into its top-level members without building a tree
//! of it: each member's value stays where it is in the text. Only the
//! parts the gateway reads (the first choice, `usage`, `id`) are parsed
//! further. An OpenAI client then gets the upstream's text member by member
//! — every choice of `n`, `logprobs`, `system_fingerprint`, usage details,
//! fields the gateway has never heard of, numbers exactly as written, in
//! the upstream's order — with only `id`, `model` and `object` replaced.
//! Building a `serde_json::Value` of it and writing it out again was a
//! seventh of the gateway's own work per request (BENCHMARKS.md, issue 16).

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use rustc_hash::FxHashSet;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// An upstream's reply text and where its top-level members lie in it.
#[derive(Debug, Clone, PartialEq)]
pub struct WholeReply {
    text: String,
    /// Each member's name and the span of its value in `text`, in the
    /// upstream's order (a repeated name appears each time).
    members: Vec<(String, Range<usize>)>,
}

/// The top-level members of a JSON object: names, and values borrowed
/// from its text.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(entry) = map.next_entry::<Cow<'de, str>, &'de RawValue>()? {
                    members.push(entry);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// What the gateway reads of a reply's first choice. A member that is
/// present is kept whatever its value, `null` included.
#[derive(Deserialize)]
struct FirstChoice {
    #[serde(default, deserialize_with = "present")]
    message: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    finish_reason: Option<Value>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// The first element of a JSON array, the others skipped unread; `None`
/// for an empty array.
struct First<T>(Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for First<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FirstVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for FirstVisitor<T> {
            type Value = First<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(First(first))
            }
        }
        deserializer.deserialize_seq(FirstVisitor(std::marker::PhantomData))
    }
}

/// A reply read: what the gateway needs of it, and the reply itself.
pub(super) struct Read {
    pub id: String,
    /// The first choice's `message`, when it is an object.
    pub message: Map<String, Value>,
    pub finish_reason: Option<Value>,
    pub usage: Option<Value>,
    pub reply: WholeReply,
}

/// Why a reply was not read.
pub(super) enum Unread {
    /// It is not an object with a first choice that has a message.
    NotACompletion,
    /// It carries a non-null `error` member.
    InBandError,
}

/// Reads `text` as a chat completion.
pub(super) fn read(text: &str) -> Result<Read, Unread> {
    let Members(members) = serde_json::from_str(text).map_err(|_| Unread::NotACompletion)?;
    // A repeated name means its last value, as in a parsed object.
    let member = |name: &str| {
        members
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.get())
    };
    if member("error").is_some_and(|error| error.trim() != "null") {
        return Err(Unread::InBandError);
    }
    let first = member("choices")
        .and_then(|choices| serde_json::from_str::<First<FirstChoice>>(choices).ok())
        .and_then(|First(first)| first)
        .ok_or(Unread::NotACompletion)?;
    let message = match first.message.ok_or(Unread::NotACompletion)? {
        Value::Object(message) => message,
        _ => Map::new(),
    };
    let id = member("id")
        .and_then(|id| serde_json::from_str::<Cow<str>>(id).ok())
        .unwrap_or_default()
        .into_owned();
    let usage = member("usage").and_then(|usage| serde_json::from_str(usage).ok());
    let reply = WholeReply {
        text: text.to_owned(),
        members: members
            .iter()
            .map(|(key, value)| (key.as_ref().to_owned(), span_in(text, value.get())))
            .collect(),
    };
    Ok(Read {
        id,
        message,
        finish_reason: first.finish_reason,
        usage,
        reply,
    })
}

/// Where `part`, a slice of `whole`, lies in it.
fn span_in(whole: &str, part: &str) -> Range<usize> {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    start..start + part.len()
}

/// The members the gateway writes itself, in the order it adds those the
/// upstream left out.
const GATEWAY_MEMBERS: [&str; 4] = ["id", "model", "object", "created"];

/// The `object` of a whole chat completion, as JSON.
const COMPLETION_OBJECT: &str = "\"chat.completion\"";

impl WholeReply {
    /// The reply as an OpenAI client gets it: the upstream's members in
    /// its order, with `id`, `model` and `object` the gateway's, and
    /// `created` the upstream's when it sent one, else `created`.
    pub fn render(&self, id: &str, model: &str, created: u64) -> String {
        let mut out = String::with_capacity(self.text.len() + id.len() + model.len() + 64);
        out.push('{');
        // The gateway's value of `GATEWAY_MEMBERS[slot]`.
        let push_ours = |out: &mut String, slot: usize| match slot {
            0 => push_json_string(out, id),
            1 => push_json_string(out, model),
            2 => out.push_str(COMPLETION_OBJECT),
            _ => out.push_str(&created.to_string()),
        };
        // A repeated name is written once, with its last value. Found in one
        // pass: an upstream's reply may hold any number of members.
        let mut named_later = FxHashSet::default();
        let mut last = vec![false; self.members.len()];
        for (index, (name, _)) in self.members.iter().enumerate().rev() {
            last[index] = named_later.insert(name.as_str());
        }
        let mut written = [false; GATEWAY_MEMBERS.len()];
        for (index, (name, span)) in self.members.iter().enumerate() {
            if !last[index] {
                continue;
            }
            open_member(&mut out, name);
            let slot = GATEWAY_MEMBERS.iter().position(|ours| ours == name);
            match slot {
                // The upstream's own `created` stays.
                Some(slot) if GATEWAY_MEMBERS[slot] != "created" => push_ours(&mut out, slot),
                _ => out.push_str(&self.text[span.clone()]),
            }
            if let Some(slot) = slot {
                written[slot] = true;
            }
        }
        for (slot, name) in GATEWAY_MEMBERS.iter().enumerate() {
            if !written[slot] {
                open_member(&mut out, name);
                push_ours(&mut out, slot);
            }
        }
        out.push('}');
        out
    }
}

/// Writes the separator (when a member came before) and `name:`.
fn open_member(out: &mut String, name: &str) {
    if out.len() > 1 {
        out.push(',');
    }
    push_json_string(out, name);
    out.push(':');
}

/// Writes `text` as a JSON string.
fn push_json_string(out: &mut String, text: &str) {
    if text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        out.push_str(&Value::from(text).to_string());
    } else {
        out.push('"');
        out.push_str(text);
        out.push('"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(text: &str) -> String {
        match read(text) {
            Ok(read) => read.reply.render("gw-1", "openai/m", 7),
            Err(_) => panic!("not read: {text}"),
        }
    }

    #[test]
    fn a_reply_goes_back_member_by_member_with_only_the_gateways_fields_replaced() {
        let text = r#"{"id":"up-9","object":"chat.completion","created":1700000000,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"logprobs":{"content":[{"token":"hi","logprob":-1.2e-5}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1},"system_fingerprint":"fp_1","service_tier":"default","score":0.12345678901234567890123}"#;
        let out = rendered(text);
        // Numbers exactly as the upstream wrote them, members in its order.
        assert_eq!(
            out,
            text.replace("up-9", "gw-1")
                .replace("\"gpt-x\"", "\"openai/m\"")
        );
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["created"], 1_700_000_000);
    }

    #[test]
    fn missing_fields_are_added_and_a_repeated_member_keeps_its_last_value() {
        let out = rendered(r#"{"choices":[{"message":{"content":"x"}}],"n":1,"n":2}"#);
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["n"], 2);
        assert_eq!(out.matches("\"n\"").count(), 1, "{out}");
        assert_eq!(
            (
                &value["id"],
                &value["model"],
                &value["object"],
                &value["created"]
            ),
            (
                &Value::from("gw-1"),
                &Value::from("openai/m"),
                &Value::from("chat.completion"),
                &Value::from(7)
            )
        );
    }

    #[test]
    fn a_reply_of_many_members_is_relayed_in_one_pass() {
        let mut text = String::from(r#"{"choices":[{"message":{"content":"x"}}]"#);
        for index in 0..50_000 {
            text.push_str(&format!(r#","m{}":{index}"#, index % 1000));
        }
        text.push('}');
        let value: Value = serde_json::from_str(&rendered(&text)).unwrap();
        assert_eq!(value.as_object().unwrap().len(), 1000 + 5);
        assert_eq!(value["m7"], 49_007);
    }

    #[test]
    fn names_and_ids_with_escapes_stay_valid_json() {
        let text = r#"{"id":"a\"b","we\"ird":"\u00e9\n","choices":[{"message":{"content":"x"}}]}"#;
        let read = read(text).ok().unwrap();
        assert_eq!(read.id, "a\"b");
        let out = read.reply.render("id \"quoted\"", "m\\n", 1);
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["we\"ird"], "é\n");
        assert_eq!(
            (value["id"].as_str(), value["model"].as_str()),
            (Some("id \"quoted\""), Some("m\\n"))
        );
    }

    #[test]
    fn what_is_not_a_completion_or_is_an_in_band_error_is_not_read() {
        for text in [
            "<html>oops</html>",
            "[1,2]",
            r#"{"choices":[]}"#,
            r#"{"choices":{"0":{"message":{}}}}"#,
            r#"{"choices":[{"finish_reason":"stop"}]}"#,
            r#"{"choices":[{"message":{}}]"#,
        ] {
            assert!(matches!(read(text), Err(Unread::NotACompletion)), "{text}");
        }
        let error = r#"{"error":{"message":"overloaded"},"choices":[{"message":{}}]}"#;
        assert!(matches!(read(error), Err(Unread::InBandError)));
        // A null error is no error (however spaced); a null message is an
        // empty one.
        let read = read(r#"{ "error" : null , "choices" : [ { "message" : null } ] }"#)
            .ok()
            .unwrap();
        assert!(read.message.is_empty());
    }
}
