//! A cursor over JSON text that checks what it passes as strictly as
//! `serde_json` does, for the one-pass readers of the usual request and
//! reply: a value is skipped or read where it stands, with no visitor, no
//! tree and no copy.
//!
//! Every method answers `None` to decline: for text `serde_json` would
//! refuse, and for the few texts where it might answer differently from
//! `serde_json`'s readers (a string or name with escapes where it is read,
//! a number outside the plain integers where it is read, nesting deeper
//! than [`MAX_DEPTH`]). The general reader then reads the text, so
//! declining never changes an answer.

use std::borrow::Cow;
use std::ops::Range;

/// The deepest nesting the cursor follows. `serde_json` refuses past 128;
/// well under that, nothing the cursor takes can be refused for its depth
/// by the readers it stands in for, and no reply comes close.
const MAX_DEPTH: u32 = 64;

/// A number as the readers see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Number {
    /// A non-negative integer that fits in 64 bits (`as_u64`).
    Count(u64),
    /// A negative integer of at most 18 digits: an `i64`, or `-0`.
    Negative,
    /// Anything else: a fraction, an exponent, an integer too large. Where
    /// a number is read, `serde_json` may refuse one out of range.
    Other,
}

/// Each byte of a word: multiplied by a byte, that byte in every place.
const ONES: u64 = u64::from_ne_bytes([1; 8]);

/// The high bit of each byte of a word.
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// The high bit of each byte of `word` below `limit` (at most 0x80), and
/// maybe of some bytes after the first such: a byte's subtraction borrows
/// only from a byte below the limit, so the lowest bit set is exact.
fn below(word: u64, limit: u8) -> u64 {
    word.wrapping_sub(ONES * u64::from(limit)) & !word & HIGHS
}

/// The high bit of each quote, backslash and control character of `word`
/// (byte `i` of the text its byte `i` from the low end), and maybe of some
/// bytes after the first: its lowest bit set is exact.
#[inline(always)]
fn specials(word: u64) -> u64 {
    // A byte equal to `b` is a zero byte of `word ^ (ONES * b)`.
    below(word ^ (ONES * u64::from(b'"')), 1)
        | below(word ^ (ONES * u64::from(b'\\')), 1)
        | below(word, 0x20)
}

/// The index of the first quote, backslash or control character at or
/// after `at`, or the length of `bytes` when there is none: a string's
/// plain text is passed eight bytes a turn (a byte a turn took ten
/// instructions a byte, docs/performance.md).
fn next_special(bytes: &[u8], mut at: usize) -> usize {
    while let Some(word) = bytes.get(at..at + 8) {
        // Byte `i` of the text is byte `i` from the low end.
        let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let found = specials(word);
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    // Fewer than eight bytes left.
    while let Some(&byte) = bytes.get(at) {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            break;
        }
        at += 1;
    }
    at
}

