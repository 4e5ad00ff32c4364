//! The first JSON value of a body, read straight into a [`Node`].
//!
//! What serde_json's stream reader gives for [`Node`] (see `lean`), read
//! without its visitor machinery: in the sandbox a body of a hundred bytes
//! cost some ten thousand steps through serde, most of them generic calls.
//! Here a byte loop reads the same grammar, with serde_json's own limits:
//! nesting deeper than 127 arrays and objects, a control character or a
//! lone surrogate in a string, a trailing comma, and a number out of range
//! are all errors. A number that is not a plain whole number of at most 19
//! digits is handed to serde_json itself, so where a number is out of range
//! is decided by the same code. `lean`'s reader stays the reference: the
//! tests and the `guest_readers` fuzz target hold this one to it.

use super::lean::{key_index, Node, Object, KEPT_ITEMS};

/// serde_json's recursion limit: a value nested this deep is refused.
const DEPTH_LIMIT: u32 = 128;

/// Plain whole numbers this short always fit a `u64`.
const SHORT_NUMBER_DIGITS: usize = 19;

/// The value `text` starts with, when it is an object or an array that
/// reads as JSON; what follows it is not looked at.
pub(super) fn first_value(text: &str) -> Option<Node> {
    let mut reader = Reader {
        text,
        bytes: text.as_bytes(),
        at: 0,
        depth_left: DEPTH_LIMIT,
    };
    reader.skip_space();
    if !matches!(reader.peek(), Some(b'{' | b'[')) {
        return None;
    }
    reader.value(true).ok().flatten()
}

/// A refused text; which fault it was is not needed.
struct Refused;

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth_left: u32,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Consumes `byte` after any white space, or refuses.
    fn expect(&mut self, byte: u8) -> Result<(), Refused> {
        self.skip_space();
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(Refused)
        }
    }

    /// Reads one value; `keep` says whether the caller keeps it (`None`
    /// answers a value read only to check it).
    fn value(&mut self, keep: bool) -> Result<Option<Node>, Refused> {
        self.skip_space();
        let node = match self.peek().ok_or(Refused)? {
            b'{' => self.nested(|reader| reader.object(keep))?,
            b'[' => self.nested(|reader| reader.array(keep))?,
            b'"' => {
                self.at += 1;
                let text = self.string(keep)?;
                text.map(Node::Text)
            }
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            b'n' => self.literal(b"null")?,
            b'-' | b'0'..=b'9' => Some(self.number()?),
            _ => return Err(Refused),
        };
        Ok(if keep { node } else { None })
    }

    /// Reads an object or array one level deeper, within the limit.
    fn nested(
        &mut self,
        read: impl FnOnce(&mut Self) -> Result<Option<Node>, Refused>,
    ) -> Result<Option<Node>, Refused> {
        self.depth_left -= 1;
        if self.depth_left == 0 {
            return Err(Refused);
        }
        self.at += 1;
        let node = read(self)?;
        self.depth_left += 1;
        Ok(node)
    }

    fn object(&mut self, keep: bool) -> Result<Option<Node>, Refused> {
        let mut object = keep.then(Box::<Object>::default);
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(object.map(Node::Object));
        }
        loop {
            self.expect(b'"')?;
            let index = self.key()?;
            self.expect(b':')?;
            let wanted = keep && index.is_some();
            let value = self.value(wanted)?;
            if let (Some(object), Some(index), Some(value)) = (object.as_mut(), index, value) {
                // The last of a repeated key wins, as in a parsed map.
                object.set(index, value);
            }
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(object.map(Node::Object));
                }
                _ => return Err(Refused),
            }
        }
    }

    fn array(&mut self, keep: bool) -> Result<Option<Node>, Refused> {
        let mut items = Vec::new();
        self.skip_space();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(keep.then_some(Node::Array(items)));
        }
        loop {
            let wanted = keep && items.len() < KEPT_ITEMS;
            if let Some(item) = self.value(wanted)? {
                items.push(item);
            }
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(keep.then_some(Node::Array(items)));
                }
                _ => return Err(Refused),
            }
        }
    }

    /// An object key (its opening quote read): its place among the kept
    /// keys, if it has one.
    fn key(&mut self) -> Result<Option<usize>, Refused> {
        let start = self.at;
        if let Some(end) = self.plain_string_end() {
            self.at = end + 1;
            return Ok(key_index(&self.text[start..end]));
        }
        let key = self.string(true)?.unwrap_or_default();
        Ok(key_index(&key))
    }

    /// Where the string that starts here ends (its closing quote), when it
    /// has no escape and no control character before it.
    fn plain_string_end(&self) -> Option<usize> {
        let end = self.at + special_byte(&self.bytes[self.at..])?;
        (self.bytes[end] == b'"').then_some(end)
    }

    /// A string (its opening quote read), decoded when `keep`.
    fn string(&mut self, keep: bool) -> Result<Option<String>, Refused> {
        if let Some(end) = self.plain_string_end() {
            let text = &self.text[self.at..end];
            self.at = end + 1;
            return Ok(keep.then(|| text.to_owned()));
        }
        let mut out = String::new();
        loop {
            let run = special_byte(&self.bytes[self.at..]).ok_or(Refused)?;
            if keep {
                // A run ends before an ASCII byte: on a character boundary.
                out.push_str(&self.text[self.at..self.at + run]);
            }
            self.at += run;
            match self.bytes[self.at] {
                b'"' => {
                    self.at += 1;
                    return Ok(keep.then_some(out));
                }
                b'\\' => {
                    self.at += 1;
                    let decoded = self.escape()?;
                    if keep {
                        out.push(decoded);
                    }
                }
                _ => return Err(Refused),
            }
        }
    }

    /// The character an escape (its backslash read) stands for.
    fn escape(&mut self) -> Result<char, Refused> {
        let byte = self.peek().ok_or(Refused)?;
        self.at += 1;
        Ok(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                match unit {
                    0xD800..=0xDBFF => {
                        // A leading surrogate must be followed by `\u` and a
                        // trailing one.
                        if self.bytes.get(self.at..self.at + 2) != Some(b"\\u") {
                            return Err(Refused);
                        }
                        self.at += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(Refused);
                        }
                        let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                        char::from_u32(code).ok_or(Refused)?
                    }
                    0xDC00..=0xDFFF => return Err(Refused),
                    _ => char::from_u32(unit).ok_or(Refused)?,
                }
            }
            _ => return Err(Refused),
        })
    }

    fn hex4(&mut self) -> Result<u32, Refused> {
        let digits = self.bytes.get(self.at..self.at + 4).ok_or(Refused)?;
        let mut unit = 0;
        for &digit in digits {
            unit = unit * 16 + char::from(digit).to_digit(16).ok_or(Refused)?;
        }
        self.at += 4;
        Ok(unit)
    }

    fn literal(&mut self, word: &[u8]) -> Result<Option<Node>, Refused> {
        if self.bytes[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(Some(Node::Other))
        } else {
            Err(Refused)
        }
    }

    /// A number: its value when it is a whole number that fits a `u64`.
    fn number(&mut self) -> Result<Node, Refused> {
        let start = self.at;
        let digits = |reader: &mut Self| {
            let from = reader.at;
            while let Some(b'0'..=b'9') = reader.peek() {
                reader.at += 1;
            }
            reader.at - from
        };
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
        }
        let whole = match self.peek() {
            Some(b'0') => {
                self.at += 1;
                1
            }
            Some(b'1'..=b'9') => digits(self),
            _ => return Err(Refused),
        };
        let mut plain = !negative;
        if self.peek() == Some(b'.') {
            self.at += 1;
            plain = false;
            if digits(self) == 0 {
                return Err(Refused);
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            plain = false;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            if digits(self) == 0 {
                return Err(Refused);
            }
        }
        let token = &self.text[start..self.at];
        if plain && whole <= SHORT_NUMBER_DIGITS {
            let value = token
                .bytes()
                .fold(0u64, |value, digit| value * 10 + u64::from(digit - b'0'));
            return Ok(Node::Number(Some(value)));
        }
        // Fractions, exponents, signs and long numbers: serde_json decides
        // both the value and whether it is in range.
        match serde_json::from_str::<Node>(token) {
            Ok(node @ Node::Number(_)) => Ok(node),
            _ => Err(Refused),
        }
    }
}

