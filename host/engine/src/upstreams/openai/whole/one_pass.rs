//! A reply read in one pass: the members the gateway needs (`error`,
//! `choices`, `id`, `usage`) read where they stand and every member's
//! span noted on the way, by a cursor over the text instead of a `serde`
//! visitor (reading the reply is the largest part of the gateway's own
//! work per request, and a visitor's calls would be most of it:
//! docs/performance.md).
//!
//! It answers only for the usual reply: every name it reads written
//! without escapes (so a member's name is a slice of the text), every value
//! of a shape its reader takes, every string and number where it reads
//! them of a kind the cursor reads as `serde_json` does (see
//! [`crate::wire::json::scan`]). For anything else it declines and [`super::read`]
//! takes the two-pass way, so what it reads is always what that way reads.

use std::borrow::Cow;

use serde_json::Value;

use super::choice::{Choice, Message};
use super::{Found, Members, Name, USUAL_MEMBERS};
use crate::model::TokenUsage;
use crate::wire::json::scan::Cursor;

/// The reply's members and what the gateway reads of them; `None` when
/// the two-pass way must read it (see the module's note).
pub(super) fn read(text: &str) -> Option<(Members, Found<'_>)> {
    let mut cursor = Cursor::new(text);
    let mut members = Vec::with_capacity(USUAL_MEMBERS);
    let mut found = Found::default();
    cursor.object(|cursor, name, escaped| {
        (!escaped).then_some(())?;
        let start = cursor.at();
        // A repeated name means its last value, as in a parsed object.
        match cursor.slice(name.clone()) {
            "error" => {
                found.error = !cursor.null()?;
                if found.error {
                    cursor.skip_value()?;
                }
            }
            "choices" => found.choice = first_choice(cursor)?,
            "id" => found.id = cursor.text()?,
            "usage" => found.usage = usage(cursor)?,
            _ => cursor.skip_value()?,
        }
        members.push((Name::Span(name), start..cursor.at()));
        Some(())
    })?;
    cursor.at_end().then_some((members, found))
}

/// The first element of the `choices` array, read as a choice (an object);
/// the others skipped. Declined for what is not an array of which the
/// first is an object.
fn first_choice<'a>(cursor: &mut Cursor<'a>) -> Option<Option<Choice<'a>>> {
    let mut first = None;
    cursor.array(|cursor, index| {
        if index > 0 {
            return cursor.skip_value();
        }
        first = Some(choice(cursor)?);
        Some(())
    })?;
    Some(first)
}

/// A choice: its message (present whatever its value) and its string
/// `finish_reason`.
fn choice<'a>(cursor: &mut Cursor<'a>) -> Option<Choice<'a>> {
    let mut choice = Choice {
        message: None,
        finish_reason: None,
    };
    cursor.object(|cursor, name, escaped| {
        (!escaped).then_some(())?;
        match cursor.slice(name) {
            "message" => choice.message = Some(message(cursor)?),
            "finish_reason" => choice.finish_reason = cursor.text()?,
            _ => cursor.skip_value()?,
        }
        Some(())
    })?;
    Some(choice)
}

/// A choice's message: its string `content` and its other members but
/// `role`, null ones left out; what is not an object is an empty message.
fn message(cursor: &mut Cursor<'_>) -> Option<Message> {
    let mut message = Message::default();
    if cursor.peek()? != b'{' {
        cursor.other_value()?;
        return Some(message);
    }
    cursor.object(|cursor, name, escaped| {
        (!escaped).then_some(())?;
        let name = cursor.slice(name);
        match name {
            "role" => cursor.skip_value()?,
            "content" => message.content = cursor.text()?.map(Cow::into_owned),
            _ if cursor.null()? => drop(message.extra.remove(name)),
            _ => {
                // Rare, and kept as a tree: `serde_json` reads it.
                let start = cursor.at();
                cursor.skip_value()?;
                let value: Value = serde_json::from_str(cursor.slice(start..cursor.at())).ok()?;
                message.extra.insert(name.to_owned(), value);
            }
        }
        Some(())
    })?;
    Some(message)
}

/// Token counts from a `usage` value: both counts must be there.
fn usage(cursor: &mut Cursor<'_>) -> Option<Option<TokenUsage>> {
    if cursor.peek()? != b'{' {
        cursor.other_value()?;
        return Some(None);
    }
    let (mut prompt, mut completion) = (None, None);
    let (mut cached, mut reasoning) = (None, None);
    cursor.object(|cursor, name, escaped| {
        (!escaped).then_some(())?;
        match cursor.slice(name) {
            "prompt_tokens" => prompt = cursor.count()?,
            "completion_tokens" => completion = cursor.count()?,
            "prompt_tokens_details" => cached = details(cursor)?.0,
            "completion_tokens_details" => reasoning = details(cursor)?.1,
            _ => cursor.skip_value()?,
        }
        Some(())
    })?;
    Some(
        prompt
            .zip(completion)
            .map(|(prompt_tokens, completion_tokens)| TokenUsage {
                prompt_tokens,
                completion_tokens,
                cached_tokens: cached,
                reasoning_tokens: reasoning,
            }),
    )
}

/// The counts of a `*_tokens_details` value: `cached_tokens` and
/// `reasoning_tokens`, both read wherever they are (a reader of either
/// refuses what it refuses); none for what is not an object.
fn details(cursor: &mut Cursor<'_>) -> Option<(Option<u64>, Option<u64>)> {
    let (mut cached, mut reasoning) = (None, None);
    if cursor.peek()? != b'{' {
        cursor.other_value()?;
        return Some((cached, reasoning));
    }
    cursor.object(|cursor, name, escaped| {
        (!escaped).then_some(())?;
        match cursor.slice(name) {
            "cached_tokens" => cached = cursor.count()?,
            "reasoning_tokens" => reasoning = cursor.count()?,
            _ => cursor.skip_value()?,
        }
        Some(())
    })?;
    Some((cached, reasoning))
}
