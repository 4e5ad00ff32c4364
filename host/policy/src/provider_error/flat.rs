//! A fast reader for the common line of `failover classify`'s input: one
//! flat error object (`provider`, `status`, `code`, `errorType`, `param`,
//! `message`, `headers`; no nested `error` or `cause`, no `details`, the
//! message a string).
//!
//! The general reader parses a line into a `serde_json::Value` tree and
//! then walks it, an allocation per key and value; on a file of errors
//! that is most of the reading thread's time. This one reads the fields
//! straight into their types, borrowing from the line. It answers only
//! when its answer is the one the general reader gives: anything else
//! (a nested error, a message given as an object, a status out of range,
//! a duplicate field, a type error, invalid JSON) is left to the general
//! reader, which also words the errors.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::{ProviderError, Structured};

/// The fields of a flat error line, as they were written.
#[derive(Default)]
struct Flat<'a> {
    provider: Option<Cow<'a, str>>,
    status: Option<u64>,
    code: Option<&'a RawValue>,
    error_type: Option<Cow<'a, str>>,
    param: Option<Cow<'a, str>>,
    message: Option<Cow<'a, str>>,
    details: Option<&'a RawValue>,
    /// A header given twice keeps its last value, as in the general reader.
    headers: Option<BTreeMap<String, HeaderValue>>,
    error: Option<&'a RawValue>,
    cause: Option<&'a RawValue>,
}

impl<'de> Deserialize<'de> for Flat<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FlatVisitor)
    }
}

/// Reads an object's fields: the known ones into their types, every other
/// one into a `serde_json::Value`, so that it is checked exactly as the
/// general reader checks it (skipping it unread would accept numbers and
/// escapes the general reader refuses). A field given twice is refused
/// here, and left to the general reader.
struct FlatVisitor;

impl<'de> Visitor<'de> for FlatVisitor {
    type Value = Flat<'de>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("an error object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Flat<'de>, A::Error> {
        let mut flat = Flat::default();
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom("a field given twice"));
            }
            match key.as_ref() {
                "provider" => flat.provider = map.next_value()?,
                "status" => flat.status = map.next_value()?,
                "code" => flat.code = map.next_value()?,
                "errorType" => flat.error_type = map.next_value()?,
                "param" => flat.param = map.next_value()?,
                "details" => flat.details = map.next_value()?,
                "message" => flat.message = map.next_value()?,
                "headers" => flat.headers = map.next_value()?,
                "error" => flat.error = map.next_value()?,
                "cause" => flat.cause = map.next_value()?,
                _ => {
                    map.next_value::<Checked>()?;
                }
            }
        }
        Ok(flat)
    }
}

/// Any JSON value, read and checked as `serde_json::Value` reads it (every
/// number parsed, every escape decoded) but kept nowhere.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_entry::<Checked, Checked>()?.is_some() {}
        Ok(Checked)
    }
}

/// A header's value as the general reader takes it: a string, or a number
/// as JSON writes it; anything else refuses the line.
struct HeaderValue(String);

impl<'de> Deserialize<'de> for HeaderValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::String(text) => Ok(HeaderValue(text)),
            serde_json::Value::Number(number) => Ok(HeaderValue(number.to_string())),
            _ => Err(de::Error::custom("a header is a string or a number")),
        }
    }
}

/// `text` read as a flat error, or `None` when the general reader must
/// decide (see the module docs).
pub(crate) fn read(text: &str) -> Option<ProviderError> {
    // A derived struct also reads a JSON array, field by field in order;
    // the general reader refuses anything but an object.
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let flat: Flat<'_> = serde_json::from_str(text).ok()?;
    // Details are kept as the general reader writes them back.
    let details_given = flat.details.is_some_and(|raw| raw.get().trim() != "null");
    if flat.error.is_some() || flat.cause.is_some() || details_given {
        return None;
    }
    let status = match flat.status {
        None => None,
        Some(status @ 100..=599) => Some(u16::try_from(status).ok()?),
        Some(_) => return None,
    };
    let code = match flat.code {
        None => None,
        Some(raw) => match serde_json::from_str::<serde_json::Value>(raw.get()).ok()? {
            serde_json::Value::String(code) if code.trim().is_empty() => None,
            serde_json::Value::String(code) => Some(code),
            serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
            _ => return None,
        },
    };
    let headers: Box<[(String, String)]> = flat
        .headers
        .map(|headers| headers.into_iter().map(|(name, v)| (name, v.0)).collect())
        .unwrap_or_default();
    Some(ProviderError {
        provider: flat
            .provider
            .filter(|p| !p.trim().is_empty())
            .map(Cow::into_owned),
        status,
        code,
        structured: Structured {
            error_type: said(flat.error_type),
            param: said(flat.param),
            details: None,
        }
        .boxed(),
        message: flat.message.map(Cow::into_owned).unwrap_or_default(),
        headers,
        error: None,
        cause: None,
    })
}