/// Where the first byte that ends a run of a string's plain text is: a
/// quote, a backslash or a control character.
fn special_byte(bytes: &[u8]) -> Option<usize> {
    let special = |b: &u8| *b == b'"' || *b == b'\\' || *b < 0x20;
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        // Sixteen bytes a step in the sandbox, where a loop pays its
        // metering on every turn.
        use std::arch::wasm32::{
            u8x16_bitmask, u8x16_eq, u8x16_lt, u8x16_splat, v128, v128_load, v128_or,
        };
        const LANES: usize = std::mem::size_of::<v128>();
        let mut at = 0;
        while at + LANES <= bytes.len() {
            // SAFETY: `at + LANES <= bytes.len()`; `v128_load` reads unaligned.
            let chunk = unsafe { v128_load(bytes.as_ptr().add(at).cast()) };
            let hits = v128_or(
                v128_or(
                    u8x16_eq(chunk, u8x16_splat(b'"')),
                    u8x16_eq(chunk, u8x16_splat(b'\\')),
                ),
                u8x16_lt(chunk, u8x16_splat(0x20)),
            );
            let mask = u8x16_bitmask(hits);
            if mask != 0 {
                return Some(at + mask.trailing_zeros() as usize);
            }
            at += LANES;
        }
        return bytes[at..].iter().position(special).map(|found| at + found);
    }
    #[allow(unreachable_code)]
    bytes.iter().position(special)
}

/// Checks that [`first_value`] reads `text` as serde_json's stream reader
/// reads a [`Node`]: the same value, or both refuse (tests and the fuzz
/// target).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn check_against_serde(text: &str) {
    let trimmed = text.trim_start_matches([' ', '\t', '\n', '\r']);
    if !trimmed.starts_with(['{', '[']) {
        return;
    }
    // See `check_lean_reader` for why this key is left out.
    if text.contains("$serde_json::private::RawValue") {
        return;
    }
    let serde = serde_json::Deserializer::from_str(text)
        .into_iter::<Node>()
        .next()
        .and_then(Result::ok);
    assert_eq!(first_value(text), serde, "{text:?}");
}

#[cfg(test)]
mod tests {
    //! The reader is held to serde_json on every cut of the tricky bodies
    //! in `body`'s own tests (through `check_lean_reader`).
    use super::*;

    #[test]
    fn the_nesting_limit_is_serde_jsons() {
        for depth in [126, 127, 128, 129] {
            let arrays = "[".repeat(depth) + &"]".repeat(depth);
            check_against_serde(&arrays);
            let objects = "{\"error\":".repeat(depth) + "1" + &"}".repeat(depth);
            check_against_serde(&objects);
        }
        assert!(first_value(&("[".repeat(127) + &"]".repeat(127))).is_some());
        assert!(first_value(&("[".repeat(128) + &"]".repeat(128))).is_none());
    }

    #[test]
    fn only_objects_and_arrays_are_first_values() {
        assert_eq!(first_value("\"text\""), None);
        assert_eq!(first_value("429"), None);
        assert_eq!(first_value("  {}"), Some(Node::Object(Box::default())));
    }
}
