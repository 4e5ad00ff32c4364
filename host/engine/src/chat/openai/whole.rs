//! An OpenAI-shaped upstream's whole (non-streaming) reply: read for what
//! the gateway needs of it, and relayed to OpenAI clients as it came.
//!
//! The reply is split into its top-level members without building a tree
//! of it: each member's value stays where it is in the text. Only the
//! parts the gateway reads (the first choice, `usage`, `id`) are read
//! further, the same way, member by member. An OpenAI client then gets the
//! upstream's text member by member — every choice of `n`, `logprobs`,
//! `system_fingerprint`, usage details, fields the gateway has never heard
//! of, numbers exactly as written, in the upstream's order — with only
//! `id`, `model` and `object` replaced. Building a `serde_json::Value` of
//! it and writing it out again was a seventh of the gateway's own work per
//! request; names and values copied out of the text, and the small trees
//! of `message` and `usage`, were most of what remained (BENCHMARKS.md,
//! issue 16).

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::ops::Range;

use rustc_hash::FxHashSet;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::super::{FinishReason, TokenUsage};
use super::reply::finish_named;

/// An upstream's reply text and where its top-level members lie in it.
#[derive(Debug, Clone, PartialEq)]
pub struct WholeReply {
    text: String,
    /// Each member's name and the span of its value in `text`, in the
    /// upstream's order (a repeated name appears each time).
    members: Vec<(Name, Range<usize>)>,
}

/// A member's name: where it lies in the reply's text, or, when it was
/// written with escapes, the name they stand for.
#[derive(Debug, Clone, PartialEq)]
enum Name {
    Span(Range<usize>),
    Unescaped(String),
}

impl Name {
    fn of(whole: &str, name: Cow<'_, str>) -> Name {
        match name {
            Cow::Borrowed(name) => Name::Span(span_in(whole, name)),
            Cow::Owned(name) => Name::Unescaped(name),
        }
    }
}

/// An object member's name, borrowed from the text unless it was written
/// with escapes. (`Cow<str>` itself always deserializes owned.)
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(text.to_owned())))
            }
            fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Hands each member of a JSON object, in order, to a closure: its name
/// and its value, both borrowed from the text where they can be.
struct EachMember<F>(F);

impl<'de, F: FnMut(Cow<'de, str>, &'de RawValue)> Visitor<'de> for EachMember<F> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        while let Some((Key(name), value)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
            (self.0)(name, value);
        }
        Ok(())
    }
}

impl<'de, F: FnMut(Cow<'de, str>, &'de RawValue)> DeserializeSeed<'de> for EachMember<F> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

/// Calls `each` on every member of the JSON object `text`; an error when
/// `text` is not one.
fn each_member<'a>(
    text: &'a str,
    each: impl FnMut(Cow<'a, str>, &'a RawValue),
) -> serde_json::Result<()> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    EachMember(each).deserialize(&mut deserializer)?;
    deserializer.end()
}

/// The first element of a JSON array as raw text, the others skipped
/// unread; `None` for an empty array.
struct First<'a>(Option<&'a RawValue>);

impl<'de> Deserialize<'de> for First<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FirstVisitor;
        impl<'de> Visitor<'de> for FirstVisitor {
            type Value = First<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(First(first))
            }
        }
        deserializer.deserialize_seq(FirstVisitor)
    }
}

/// A reply read: what the gateway needs of it, and the reply itself.
pub(super) struct Read {
    pub id: String,
    /// The first choice's message `content`, when it is a string.
    pub content: Option<String>,
    /// The first choice's message members besides `role` and `content`,
    /// null ones left out.
    pub message_extra: Map<String, Value>,
    /// The first choice's `finish_reason`, when it is a string.
    pub finish: Option<FinishReason>,
    pub usage: Option<TokenUsage>,
    pub reply: WholeReply,
}

/// Why a reply was not read.
pub(super) enum Unread {
    /// It is not an object with a first choice that has a message.
    NotACompletion,
    /// It carries a non-null `error` member.
    InBandError,
}

/// Members a reply usually has (`id`, `object`, `created`, `model`,
/// `choices`, `usage`, `system_fingerprint`, `service_tier`): room made
/// for them at once.
const USUAL_MEMBERS: usize = 8;

/// Reads `text` as a chat completion; when it is not one, why, and the
/// text back.
pub(super) fn read(text: String) -> Result<Read, (Unread, String)> {
    match read_parts(&text) {
        Ok(parts) => Ok(Read {
            id: parts.id,
            content: parts.content,
            message_extra: parts.message_extra,
            finish: parts.finish,
            usage: parts.usage,
            reply: WholeReply {
                text,
                members: parts.members,
            },
        }),
        Err(unread) => Err((unread, text)),
    }
}

