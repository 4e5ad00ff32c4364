//! An OpenAI-shaped reply kept as it came: its text and where each
//! top-level member lies in it, rendered for a client with only `id`,
//! `model` and `object` replaced. Building a `serde_json::Value` of it and
//! writing it out again would be a seventh of the gateway's own work per
//! request.

use std::borrow::Cow;
use std::ops::Range;

use rustc_hash::FxHashSet;
use serde_json::Value;

/// An upstream's reply text and where its top-level members lie in it.
#[derive(Debug, Clone, PartialEq)]
pub struct WholeReply {
    pub(crate) text: String,
    /// Each member's name and the span of its value in `text`, in the
    /// upstream's order (a repeated name appears each time).
    pub(crate) members: Vec<(Name, Range<usize>)>,
}

/// A member's name: where it lies in the reply's text, or, when it was
/// written with escapes, the name they stand for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Name {
    Span(Range<usize>),
    Unescaped(String),
}

impl Name {
    pub(crate) fn of(whole: &str, name: Cow<'_, str>) -> Name {
        match name {
            Cow::Borrowed(name) => Name::Span(span_in(whole, name)),
            Cow::Owned(name) => Name::Unescaped(name),
        }
    }
}

/// Where `part`, a slice of `whole`, lies in it.
pub(crate) fn span_in(whole: &str, part: &str) -> Range<usize> {
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
pub(crate) fn push_decimal(out: &mut String, mut number: u64) {
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
