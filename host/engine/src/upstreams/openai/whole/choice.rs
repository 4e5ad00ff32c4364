//! What the gateway reads of a reply's `choices` and `usage`, read in one
//! pass each straight from their text: no tree, no raw copy of a nested
//! value to read again, nothing allocated for what is skipped. Each
//! reader takes any JSON value: one of another shape reads as absent, as
//! `Value::get` and `Value::as_*` would have it, and a repeated name
//! means its last value.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::model::TokenUsage;
use crate::wire::json::readers::{other_values_are, Count, Key, Text};

/// A choice's message: its string `content`, and its other members but
/// `role`, null ones left out. What is not an object is an empty message.
#[derive(Default)]
pub(super) struct Message {
    pub content: Option<String>,
    pub extra: Map<String, Value>,
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MessageVisitor;
        impl<'de> Visitor<'de> for MessageVisitor {
            type Value = Message;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
                let mut message = Message::default();
                while let Some(Key(name)) = map.next_key::<Key>()? {
                    match &*name {
                        "role" => drop(map.next_value::<IgnoredAny>()?),
                        "content" => {
                            let Text(text) = map.next_value()?;
                            message.content = text.map(Cow::into_owned);
                        }
                        _ => match map.next_value::<Value>()? {
                            Value::Null => drop(message.extra.remove(&*name)),
                            value => drop(message.extra.insert(name.into_owned(), value)),
                        },
                    }
                }
                Ok(message)
            }
            other_values_are!(Message::default(), [bool, i64, u64, f64, str, unit, seq]);
        }
        deserializer.deserialize_any(MessageVisitor)
    }
}

/// What the gateway reads of a reply's first choice: its message (present
/// whatever its value) and its string `finish_reason`.
pub(super) struct Choice<'a> {
    pub message: Option<Message>,
    pub finish_reason: Option<Cow<'a, str>>,
}

impl<'de> Deserialize<'de> for Choice<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ChoiceVisitor;
        impl<'de> Visitor<'de> for ChoiceVisitor {
            type Value = Choice<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Choice<'de>, A::Error> {
                let mut choice = Choice {
                    message: None,
                    finish_reason: None,
                };
                while let Some(Key(name)) = map.next_key::<Key>()? {
                    match &*name {
                        "message" => choice.message = Some(map.next_value()?),
                        "finish_reason" => choice.finish_reason = map.next_value::<Text>()?.0,
                        _ => drop(map.next_value::<IgnoredAny>()?),
                    }
                }
                Ok(choice)
            }
        }
        deserializer.deserialize_map(ChoiceVisitor)
    }
}

/// The first element of a JSON array, the others skipped unread; `None`
/// for an empty array.
pub(super) struct First<T>(pub Option<T>);

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

/// The counts of a `*_tokens_details` object the gateway reads; none for
/// what is not an object.
#[derive(Default)]
struct Details {
    cached_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
}

impl<'de> Deserialize<'de> for Details {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DetailsVisitor;
        impl<'de> Visitor<'de> for DetailsVisitor {
            type Value = Details;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Details, A::Error> {
                let mut details = Details::default();
                while let Some(Key(name)) = map.next_key::<Key>()? {
                    match &*name {
                        "cached_tokens" => details.cached_tokens = map.next_value::<Count>()?.0,
                        "reasoning_tokens" => {
                            details.reasoning_tokens = map.next_value::<Count>()?.0
                        }
                        _ => drop(map.next_value::<IgnoredAny>()?),
                    }
                }
                Ok(details)
            }
            other_values_are!(Details::default(), [bool, i64, u64, f64, str, unit, seq]);
        }
        deserializer.deserialize_any(DetailsVisitor)
    }
}

/// Token counts from a `usage` value: both counts must be there.
pub(super) struct Usage(pub Option<TokenUsage>);

impl<'de> Deserialize<'de> for Usage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct UsageVisitor;
        impl<'de> Visitor<'de> for UsageVisitor {
            type Value = Usage;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Usage, A::Error> {
                let (mut prompt, mut completion) = (None, None);
                let (mut prompt_details, mut completion_details) = (None, None);
                while let Some(Key(name)) = map.next_key::<Key>()? {
                    match &*name {
                        "prompt_tokens" => prompt = map.next_value::<Count>()?.0,
                        "completion_tokens" => completion = map.next_value::<Count>()?.0,
                        "prompt_tokens_details" => prompt_details = Some(map.next_value()?),
                        "completion_tokens_details" => completion_details = Some(map.next_value()?),
                        _ => drop(map.next_value::<IgnoredAny>()?),
                    }
                }
                let usage = prompt
                    .zip(completion)
                    .map(|(prompt, completion)| TokenUsage {
                        prompt_tokens: prompt,
                        completion_tokens: completion,
                        cached_tokens: prompt_details.and_then(|d: Details| d.cached_tokens),
                        reasoning_tokens: completion_details
                            .and_then(|d: Details| d.reasoning_tokens),
                    });
                Ok(Usage(usage))
            }
            other_values_are!(Usage(None), [bool, i64, u64, f64, str, unit, seq]);
        }
        deserializer.deserialize_any(UsageVisitor)
    }
}
