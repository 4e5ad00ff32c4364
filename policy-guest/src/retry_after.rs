//! `retry-after-ms` and `retry-after` headers (spec F-6.8, F-6.8a).
//!
//! `retry-after-ms` (milliseconds, the Stainless SDKs' header) is preferred
//! over `retry-after`, which is either a number of seconds or an HTTP date.
//! Header names match in any case. Values that do not parse, are negative or
//! are not finite are ignored rather than guessed at.

/// Longest wait a header can ask for. The longest window providers announce is
/// a weekly usage limit, so a week keeps every honest reset time intact while
/// an absurd value (`1e30`) is clamped and `now + wait` can never overflow.
pub const MAX_RETRY_AFTER_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// The wait a header block (`Name: value` lines) asks for, in milliseconds.
///
/// Lines are found with `memchr` and rejected on their first bytes, so a
/// response's twenty ordinary headers cost next to nothing.
pub fn from_headers(block: &str, now_ms: u64) -> Option<u64> {
    let mut seconds_or_date = None;
    let mut rest = block.as_bytes();
    while !rest.is_empty() {
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        let line = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or_default();
        match retry_header(line) {
            Some((true, value)) => {
                if let Some(ms) = parse_milliseconds(value) {
                    return Some(ms);
                }
            }
            Some((false, value)) if seconds_or_date.is_none() => {
                seconds_or_date = parse_retry_after(value, now_ms);
            }
            _ => {}
        }
    }
    seconds_or_date
}

/// For a `retry-after-ms` line, `(true, value)`; for `retry-after`,
/// `(false, value)`; otherwise `None`. Names match in any case; spaces may
/// surround the name and the value.
fn retry_header(line: &[u8]) -> Option<(bool, &str)> {
    const NAME: &[u8] = b"retry-after";
    let line = line.trim_ascii();
    if line.len() <= NAME.len() || !line[..NAME.len()].eq_ignore_ascii_case(NAME) {
        return None;
    }
    let after = &line[NAME.len()..];
    let (millis, after) = match after.get(..3) {
        Some(suffix) if suffix.eq_ignore_ascii_case(b"-ms") => (true, &after[3..]),
        _ => (false, after),
    };
    let value = after.trim_ascii_start().strip_prefix(b":")?;
    std::str::from_utf8(value.trim_ascii())
        .ok()
        .map(|value| (millis, value))
}

fn parse_milliseconds(value: &str) -> Option<u64> {
    if let Some(ms) = whole_number(value) {
        return Some(ms.min(MAX_RETRY_AFTER_MS));
    }
    let ms: f64 = value.parse().ok()?;
    clamp_ms(ms)
}

fn parse_retry_after(value: &str, now_ms: u64) -> Option<u64> {
    if let Some(seconds) = whole_number(value) {
        return Some(seconds.saturating_mul(1000).min(MAX_RETRY_AFTER_MS));
    }
    if let Ok(seconds) = value.parse::<f64>() {
        return seconds_to_ms(seconds);
    }
    let date = httpdate::parse_http_date(value).ok()?;
    let date_ms = date.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis();
    let wait = date_ms.saturating_sub(u128::from(now_ms));
    Some(
        u64::try_from(wait)
            .unwrap_or(u64::MAX)
            .min(MAX_RETRY_AFTER_MS),
    )
}

/// Most digits a whole number read without a float parse may have: any
/// such number fits a `u64`, and the float parse would read it exactly up
/// to the clamp (a week is 604,800 s).
const MAX_WHOLE_DIGITS: usize = 15;

/// `value` when it is only digits (nearly every real header: `30`), read
/// without the float parser, which costs far more in the sandbox. Gives
/// what the float parse would after clamping.
fn whole_number(value: &str) -> Option<u64> {
    if value.is_empty() || value.len() > MAX_WHOLE_DIGITS {
        return None;
    }
    value.bytes().try_fold(0u64, |number, byte| {
        byte.is_ascii_digit()
            .then(|| number * 10 + u64::from(byte - b'0'))
    })
}

/// Seconds (possibly fractional) to whole milliseconds, rounded up so that a
/// wait is never shorter than asked.
pub fn seconds_to_ms(seconds: f64) -> Option<u64> {
    clamp_ms(seconds * 1000.0)
}

fn clamp_ms(ms: f64) -> Option<u64> {
    if !ms.is_finite() || ms < 0.0 {
        return None;
    }
    // `as` saturates for floats; the clamp keeps it within a week anyway.
    Some((ms.ceil() as u64).min(MAX_RETRY_AFTER_MS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_read_as_the_float_parse_reads_them() {
        for value in [
            "0",
            "7",
            "007",
            "30",
            "604799",
            "604800",
            "604801",
            "9007199254740993",
            "999999999999999",
            "1000000000000000",
        ] {
            let float: f64 = value.parse().unwrap();
            assert_eq!(
                parse_retry_after(value, 0),
                seconds_to_ms(float),
                "seconds {value}"
            );
            assert_eq!(parse_milliseconds(value), clamp_ms(float), "ms {value}");
        }
        assert_eq!(whole_number(""), None);
        assert_eq!(whole_number("+5"), None);
        assert_eq!(parse_retry_after("+5", 0), Some(5_000));
    }

    #[test]
    fn seconds_milliseconds_and_dates() {
        assert_eq!(from_headers("Retry-After: 30\n", 0), Some(30_000));
        assert_eq!(from_headers("retry-after:1.5", 0), Some(1_500));
        assert_eq!(from_headers("RETRY-AFTER-MS: 250\r\n", 0), Some(250));
        // Wed, 21 Oct 2015 07:28:00 GMT is 1445412480 s after the epoch.
        let now = 1_445_412_480_000 - 40_000;
        assert_eq!(
            from_headers("Retry-After: Wed, 21 Oct 2015 07:28:00 GMT\n", now),
            Some(40_000)
        );
    }

    #[test]
    fn milliseconds_header_wins_wherever_it_stands() {
        let block = "content-type: application/json\nretry-after: 30\nretry-after-ms: 1200\n";
        assert_eq!(from_headers(block, 0), Some(1_200));
    }

    #[test]
    fn past_dates_mean_no_wait() {
        let past = "retry-after: Wed, 21 Oct 2015 07:28:00 GMT";
        assert_eq!(from_headers(past, 2_000_000_000_000), Some(0));
    }

    #[test]
    fn garbage_negative_huge_and_malformed_lines() {
        assert_eq!(from_headers("retry-after: soon", 0), None);
        assert_eq!(from_headers("retry-after: -5", 0), None);
        assert_eq!(from_headers("retry-after: NaN", 0), None);
        assert_eq!(
            from_headers("retry-after: 1e30", 0),
            Some(MAX_RETRY_AFTER_MS)
        );
        assert_eq!(from_headers("retry-after 30\nno colon here", 0), None);
        assert_eq!(
            from_headers("retry-after-msx: 5\nretry-afterwards: 7", 0),
            None
        );
        assert_eq!(from_headers("x-retry-after: 5\n\n\n", 0), None);
        assert_eq!(from_headers("  Retry-After  :  9  \r\n", 0), Some(9_000));
        assert_eq!(from_headers("", 0), None);
        // A bad `retry-after-ms` falls back to `retry-after`.
        assert_eq!(
            from_headers("retry-after-ms: x\nretry-after: 2", 0),
            Some(2_000)
        );
    }
}
