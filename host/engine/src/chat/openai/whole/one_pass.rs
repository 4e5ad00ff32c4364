//! A reply read in one pass: the members the gateway needs (`error`,
//! `choices`, `id`, `usage`) read where they stand, and every member's span
//! found from where the names lie in the text, instead of splitting the
//! reply into raw members first and reading those again (which scanned
//! `choices` and `usage` twice: about 2k instructions of a gateway request,
//! BENCHMARKS.md, issue 16).
//!
//! It answers only for the usual reply: every name written without
//! escapes (so it is a slice of the text and shows where its member
//! starts) and every value of a shape its reader takes. For anything else
//! it declines and [`super::read`] takes the two-pass way, so what it
//! reads is always what that way reads.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use serde::de::{Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};

use super::super::readers::{Key, Text};
use super::choice::{Choice, First, Usage};
use super::{span_in, Found, Members, Name};

/// What the pass found, names in the upstream's order.
struct Pass<'a> {
    names: Vec<&'a str>,
    found: Found<'a>,
}

struct PassVisitor;

impl<'de> Visitor<'de> for PassVisitor {
    type Value = Pass<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pass<'de>, A::Error> {
        let mut pass = Pass {
            names: Vec::with_capacity(super::USUAL_MEMBERS),
            found: Found::default(),
        };
        while let Some(Key(name)) = map.next_key::<Key<'de>>()? {
            let Cow::Borrowed(name) = name else {
                return Err(A::Error::custom("a name written with escapes"));
            };
            // A repeated name means its last value, as in a parsed object.
            let found = &mut pass.found;
            match name {
                "error" => found.error = map.next_value::<Option<IgnoredAny>>()?.is_some(),
                "choices" => found.choice = map.next_value::<First<Choice>>()?.0,
                "id" => found.id = map.next_value::<Text>()?.0,
                "usage" => found.usage = map.next_value::<Usage>()?.0,
                _ => drop(map.next_value::<IgnoredAny>()?),
            }
            pass.names.push(name);
        }
        Ok(pass)
    }
}

/// The reply's members and what the gateway reads of them; `None` when
/// the two-pass way must read it (see the module's note).
pub(super) fn read(text: &str) -> Option<(Members, Found<'_>)> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let pass = deserializer.deserialize_map(PassVisitor).ok()?;
    deserializer.end().ok()?;
    let spans = member_spans(text, &pass.names)?;
    Some((spans, pass.found))
}

/// JSON's whitespace (RFC 8259 §2).
fn is_json_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// Each member's name span and value span. Between a name's closing quote
/// and its value the grammar allows only whitespace and `:`; between a
/// value and the next name's opening quote only whitespace and `,`; after
/// the last value only whitespace and `}`. `None` if the text says
/// otherwise (it cannot, for a text the pass read).
fn member_spans(text: &str, names: &[&str]) -> Option<Members> {
    let bytes = text.as_bytes();
    let name_spans: Vec<Range<usize>> = names
        .iter()
        .map(|name| within(text, name))
        .collect::<Option<_>>()?;
    let close = text.trim_end_matches(|c: char| c.is_ascii() && is_json_space(c as u8));
    let close = close.len().checked_sub(1).filter(|&at| bytes[at] == b'}')?;
    let mut spans = Vec::with_capacity(names.len());
    for (index, name) in name_spans.iter().enumerate() {
        let after_name = skip_forward(bytes, name.end + 1);
        (bytes.get(after_name) == Some(&b':')).then_some(())?;
        let start = skip_forward(bytes, after_name + 1);
        let end = match name_spans.get(index + 1) {
            Some(next) => {
                let comma = skip_back(bytes, next.start.checked_sub(1)?);
                (comma > 0 && bytes[comma - 1] == b',').then_some(())?;
                skip_back(bytes, comma - 1)
            }
            None => skip_back(bytes, close),
        };
        (start < end).then_some(())?;
        spans.push((Name::Span(name.clone()), start..end));
    }
    Some(spans)
}

/// Where `part` lies in `whole`, if it is a slice of it.
fn within(whole: &str, part: &str) -> Option<Range<usize>> {
    let (start, end) = (
        whole.as_ptr() as usize,
        whole.as_ptr() as usize + whole.len(),
    );
    let at = part.as_ptr() as usize;
    (start <= at && at + part.len() <= end).then(|| span_in(whole, part))
}

/// The first index at or after `at` that is not whitespace.
fn skip_forward(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).copied().is_some_and(is_json_space) {
        at += 1;
    }
    at
}

/// The index just past the last non-whitespace byte before `end`.
fn skip_back(bytes: &[u8], mut end: usize) -> usize {
    while end > 0 && is_json_space(bytes[end - 1]) {
        end -= 1;
    }
    end
}