/// What [`read`] reads, before the text moves into the reply.
struct Parts {
    id: String,
    content: Option<String>,
    message_extra: Map<String, Value>,
    finish: Option<FinishReason>,
    usage: Option<TokenUsage>,
    members: Vec<(Name, Range<usize>)>,
}

fn read_parts(text: &str) -> Result<Parts, Unread> {
    let mut members = Vec::with_capacity(USUAL_MEMBERS);
    // A repeated name means its last value, as in a parsed object.
    let (mut error, mut choices, mut id, mut usage) = (None, None, None, None);
    each_member(text, |name, value| {
        match &*name {
            "error" => error = Some(value),
            "choices" => choices = Some(value),
            "id" => id = Some(value),
            "usage" => usage = Some(value),
            _ => {}
        }
        members.push((Name::of(text, name), span_in(text, value.get())));
    })
    .map_err(|_| Unread::NotACompletion)?;
    if error.is_some_and(|error: &RawValue| error.get().trim() != "null") {
        return Err(Unread::InBandError);
    }
    let first = choices
        .and_then(|choices| serde_json::from_str::<First>(choices.get()).ok())
        .and_then(|First(first)| first)
        .ok_or(Unread::NotACompletion)?;
    let (mut message, mut finish) = (None, None);
    each_member(first.get(), |name, value| match &*name {
        "message" => message = Some(value),
        "finish_reason" => finish = Some(value),
        _ => {}
    })
    .map_err(|_| Unread::NotACompletion)?;
    // Present whatever its value: `null` is an empty message.
    let (content, message_extra) = message_of(message.ok_or(Unread::NotACompletion)?);
    Ok(Parts {
        id: id.and_then(string_of).unwrap_or_default().into_owned(),
        content,
        message_extra,
        finish: finish.and_then(string_of).map(|name| finish_named(&name)),
        usage: usage.and_then(usage_of),
        members,
    })
}

/// A JSON string's value, borrowed unless it was written with escapes;
/// `None` for any other value.
fn string_of(value: &RawValue) -> Option<Cow<'_, str>> {
    serde_json::from_str::<Key>(value.get())
        .ok()
        .map(|Key(text)| text)
}

/// A message's string `content`, and its other members but `role`, null
/// ones left out. What is not an object is an empty message.
fn message_of(message: &RawValue) -> (Option<String>, Map<String, Value>) {
    let (mut content, mut extra) = (None, Map::new());
    let _not_an_object = each_member(message.get(), |name, value| match &*name {
        "role" => {}
        "content" => content = Some(value),
        _ if value.get() == "null" => {
            extra.remove(&*name);
        }
        _ => {
            // The text was read as JSON already: its values parse.
            if let Ok(value) = serde_json::from_str(value.get()) {
                extra.insert(name.into_owned(), value);
            }
        }
    });
    let content = content.and_then(|content| serde_json::from_str(content.get()).ok());
    (content, extra)
}

/// Token counts from a `usage` object: both counts must be there.
fn usage_of(usage: &RawValue) -> Option<TokenUsage> {
    let (mut prompt, mut completion, mut cached, mut reasoning) = (None, None, None, None);
    each_member(usage.get(), |name, value| match &*name {
        "prompt_tokens" => prompt = count_of(value),
        "completion_tokens" => completion = count_of(value),
        "prompt_tokens_details" => cached = detail_of(value, "cached_tokens"),
        "completion_tokens_details" => reasoning = detail_of(value, "reasoning_tokens"),
        _ => {}
    })
    .ok()?;
    Some(TokenUsage {
        prompt_tokens: prompt?,
        completion_tokens: completion?,
        cached_tokens: cached,
        reasoning_tokens: reasoning,
    })
}

/// A count: a non-negative integer that fits in 64 bits. (A JSON number
/// with a fraction or an exponent is none, as `Value::as_u64` has it.)
fn count_of(value: &RawValue) -> Option<u64> {
    value.get().parse().ok()
}

