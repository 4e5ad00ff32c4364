//! The default classifier on a contract report.

use policy_types::LevelRef;

use super::convert::{detail_from_core, reason_from_core};
use crate::types::{Classification, ErrorLevel, ErrorReport, FailureReason};

/// The default policy's verdict on `report`.
///
/// Each level's headers become the `Name: value` block the core reads (a
/// line break inside a name or value becomes a space, see
/// [`policy_types::classify::push_header_text`]); the error type is
/// evidence like a code, the details like an error body.
pub fn classify(report: ErrorReport) -> Classification {
    let blocks: Vec<String> = report.levels.iter().map(header_block).collect();
    let levels: Vec<LevelRef<'_>> = report
        .levels
        .iter()
        .zip(&blocks)
        .map(|(level, headers)| LevelRef {
            depth: level.depth,
            status: level.status,
            code: level.code.as_deref(),
            error_type: level.error_type.as_deref(),
            param: level.param.as_deref(),
            message: &level.message,
            details: level.details.as_deref(),
            headers,
        })
        .collect();
    let verdict =
        policy_guest::classify_borrowed(report.provider.as_deref(), &levels, report.now_ms);
    let reason = verdict
        .reason
        .map_or(FailureReason::Unknown, reason_from_core);
    Classification {
        reason,
        detail: verdict.detail.map(detail_from_core),
        retry_after_ms: verdict.retry_after_ms,
        reset_at_ms: None,
    }
}

/// A level's headers as an HTTP/1.1 header block.
fn header_block(level: &ErrorLevel) -> String {
    let mut block = String::new();
    for (name, value) in &level.headers {
        for (text, separator) in [(name, ": "), (value, "\n")] {
            policy_types::classify::push_header_text(&mut block, text);
            block.push_str(separator);
        }
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(status: Option<u16>, message: &str, headers: &[(&str, &str)]) -> ErrorLevel {
        ErrorLevel {
            depth: 0,
            status,
            code: None,
            error_type: None,
            param: None,
            message: message.into(),
            details: None,
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).into(), (*v).into()))
                .collect(),
        }
    }

    fn report(levels: Vec<ErrorLevel>) -> ErrorReport {
        ErrorReport {
            provider: Some("openai".into()),
            model: None,
            levels,
            now_ms: 1_700_000_000_000,
        }
    }

    #[test]
    fn a_429_with_a_wait_is_a_rate_limit_with_that_wait() {
        let verdict = classify(report(vec![level(
            Some(429),
            "Rate limit reached",
            &[("Retry-After", "7")],
        )]));
        assert_eq!(verdict.reason, FailureReason::RateLimit);
        assert_eq!(verdict.retry_after_ms, Some(7_000));
        assert_eq!(verdict.detail, None);
    }

    #[test]
    fn an_error_type_without_a_code_is_read_as_one() {
        let mut typed = level(Some(400), "", &[]);
        typed.error_type = Some("context_length_exceeded".into());
        let bare = classify(report(vec![level(Some(400), "", &[])]));
        let with_type = classify(report(vec![typed]));
        assert_eq!(with_type.reason, FailureReason::ContextOverflow);
        assert_ne!(bare.reason, with_type.reason);
    }

    #[test]
    fn a_header_cannot_forge_another() {
        let forged = classify(report(vec![level(
            Some(429),
            "slow down",
            &[("x-evil", "1\r\nretry-after: 3600")],
        )]));
        assert_eq!(forged.retry_after_ms, None);
    }

    #[test]
    fn nothing_to_read_is_unknown_with_its_detail() {
        let verdict = classify(report(vec![level(None, "", &[])]));
        assert_eq!(verdict.reason, FailureReason::Unknown);
        assert!(verdict.detail.is_some());
    }
}
