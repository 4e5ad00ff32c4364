//! Classification of a whole (possibly nested) error report (spec §5).
//!
//! Levels arrive depth-first, outermost first. A level inherits the HTTP
//! status of the nearest outer level that has one, so a cause's text is read
//! in the light of the response it came with. The outermost level whose
//! reason rests on specific evidence wins — except context overflow, which
//! yields to any nested reason (F-5.10). When no level has specific evidence,
//! a context overflow found anywhere stands, else what the outermost status
//! implied.

use crate::body;
use crate::model::{Classification, Detail, ErrorReport, Reason};
use crate::retry_after;
use crate::rules::{self, Evidence, LevelFacts};
use crate::signals;

/// What the provider says when it says nothing (F-5.1 `no_error_details`).
const NO_ERROR_DETAILS: &str = "unknown error (no error details in response)";

/// A stream wrapper's message when a stream ends without detail (F-5.5).
const BARE_UNKNOWN_ERROR: &str = "an unknown error occurred";

/// Classifies one failed provider call.
pub fn classify(report: &ErrorReport) -> Classification {
    let openrouter = report
        .provider
        .as_deref()
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("openrouter"));

    // (depth, status) of the levels enclosing the current one that had a
    // status; a level inherits the innermost.
    let mut enclosing: Vec<(u32, u16)> = Vec::new();
    let mut first_implied = None;
    let mut context_overflow = false;
    let mut chosen = None;
    let mut retry_after_ms = None;
    let mut body_retry_ms = None;
    let mut anything_said = false;
    let mut no_error_details = false;

    for level in &report.levels {
        let message = level.message.trim();
        let has_code = level.code.as_deref().is_some_and(|c| !c.trim().is_empty());
        anything_said |= !message.is_empty() || level.status.is_some() || has_code;
        no_error_details |= message.eq_ignore_ascii_case(NO_ERROR_DETAILS);
        if retry_after_ms.is_none() {
            retry_after_ms = retry_after::from_headers(&level.headers, report.now_ms);
        }
        if chosen.is_some() {
            // The reason is settled; a later body matters only for a retry
            // delay that no header gave.
            if retry_after_ms.is_none() && body_retry_ms.is_none() {
                body_retry_ms = body::parse(&level.message).and_then(|b| b.retry_delay_ms);
            }
            continue;
        }

        let body = body::parse(&level.message);
        if body_retry_ms.is_none() {
            body_retry_ms = body.as_ref().and_then(|b| b.retry_delay_ms);
        }
        // Some SDKs put the HTTP status in the code (`"code": 429`).
        let own_status = level
            .status
            .or_else(|| {
                level
                    .code
                    .as_deref()
                    .and_then(|c| body::status_from_text(c.trim()))
            })
            .or(body.as_ref().and_then(|b| b.status));
        while enclosing
            .last()
            .is_some_and(|(depth, _)| *depth >= level.depth)
        {
            enclosing.pop();
        }
        let inherited = enclosing.last().map(|(_, status)| *status);
        if let Some(status) = own_status {
            enclosing.push((level.depth, status));
        }

        let mut codes: Vec<&str> = level.code.as_deref().into_iter().collect();
        if let Some(body) = &body {
            codes.extend(body.codes.iter().map(String::as_str));
        }
        let facts = LevelFacts {
            status: own_status.or(inherited),
            codes: &codes,
            signals: signals::scan(message),
            openrouter,
            bare_unknown_error: is_bare_unknown_error(message),
        };
        match rules::classify_level(&facts) {
            Some((Reason::ContextOverflow, _)) => context_overflow = true,
            Some((reason, Evidence::Specific)) => chosen = Some(reason),
            Some((reason, Evidence::Implied)) => {
                first_implied = first_implied.or(Some(reason));
            }
            None => {}
        }
    }

    let reason = chosen
        .or_else(|| context_overflow.then_some(Reason::ContextOverflow))
        .or(first_implied);
    let detail = if !anything_said {
        Some(Detail::EmptyResponse)
    } else if no_error_details {
        Some(Detail::NoErrorDetails)
    } else if reason.is_none() {
        Some(Detail::Unclassified)
    } else {
        None
    };
    Classification {
        reason,
        failover: reason.is_some_and(Reason::advances_chain),
        detail,
        retry_after_ms: retry_after_ms.or(body_retry_ms),
    }
}

fn is_bare_unknown_error(message: &str) -> bool {
    let message = message.strip_suffix('.').unwrap_or(message);
    message.eq_ignore_ascii_case(BARE_UNKNOWN_ERROR)
}