/// A position in a JSON text.
pub(crate) struct Cursor<'a> {
    text: &'a str,
    at: usize,
    depth: u32,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Cursor {
            text,
            at: 0,
            depth: 0,
        }
    }

    /// The byte offset the cursor stands at.
    pub(crate) fn at(&self) -> usize {
        self.at
    }

    /// The text of `span`.
    pub(crate) fn slice(&self, span: Range<usize>) -> &'a str {
        &self.text[span]
    }

    /// The next byte that is not JSON whitespace (RFC 8259 §2), not taken;
    /// `None` at the end.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        while let Some(&byte) = bytes.get(self.at) {
            if !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    /// Whether only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// Takes `byte`, after whitespace.
    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Takes the string at the cursor (its opening quote next): the span of
    /// what is between its quotes, and whether it has escapes. Checked as
    /// `serde_json` checks a string it skips: no control characters, every
    /// escape one of JSON's (a `\u` escape's value is not checked).
    ///
    /// Most strings of a request or reply are names and words shorter than
    /// eight bytes: those are taken here, from one word, inline; the rest
    /// by [`Cursor::long_string`].
    #[inline(always)]
    fn string(&mut self) -> Option<(Range<usize>, bool)> {
        let bytes = self.text.as_bytes();
        let start = self.at + 1;
        if let Some(word) = bytes.get(start..start + 8) {
            let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
            let found = specials(word);
            let end = start + (found.trailing_zeros() / 8) as usize;
            if found != 0 && bytes[end] == b'"' {
                self.at = end + 1;
                return Some((start..end, false));
            }
        }
        self.long_string(start)
    }

    /// [`Cursor::string`] of a string that starts at `start` (past its
    /// quote) and is not a short one without escapes.
    #[inline(never)]
    fn long_string(&mut self, start: usize) -> Option<(Range<usize>, bool)> {
        let bytes = self.text.as_bytes();
        let mut at = start;
        let mut escaped = false;
        loop {
            at = next_special(bytes, at);
            match *bytes.get(at)? {
                b'"' => {
                    self.at = at + 1;
                    return Some((start..at, escaped));
                }
                b'\\' => {
                    escaped = true;
                    at += match *bytes.get(at + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                        b'u' => {
                            let hex = bytes.get(at + 2..at + 6)?;
                            hex.iter().all(u8::is_ascii_hexdigit).then_some(6)?
                        }
                        _ => return None,
                    };
                }
                // A control character.
                _ => return None,
            }
        }
    }

    /// Takes one value, whatever it is, checked as `serde_json` checks a
    /// value it skips.
    pub(crate) fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|cursor, _, _| cursor.skip_value()),
            b'[' => self.array(|cursor, _| cursor.skip_value()),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            b'-' | b'0'..=b'9' => self.number().map(drop),
            _ => None,
        }
    }

    /// Takes `word` (`true`, `false` or `null`).
    fn literal(&mut self, word: &str) -> Option<()> {
        let found = self.text.as_bytes().get(self.at..self.at + word.len())?;
        (found == word.as_bytes()).then(|| self.at += word.len())
    }

    /// Takes `true` or `false`; `None` for anything else.
    pub(crate) fn boolean(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.literal("true").map(|()| true),
            b'f' => self.literal("false").map(|()| false),
            _ => None,
        }
    }

    /// Takes `null` when it is next: whether it was.
    pub(crate) fn null(&mut self) -> Option<bool> {
        if self.peek()? == b'n' {
            self.literal("null")?;
            return Some(true);
        }
        Some(false)
    }

    /// Takes the object at the cursor: `member` is called with each name's
    /// span and whether it has escapes, the cursor at the member's value,
    /// which it must take. `None` if the next value is not an object.
    pub(crate) fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, Range<usize>, bool) -> Option<()>,
    ) -> Option<()> {
        self.expect(b'{')?;
        self.enter()?;
        if self.peek()? == b'}' {
            self.at += 1;
        } else {
            loop {
                if self.peek()? != b'"' {
                    return None;
                }
                let (name, escaped) = self.string()?;
                self.expect(b':')?;
                self.peek()?;
                member(self, name, escaped)?;
                if !self.another(b'}')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// Takes the array at the cursor: `element` is called with each
    /// element's index, the cursor at the element, which it must take.
    /// `None` if the next value is not an array.
    pub(crate) fn array(
        &mut self,
        mut element: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        self.expect(b'[')?;
        self.enter()?;
        if self.peek()? == b']' {
            self.at += 1;
        } else {
            let mut index = 0;
            loop {
                element(self, index)?;
                index += 1;
                if !self.another(b']')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// After a member or element: takes a comma (another follows) or
    /// `close` (none does); `None` for anything else.
    fn another(&mut self, close: u8) -> Option<bool> {
        let next = self.peek()?;
        self.at += 1;
        match next {
            b',' => Some(true),
            _ if next == close => Some(false),
            _ => None,
        }
    }

    /// One level deeper, within [`MAX_DEPTH`].
    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// Takes the number at the cursor, checked against JSON's grammar.
    pub(crate) fn number(&mut self) -> Option<Number> {
        let bytes = self.text.as_bytes();
        let digits = |mut at: usize| {
            while bytes.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
            at
        };
        let negative = bytes.get(self.at) == Some(&b'-');
        let start = self.at + usize::from(negative);
        let int_end = match *bytes.get(start)? {
            // One leading zero, and no digit after it.
            b'0' if bytes.get(start + 1).is_some_and(u8::is_ascii_digit) => return None,
            b'0' => start + 1,
            b'1'..=b'9' => digits(start + 1),
            _ => return None,
        };
        let mut end = int_end;
        if bytes.get(end) == Some(&b'.') {
            let after = digits(end + 1);
            (after > end + 1).then_some(())?;
            end = after;
        }
        if matches!(bytes.get(end), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(bytes.get(end + 1), Some(b'+' | b'-')));
            let after = digits(end + 1 + sign);
            (after > end + 1 + sign).then_some(())?;
            end = after;
        }
        self.at = end;
        if end != int_end {
            return Some(Number::Other);
        }
        let integer = &bytes[start..int_end];
        if negative {
            return Some(if integer.len() <= 18 {
                Number::Negative
            } else {
                Number::Other
            });
        }
        let value = integer.iter().try_fold(0u64, |value, digit| {
            value.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
        });
        Some(value.map_or(Number::Other, Number::Count))
    }

    /// Takes a value as a reader of strings reads it (`as_str`): a string,
    /// borrowed unless it has escapes; `None` inside for anything else.
    pub(crate) fn text(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.peek()? != b'"' {
            self.other_value()?;
            return Some(None);
        }
        let start = self.at;
        let (span, escaped) = self.string()?;
        if !escaped {
            return Some(Some(Cow::Borrowed(self.slice(span))));
        }
        // Escapes are rare in what is read: `serde_json` decodes them, and
        // refuses what it refuses (a lone surrogate).
        let decoded: String = serde_json::from_str(self.slice(start..self.at)).ok()?;
        Some(Some(Cow::Owned(decoded)))
    }

    /// Takes a value as a reader of counts reads it (`as_u64`): a
    /// non-negative integer that fits; `None` inside for anything else.
    pub(crate) fn count(&mut self) -> Option<Option<u64>> {
        if !matches!(self.peek()?, b'-' | b'0'..=b'9') {
            self.other_value()?;
            return Some(None);
        }
        match self.number()? {
            Number::Count(count) => Some(Some(count)),
            Number::Negative => Some(None),
            Number::Other => None,
        }
    }

    /// Takes a value that a reader wanting another shape reads as absent.
    /// Such a reader has `serde_json` parse a string or number (which may
    /// refuse it) and the names of an object: declined where that could
    /// differ from a skip (escapes; a number not a plain integer).
    pub(crate) fn other_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => match self.string()? {
                (_, false) => Some(()),
                (_, true) => None,
            },
            b'-' | b'0'..=b'9' => match self.number()? {
                Number::Other => None,
                Number::Count(_) | Number::Negative => Some(()),
            },
            b'{' => self.object(|cursor, _, escaped| {
                (!escaped).then_some(())?;
                cursor.skip_value()
            }),
            _ => self.skip_value(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the cursor takes `text` as one value and nothing after.
    fn skips(text: &str) -> bool {
        let mut cursor = Cursor::new(text);
        cursor.skip_value().is_some() && cursor.at_end()
    }

    #[test]
    fn a_skip_takes_what_serde_json_takes() {
        let texts = [
            "0",
            "-0",
            "12",
            "1.5",
            "-1.5e+3",
            "1E9",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "1e+",
            "+1",
            "true",
            "tru",
            "nul",
            "null",
            "\"a\\u00e9\\n\"",
            "\"\\x\"",
            "\"\\u12G4\"",
            "\"a\tb\"",
            "\"\\ud800\"",
            "[]",
            "[1,]",
            "[,1]",
            "[1 2]",
            "{}",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{1:2}",
            "{\"a\":[{\"b\":null}]}",
            " [ 1 , { } ] ",
            "\"unterminated",
            "\u{feff}1",
            "[\"é\",\"余额\"]",
        ];
        for text in texts {
            let serde = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
            assert_eq!(skips(text), serde, "{text:?}");
        }
    }

    #[test]
    fn the_first_quote_backslash_or_control_character_is_found_at_its_place() {
        let plain = *b"abcdefghijklmnopqrs";
        assert_eq!(next_special(&plain, 0), plain.len());
        for at in 0..plain.len() {
            for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                let mut bytes = plain;
                bytes[at] = special;
                assert_eq!(next_special(&bytes, 0), at, "{special:#x} at {at}");
                // A second one after it does not move the answer.
                if at + 1 < bytes.len() {
                    bytes[at + 1] = b'"';
                    assert_eq!(next_special(&bytes, 0), at, "{special:#x} at {at}");
                }
            }
            // Bytes of the high half, and those next to a special one, are
            // passed.
            for other in [0x80, 0xe9, 0xff, b'#', b'!', b']', b'[', b' '] {
                let mut bytes = plain;
                bytes[at] = other;
                assert_eq!(next_special(&bytes, 0), plain.len(), "{other:#x} at {at}");
            }
        }
    }

    #[test]
    fn a_string_of_any_length_is_taken_whole_short_or_long() {
        for len in 0..20 {
            let body: String = (0..len).map(|i| char::from(b'a' + i as u8)).collect();
            // What follows the string: nothing, or more text with quotes.
            for after in ["", ",\"x\":1}", "\"\"\"\"\"\"\"\""] {
                let text = format!("\"{body}\"{after}");
                let mut cursor = Cursor::new(&text);
                assert_eq!(cursor.string(), Some((1..1 + len, false)), "{text:?}");
                assert_eq!(cursor.at(), len + 2, "{text:?}");
                // An escape at each place: read through, and marked.
                for at in 0..len {
                    let escaped = format!("\"{}\\n{}\"{after}", &body[..at], &body[at..]);
                    let mut cursor = Cursor::new(&escaped);
                    assert_eq!(cursor.string(), Some((1..len + 3, true)), "{escaped:?}");
                    let control = format!("\"{}\t{}\"{after}", &body[..at], &body[at..]);
                    assert_eq!(Cursor::new(&control).string(), None, "{control:?}");
                }
            }
            let unterminated = format!("\"{body}");
            assert_eq!(
                Cursor::new(&unterminated).string(),
                None,
                "{unterminated:?}"
            );
        }
    }

    #[test]
    fn nesting_past_the_bound_is_declined() {
        let deep = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
        assert!(skips(&deep(MAX_DEPTH as usize)));
        assert!(!skips(&deep(MAX_DEPTH as usize + 1)));
    }

    #[test]
    fn numbers_read_as_their_readers_read_them() {
        let read = |text: &str| Cursor::new(text).number();
        assert_eq!(read("0"), Some(Number::Count(0)));
        assert_eq!(read("18446744073709551615"), Some(Number::Count(u64::MAX)));
        assert_eq!(read("18446744073709551616"), Some(Number::Other));
        assert_eq!(read("-0"), Some(Number::Negative));
        assert_eq!(read("-999999999999999999"), Some(Number::Negative));
        assert_eq!(read("-9999999999999999999"), Some(Number::Other));
        assert_eq!(read("3.0"), Some(Number::Other));
        assert_eq!(read("00"), None);
    }

    #[test]
    fn strings_read_borrowed_unless_escaped_and_others_read_as_absent() {
        fn text(json: &str) -> Option<Option<Cow<'_, str>>> {
            Cursor::new(json).text()
        }
        assert_eq!(text("\"ok\""), Some(Some(Cow::Borrowed("ok"))));
        assert_eq!(text("\"a\\nb\""), Some(Some(Cow::Owned("a\nb".to_owned()))));
        assert_eq!(text("\"\\ud800\""), None);
        assert_eq!(text("5"), Some(None));
        assert_eq!(text("1e999"), None);
        assert_eq!(text("{\"a\":\"\\ud800\"}"), Some(None));
        assert_eq!(text("{\"\\u0061\":1}"), None);
        let count = |json: &str| Cursor::new(json).count();
        assert_eq!(count("7"), Some(Some(7)));
        assert_eq!(count("-7"), Some(None));
        assert_eq!(count("\"7\""), Some(None));
        assert_eq!(count("7.5"), None);
    }
}
