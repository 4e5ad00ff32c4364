//! Times for people: absolute in UTC, relative in the two largest units.

use std::time::{Duration, UNIX_EPOCH};

pub use crate::time::now_ms;

/// `2026-11-29T15:04:05Z`.
pub(crate) fn absolute(ms: u64) -> String {
    let time = UNIX_EPOCH + Duration::from_millis(ms);
    humantime::format_rfc3339_seconds(time).to_string()
}

/// "in 4m 10s", "3h 5m ago", "now".
pub fn relative(ms: u64, now: u64) -> String {
    if ms > now {
        format!("in {}", span(ms - now))
    } else if now - ms < 1000 {
        "now".into()
    } else {
        format!("{} ago", span(now - ms))
    }
}

/// A duration in its two largest units: "4m 10s", "2d 3h", "45s".
pub(crate) fn span(ms: u64) -> String {
    const UNITS: [(&str, u64); 4] = [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)];
    let mut seconds = ms.div_ceil(1000);
    let mut parts = Vec::new();
    for (name, size) in UNITS {
        if seconds >= size || (parts.is_empty() && size == 1) {
            parts.push(format!("{}{name}", seconds / size));
            seconds %= size;
        }
        if parts.len() == 2 {
            break;
        }
    }
    // Drop a trailing zero unit: "5m" rather than "5m 0s".
    if parts.len() == 2 && parts[1].starts_with('0') {
        parts.pop();
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_naturally() {
        assert_eq!(span(250_000), "4m 10s");
        assert_eq!(span(300_000), "5m");
        assert_eq!(span(45_000), "45s");
        assert_eq!(span(0), "0s");
        assert_eq!(span(187_200_000), "2d 4h");
        assert_eq!(relative(1_000 + 250_000, 1_000), "in 4m 10s");
        assert_eq!(relative(0, 3_600_000), "1h ago");
        assert_eq!(absolute(0), "1970-01-01T00:00:00Z");
    }
}
