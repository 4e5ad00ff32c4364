//! `str::trim`, `trim_start` and `trim_end`, the same answers, cheaper on
//! the usual edges.
//!
//! The standard ones decode a character at each edge and ask whether it is
//! Unicode white space: in the sandbox some tens of steps a call, and a
//! classification trims its texts a dozen times. Here an edge that is ASCII
//! is settled by its byte, and only a non-ASCII byte at the edge (where a
//! Unicode space such as U+00A0 or U+3000 may stand) goes to the standard
//! function.

/// The ASCII characters that `char::is_whitespace` calls white space (one
/// more than `u8::is_ascii_whitespace`: the vertical tab).
fn is_ascii_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// `text.trim_start()`.
#[inline]
pub fn trim_start(text: &str) -> &str {
    let bytes = text.as_bytes();
    let mut start = 0;
    while start < bytes.len() && is_ascii_space(bytes[start]) {
        start += 1;
    }
    // `start` follows ASCII bytes only, so it is a character boundary.
    let rest = &text[start..];
    match rest.as_bytes().first() {
        Some(byte) if !byte.is_ascii() => unicode_trim_start(rest),
        _ => rest,
    }
}

/// `text.trim_end()`.
#[inline]
pub fn trim_end(text: &str) -> &str {
    let bytes = text.as_bytes();
    let mut end = bytes.len();
    while end > 0 && is_ascii_space(bytes[end - 1]) {
        end -= 1;
    }
    // `end` precedes ASCII bytes only, so it is a character boundary.
    let rest = &text[..end];
    match rest.as_bytes().last() {
        Some(byte) if !byte.is_ascii() => unicode_trim_end(rest),
        _ => rest,
    }
}

/// The standard function, out of line: rare, and large once inlined.
#[cold]
#[inline(never)]
fn unicode_trim_start(text: &str) -> &str {
    text.trim_start()
}

/// See [`unicode_trim_start`].
#[cold]
#[inline(never)]
fn unicode_trim_end(text: &str) -> &str {
    text.trim_end()
}

/// `text.trim()`.
#[inline]
pub fn trim(text: &str) -> &str {
    trim_end(trim_start(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_as_the_standard_library_on_every_kind_of_edge() {
        let edges = [
            "", " ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\u{a0}", "\u{3000}", "\u{85}",
            "\u{2028}", " \u{a0} ", "x", "é", "日", "\u{200b}", " é ",
        ];
        let middles = ["", "a", "a b", "rate limit", "余额 不足", "\u{a0}x\u{a0}"];
        for left in edges {
            for middle in middles {
                for right in edges {
                    let text = format!("{left}{middle}{right}");
                    assert_eq!(trim(&text), text.trim(), "{text:?}");
                    assert_eq!(trim_start(&text), text.trim_start(), "{text:?}");
                    assert_eq!(trim_end(&text), text.trim_end(), "{text:?}");
                }
            }
        }
    }
}
