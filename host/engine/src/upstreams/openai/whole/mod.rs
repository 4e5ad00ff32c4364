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
//! it and writing it out again would be a seventh of the gateway's own work
//! per request; names and values copied out of the text, and the small
//! trees of `message` and `usage`, most of the rest (docs/performance.md).

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod agreement;
mod choice;

mod one_pass;

use std::borrow::Cow;
use std::ops::Range;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use self::choice::{Choice, First};
use super::fields::finish_named;
use crate::model::{Completion, FinishReason, TokenUsage};
use crate::wire::json::members::each_member;
use crate::wire::json::readers::Text;
use crate::wire::json::whole_reply::{span_in, Name, WholeReply};

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

impl Read {
    /// The completion this reply makes: no content is empty text, no
    /// finish reason a stop, and the reply kept whole for the relay.
    pub(super) fn into_completion(self) -> Completion {
        Completion {
            id: self.id,
            text: self.content.unwrap_or_default(),
            finish: self.finish.unwrap_or(FinishReason::Stop),
            usage: self.usage,
            message_extra: self.message_extra,
            raw: Some(self.reply),
        }
    }
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
        Ok(mut read) => {
            read.reply.text = text;
            Ok(read)
        }
        Err(unread) => Err((unread, text)),
    }
}

/// Each member's name and the span of its value, in the reply's order.
type Members = Vec<(Name, Range<usize>)>;

/// What the gateway reads of a reply's members, each from the last
/// member of its name.
#[derive(Default)]
struct Found<'a> {
    /// The `error` member is there and not `null`.
    error: bool,
    /// The first choice, when `choices` is an array of which it reads.
    choice: Option<Choice<'a>>,
    /// The `id`, when it is a string.
    id: Option<Cow<'a, str>>,
    usage: Option<TokenUsage>,
}

/// What [`read`] reads, the reply's text left empty: it moves in after
/// the borrows of it end. The usual reply is read in one pass; the rest
/// (names with escapes, members of other shapes, what is not JSON) the
/// way that splits the reply into members first.
fn read_parts(text: &str) -> Result<Read, Unread> {
    let (members, found) = match one_pass::read(text) {
        Some(read) => read,
        None => two_passes(text)?,
    };
    if found.error {
        return Err(Unread::InBandError);
    }
    let choice = found.choice.ok_or(Unread::NotACompletion)?;
    // Present whatever its value: `null` is an empty message.
    let message = choice.message.ok_or(Unread::NotACompletion)?;
    Ok(Read {
        id: found.id.unwrap_or_default().into_owned(),
        content: message.content,
        message_extra: message.extra,
        finish: choice.finish_reason.map(|name| finish_named(&name)),
        usage: found.usage,
        reply: WholeReply {
            text: String::new(),
            members,
        },
    })
}

/// The reply split into its members, then the gateway's members read
/// from their raw values.
fn two_passes(text: &str) -> Result<(Members, Found<'_>), Unread> {
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
    let found = Found {
        error: error.is_some_and(|error: &RawValue| error.get().trim() != "null"),
        choice: choices
            .and_then(|choices| serde_json::from_str::<First<Choice>>(choices.get()).ok())
            .and_then(|First(first)| first),
        id: id
            .and_then(|id| serde_json::from_str::<Text>(id.get()).ok())
            .and_then(|Text(id)| id),
        usage: usage
            .and_then(|usage| serde_json::from_str::<choice::Usage>(usage.get()).ok())
            .and_then(|choice::Usage(usage)| usage),
    };
    Ok((members, found))
}

#[cfg(test)]
mod tests;