/// A text that says something, owned.
fn said(value: Option<Cow<'_, str>>) -> Option<String> {
    value.filter(|t| !t.trim().is_empty()).map(Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of the case corpora, and variants of them: where the fast
    /// reader answers, it answers as the general one.
    #[test]
    fn it_answers_as_the_general_reader_or_not_at_all() {
        let corpora = [
            include_str!("../../../../tests/cases/classify.jsonl"),
            include_str!("../../../../tests/cases/classify-real.jsonl"),
            include_str!("../../../../tests/cases/classify-reference.jsonl"),
        ];
        let mut inputs: Vec<String> = corpora
            .iter()
            .flat_map(|c| c.lines())
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .flat_map(|value| variants(&value.get("input").unwrap_or(&value).to_string()))
            .collect();
        let from_corpus = inputs.len();
        for status in ["99", "600", "-429", "429.0", "1e2", "-0"] {
            inputs.push(format!("{{\"status\": {status}, \"message\": \"m\"}}"));
        }
        inputs.extend(
            [
                "{\"message\": \"m\"} trailing",
                " \t{\"message\": \"m\"}",
                "[1]",
                "[]",
                r#"["openai", 429, null, "Too many requests"]"#,
                r#"{"message": "\u00e9\ud83d\ude00", "provider": "\u0020"}"#,
                r#"{"headers": {"a": 1, "a": "2"}}"#,
                r#"{"code": 18446744073709551615}"#,
                r#"{"code": -9223372036854775808}"#,
                // Found by the fuzzer: an unknown field the general reader
                // refuses (a number beyond f64, a lone surrogate).
                r#"{"-status": 405e030000000001}"#,
                r#"{"x": "\ud800", "message": "m"}"#,
                r#"{"x": [1, {"y": 1e999}]}"#,
                r#"{"headers": {"a": 1e999, "a": "2"}}"#,
                r#"{"headers": {"a": "\udc00"}}"#,
                "null",
                "",
            ]
            .map(String::from),
        );
        let mut answered = 0;
        for input in &inputs {
            // The general reader alone (`from_json_str` tries this one first).
            let general = serde_json::from_str::<serde_json::Value>(input)
                .ok()
                .map(|value| ProviderError::from_json(&value));
            if let Some(fast) = read(input) {
                answered += 1;
                assert_eq!(Some(Ok(fast)), general, "{input}");
            }
        }
        assert!(
            answered > from_corpus / 4,
            "{answered} of {from_corpus} lines"
        );
    }

    /// The line, and the line with each of a few edits that the two
    /// readers must judge alike.
    fn variants(line: &str) -> Vec<String> {
        let mut out = vec![line.to_owned()];
        for (from, to) in [
            ("\"status\":", "\"status\": 1e2, \"x\":"),
            ("\"status\":", "\"status\":null,\"status\":"),
            ("\"message\":", "\"message\":null,\"y\":"),
            ("\"headers\":{", "\"headers\":{\"retry-after\":2.5,"),
            ("\"headers\":{", "\"headers\":{\"a\":true,"),
            ("\"provider\":", "\"code\":\" \",\"provider\":"),
            ("\"provider\":", "\"code\":429,\"provider\":"),
            ("\"provider\":", "\"code\":-1.5,\"provider\":"),
            ("\"provider\":", "\"cause\":null,\"provider\":"),
            ("\"provider\":", "\"error\":\"inner\",\"provider\":"),
        ] {
            if line.contains(from) {
                out.push(line.replacen(from, to, 1));
            }
        }
        out
    }

    #[test]
    fn a_flat_line_is_read_whole() {
        let error = read(
            r#"{"provider":"openai","status":429,"code":42,"message":"slow",
                "headers":{"retry-after":"2","x-n":7},"extra":[1]}"#,
        )
        .unwrap();
        assert_eq!(error.provider.as_deref(), Some("openai"));
        assert_eq!(error.status, Some(429));
        assert_eq!(error.code.as_deref(), Some("42"));
        assert_eq!(error.message, "slow");
        assert_eq!(
            &error.headers[..],
            [
                ("retry-after".into(), "2".into()),
                ("x-n".into(), "7".into())
            ]
        );
        assert!(read(r#"{"message":{"error":"x"}}"#).is_none());
        assert!(read(r#"["openai",429,null,"Too many requests"]"#).is_none());
        assert!(read(r#"{"cause":{"message":"x"}}"#).is_none());
    }
}
