//! Flattening a nested [`ProviderError`] into what the policy reads.
//!
//! WIT has no recursive types, so the tree becomes a list in depth-first
//! order — a level, then its `error`, then its `cause` — each with its depth.
//! The walk uses an explicit stack (no recursion) and stops at
//! [`Limits::max_levels`]; text is cut to the limits before it reaches the
//! guest, always at a character boundary.

use policy_types::{ErrorLevel, ErrorReport};
use smallvec::{smallvec, SmallVec};

use crate::provider_error::ProviderError;
use crate::Limits;

/// Levels a report keeps without allocating while it is flattened: nearly
/// every provider error has one to three.
const INLINE_LEVELS: usize = 4;

/// A whole error, flattened and cut: the contract's [`ErrorReport`] and
/// whether anything was cut or dropped to fit the limits. It reads as the
/// report it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlatReport {
    /// The report the policy reads.
    pub report: ErrorReport,
    /// Whether anything was cut or dropped to fit the limits.
    pub truncated: bool,
}

impl std::ops::Deref for FlatReport {
    type Target = ErrorReport;

    fn deref(&self) -> &ErrorReport {
        &self.report
    }
}

/// Flattens `error` depth-first and cuts it to `limits`.
pub fn flatten(error: &ProviderError, now_ms: u64, limits: &Limits) -> FlatReport {
    let borrowed = flatten_borrowed(error, limits);
    FlatReport {
        report: ErrorReport {
            provider: borrowed.provider.map(str::to_owned),
            levels: (borrowed.levels.iter())
                .map(BorrowedLevel::to_level)
                .collect(),
            now_ms,
        },
        truncated: borrowed.truncated,
    }
}

/// A whole error flattened and cut as [`flatten`] does, its texts borrowed
/// from the error: what lowering a report into a module's call needs,
/// without copying each text first.
#[derive(Debug)]
pub struct BorrowedReport<'a> {
    /// The provider named by the first level that names one.
    pub provider: Option<&'a str>,
    /// The levels, depth-first, at most [`Limits::max_levels`].
    pub levels: SmallVec<[BorrowedLevel<'a>; INLINE_LEVELS]>,
    /// Some level or text was cut to the limits.
    pub truncated: bool,
}

/// One level of a [`BorrowedReport`], its headers cut to the limits.
#[derive(Debug)]
pub struct BorrowedLevel<'a> {
    /// How deep the level is nested (the top level is 0).
    pub depth: u32,
    /// The HTTP status.
    pub status: Option<u16>,
    /// The provider's or the transport's error code, cut.
    pub code: Option<&'a str>,
    /// The SDK's error type, cut.
    pub error_type: Option<&'a str>,
    /// The request parameter the error is about, cut.
    pub param: Option<&'a str>,
    /// The message, cut to [`Limits::max_message_bytes`].
    pub message: &'a str,
    /// Structured details as JSON text, cut.
    pub details: Option<&'a str>,
    /// The headers as `(name, value)`, cut to the limits.
    pub headers: Vec<(&'a str, &'a str)>,
}

impl BorrowedLevel<'_> {
    /// This level, owned, its headers as `Name: value` lines. A line break
    /// inside a name or value would forge another header, so it becomes a
    /// space.
    fn to_level(&self) -> ErrorLevel {
        let mut block = String::new();
        for (name, value) in &self.headers {
            for (text, separator) in [(name, ": "), (value, "\n")] {
                policy_types::classify::push_header_text(&mut block, text);
                block.push_str(separator);
            }
        }
        ErrorLevel {
            depth: self.depth,
            status: self.status,
            code: self.code.map(str::to_owned),
            error_type: self.error_type.map(str::to_owned),
            param: self.param.map(str::to_owned),
            message: self.message.to_owned(),
            details: self.details.map(str::to_owned),
            headers: block,
        }
    }
}