/// The count `name` of a details object.
fn detail_of(details: &RawValue, name: &str) -> Option<u64> {
    let mut found = None;
    each_member(details.get(), |member, value| {
        if member == name {
            found = count_of(value);
        }
    })
    .ok()?;
    found
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

/// Up to this many members, repeated names are found by comparing each
/// with those after it; beyond, with a hash set (a reply may hold any
/// number of members).
const FEW_MEMBERS: usize = 16;

impl WholeReply {
    fn name<'a>(&'a self, name: &'a Name) -> &'a str {
        match name {
            Name::Span(span) => &self.text[span.clone()],
            Name::Unescaped(name) => name,
        }
    }

    /// For each member, whether no member after it has its name: a
    /// repeated name is written once, with its last value.
    fn last_of_their_names(&self) -> Vec<bool> {
        let names: Vec<&str> = self
            .members
            .iter()
            .map(|(name, _)| self.name(name))
            .collect();
        if names.len() <= FEW_MEMBERS {
            return (0..names.len())
                .map(|index| !names[index + 1..].contains(&names[index]))
                .collect();
        }
        let mut named_later = FxHashSet::default();
        let mut last = vec![false; names.len()];
        for (index, name) in names.iter().enumerate().rev() {
            last[index] = named_later.insert(*name);
        }
        last
    }

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
            _ => {
                let _infallible = write!(out, "{created}");
            }
        };
        let last = self.last_of_their_names();
        let mut written = [false; GATEWAY_MEMBERS.len()];
        for (index, (name, span)) in self.members.iter().enumerate() {
            if !last[index] {
                continue;
            }
            let name_text = self.name(name);
            open_member(&mut out, name_text, matches!(name, Name::Span(_)));
            let slot = GATEWAY_MEMBERS.iter().position(|ours| *ours == name_text);
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
                open_member(&mut out, name, true);
                push_ours(&mut out, slot);
            }
        }
        out.push('}');
        out
    }
}

/// Writes the separator (when a member came before) and `name:`; a name
/// `plain` (one that needs no escapes) as it is.
fn open_member(out: &mut String, name: &str, plain: bool) {
    if out.len() > 1 {
        out.push(',');
    }
    if plain {
        out.push('"');
        out.push_str(name);
        out.push('"');
    } else {
        push_json_string(out, name);
    }
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
        match read(text.to_owned()) {
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
        let read = read(text.to_owned()).ok().unwrap();
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
            assert!(
                matches!(read(text.to_owned()), Err((Unread::NotACompletion, _))),
                "{text}"
            );
        }
        let error = r#"{"error":{"message":"overloaded"},"choices":[{"message":{}}]}"#;
        assert!(matches!(
            read(error.to_owned()),
            Err((Unread::InBandError, _))
        ));
        // A null error is no error (however spaced); a null message is an
        // empty one.
        let read = read(r#"{ "error" : null , "choices" : [ { "message" : null } ] }"#.to_owned())
            .ok()
            .unwrap();
        assert!(read.message_extra.is_empty() && read.content.is_none());
    }

    /// The reply read member by member says what a parsed tree of it says.
    #[test]
    fn the_first_choice_and_usage_read_as_from_a_parsed_tree() {
        for text in [
            r#"{"choices":[{"message":{"role":"assistant","content":"hi","refusal":null,"tool_calls":[{"id":"t"}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[{"message":{"content":["part"],"x":1,"x":null,"y":null,"y":2}}],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#,
            r#"{"choices":[{"message":{"content":"a","content":"b\u00e9"},"finish_reason":null}],"usage":{"prompt_tokens":1}}"#,
            r#"{"choices":[{"message":{"c\u006fntent":"esc"},"finish_reason":"odd"}],"usage":{"prompt_tokens":1.5,"completion_tokens":2}}"#,
            r#"{"choices":[{"message":5}],"usage":{"prompt_tokens":18446744073709551615,"completion_tokens":0,"prompt_tokens_details":{"cached_tokens":7},"completion_tokens_details":null}}"#,
            r#"{"choices":[{"message":{}}],"usage":{"prompt_tokens":3,"completion_tokens":4,"prompt_tokens_details":[1],"completion_tokens_details":{"reasoning_tokens":2,"reasoning_tokens":9}}}"#,
            r#"{"choices":[{"message":{}}],"usage":[1,2]}"#,
            r#"{"choices":[{"message":{}}],"usage":{"prompt_tokens":18446744073709551616,"completion_tokens":1}}"#,
        ] {
            let tree: Value = serde_json::from_str(text).unwrap();
            let read = read(text.to_owned()).ok().unwrap();
            let message = &tree["choices"][0]["message"];
            assert_eq!(
                read.content.as_deref(),
                message["content"].as_str(),
                "{text}"
            );
            let mut extra = message.as_object().cloned().unwrap_or_default();
            extra.remove("role");
            extra.remove("content");
            extra.retain(|_, value| !value.is_null());
            assert_eq!(read.message_extra, extra, "{text}");
            let finish = tree["choices"][0]["finish_reason"].as_str();
            assert_eq!(read.finish, finish.map(finish_named), "{text}");
            assert_eq!(
                read.usage,
                super::super::reply::usage(tree.get("usage")),
                "{text}"
            );
        }
    }
}
