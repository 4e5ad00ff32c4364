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
mod members;
mod one_pass;

use std::borrow::Cow;
use std::ops::Range;

use rustc_hash::FxHashSet;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use self::choice::{Choice, First};
use self::members::each_member;
use super::finish_named;
use crate::chat::openai::readers::Text;
use crate::chat::{FinishReason, TokenUsage};

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
        let mut named_later = FxHashSet::default();
        let mut last = vec![false; names.len()];
        for (index, name) in names.iter().enumerate().rev() {
            last[index] = named_later.insert(*name);
        }
        last
    }

    /// [`WholeReply::last_of_their_names`] as bits, bit `index` set for a
    /// member that is the last of its name; `None` past [`FEW_MEMBERS`].
    /// Found by comparing each name with those after it, nothing allocated.
    fn last_of_their_names_few(&self) -> Option<u32> {
        let count = self.members.len();
        if count > FEW_MEMBERS {
            return None;
        }
        let name = |index: usize| self.name(&self.members[index].0);
        let mut last = 0u32;
        for index in 0..count {
            if !(index + 1..count).any(|later| name(later) == name(index)) {
                last |= 1 << index;
            }
        }
        Some(last)
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
            _ => push_decimal(out, created),
        };
        let few = self.last_of_their_names_few();
        let many = if few.is_none() {
            self.last_of_their_names()
        } else {
            Vec::new()
        };
        let is_last = |index: usize| match few {
            Some(bits) => bits & (1 << index) != 0,
            None => many[index],
        };
        let mut written = [false; GATEWAY_MEMBERS.len()];
        for (index, (name, span)) in self.members.iter().enumerate() {
            if !is_last(index) {
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

/// Writes `number` in decimal, without the formatting machinery (which
/// was a tenth of relaying a small reply).
fn push_decimal(out: &mut String, mut number: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (number % 10) as u8;
        number /= 10;
        if number == 0 {
            break;
        }
    }
    for &digit in &digits[start..] {
        out.push(char::from(digit));
    }
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
mod tests;