/// [`flatten`], borrowing.
pub fn flatten_borrowed<'a>(error: &'a ProviderError, limits: &Limits) -> BorrowedReport<'a> {
    let mut levels = SmallVec::new();
    let mut provider = None;
    let mut truncated = false;
    let mut stack: SmallVec<[(&ProviderError, u32); INLINE_LEVELS]> = smallvec![(error, 0)];
    while let Some((level, depth)) = stack.pop() {
        if levels.len() == limits.max_levels.max(1) {
            truncated = true;
            break;
        }
        if provider.is_none() {
            provider = level
                .provider
                .as_deref()
                .map(|p| prefix(p, limits.max_short_text_bytes, &mut truncated));
        }
        levels.push(BorrowedLevel {
            depth,
            status: level.status,
            code: level
                .code
                .as_deref()
                .map(|c| prefix(c, limits.max_short_text_bytes, &mut truncated)),
            error_type: (level.error_type())
                .map(|t| prefix(t, limits.max_short_text_bytes, &mut truncated)),
            param: (level.param()).map(|p| prefix(p, limits.max_short_text_bytes, &mut truncated)),
            message: prefix(&level.message, limits.max_message_bytes, &mut truncated),
            details: (level.details())
                .map(|d| prefix(d, limits.max_short_text_bytes, &mut truncated)),
            headers: cut_headers(&level.headers, limits, &mut truncated),
        });
        // Pushed in reverse so that `error` is read before `cause`.
        if let Some(cause) = &level.cause {
            stack.push((cause, depth.saturating_add(1)));
        }
        if let Some(inner) = &level.error {
            stack.push((inner, depth.saturating_add(1)));
        }
    }
    BorrowedReport {
        provider,
        levels,
        truncated,
    }
}

/// The headers a level keeps: at most [`Limits::max_headers`], each name
/// and value cut to [`Limits::max_short_text_bytes`].
fn cut_headers<'a>(
    headers: &'a [(String, String)],
    limits: &Limits,
    truncated: &mut bool,
) -> Vec<(&'a str, &'a str)> {
    if headers.len() > limits.max_headers {
        *truncated = true;
    }
    let short = limits.max_short_text_bytes;
    (headers.iter().take(limits.max_headers))
        .map(|(name, value)| {
            (
                prefix(name, short, truncated),
                prefix(value, short, truncated),
            )
        })
        .collect()
}

/// The longest prefix of `text` within `max` bytes that ends on a character
/// boundary.
fn prefix<'a>(text: &'a str, max: usize, truncated: &mut bool) -> &'a str {
    if text.len() <= max {
        return text;
    }
    *truncated = true;
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_first_error_before_cause() {
        let mut root = ProviderError::message("root").with_cause(
            ProviderError::message("cause").with_cause(ProviderError::message("cause.cause")),
        );
        root.error = Some(Box::new(
            ProviderError::message("error").with_provider("openrouter"),
        ));
        let flat = flatten(&root, 7, &Limits::default());
        let order: Vec<_> = flat
            .levels
            .iter()
            .map(|l| (l.message.as_str(), l.depth))
            .collect();
        assert_eq!(
            order,
            [("root", 0), ("error", 1), ("cause", 1), ("cause.cause", 2)]
        );
        assert_eq!(flat.provider.as_deref(), Some("openrouter"));
        assert_eq!(flat.now_ms, 7);
        assert!(!flat.truncated);
    }

    #[test]
    fn cuts_long_text_on_char_boundaries() {
        let limits = Limits {
            max_message_bytes: 5,
            ..Limits::default()
        };
        // "é" is two bytes: a cut at byte 5 would split the third one.
        let flat = flatten(&ProviderError::message("ééé"), 0, &limits);
        assert_eq!(flat.levels[0].message, "éé");
        assert!(flat.truncated);
    }

    #[test]
    fn deep_chains_are_bounded() {
        let mut error = ProviderError::message("bottom");
        for i in 0..10_000 {
            error = ProviderError::message(format!("level {i}")).with_cause(error);
        }
        let flat = flatten(&error, 0, &Limits::default());
        assert_eq!(flat.levels.len(), Limits::default().max_levels);
        assert!(flat.truncated);
        // Dropping a 10,000-deep Box chain recursively would overflow the
        // stack; unlink it iteratively.
        let mut next = error.cause.take();
        while let Some(mut level) = next {
            next = level.cause.take();
        }
    }

    #[test]
    fn too_many_headers_are_cut() {
        let mut error = ProviderError::message("x");
        for i in 0..100 {
            error = error.with_header(format!("h{i}"), "v");
        }
        let flat = flatten(&error, 0, &Limits::default());
        assert_eq!(
            flat.levels[0].headers.lines().count(),
            Limits::default().max_headers
        );
        assert!(flat.truncated);
    }

    #[test]
    fn header_block_cannot_be_forged() {
        let error = ProviderError::message("x")
            .with_header("Retry-After", "30")
            .with_header("x-evil", "1\r\nretry-after-ms: 1");
        let flat = flatten(&error, 0, &Limits::default());
        assert_eq!(
            flat.levels[0].headers,
            "Retry-After: 30\nx-evil: 1  retry-after-ms: 1\n"
        );
    }
}
