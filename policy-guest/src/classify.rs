//! Classification of a whole (possibly nested) error report (spec §5).
//!
//! Levels arrive depth-first, outermost first. A level inherits the HTTP
//! status of the nearest outer level that has one, so a cause's text is read
//! in the light of the response it came with. The outermost level whose
//! reason rests on specific evidence wins — except context overflow, which
//! yields to any nested reason (F-5.10). When no level has specific evidence,
//! a context overflow found anywhere stands, else what the outermost status
//! implied.

use crate::body::{self, BodyFacts};
use crate::codes::Code;
use crate::retry_after;
use crate::rules::{self, Evidence, Family, LevelFacts, ProviderScope, TableSet};
use crate::signals;
use crate::text::{self, Bare};
use crate::trim::{trim, trim_end};
use policy_types::inline::InlineVec;
use policy_types::LevelRef;
use policy_types::{Classification, Detail, ErrorLevel, ErrorReport, Reason};

/// Statuses of enclosing levels kept without an allocation: deeper nesting
/// than this is rare (an SDK's wrapper around a cause or two).
const INLINE_ENCLOSING: usize = 4;

/// Provider ids of Google's APIs.
const GOOGLE_PROVIDERS: &[&str] = &["google", "gemini", "vertex"];
/// Provider ids that serve Anthropic's API.
const ANTHROPIC_PROVIDERS: &[&str] = &["anthropic"];
/// Provider ids of OpenAI's API.
const OPENAI_PROVIDERS: &[&str] = &["openai"];

/// Classifies one failed provider call.
pub fn classify(report: &ErrorReport) -> Classification {
    classify_levels(
        report.provider.as_deref(),
        report.levels.iter().map(ErrorLevel::borrowed),
        report.now_ms,
    )
}

/// Classifies a report given by its parts, its levels borrowed from
/// wherever they are kept: what [`classify`] answers for the same report.
///
/// The SDK's `classify` comes through here, its levels borrowed from the
/// record it was handed, so that a module holds one copy of the walk below
/// (each copy is ~5 KB of a module's code).
pub fn classify_borrowed(
    provider: Option<&str>,
    levels: &[LevelRef<'_>],
    now_ms: u64,
) -> Classification {
    classify_levels(provider, levels.iter().copied(), now_ms)
}

/// Classifies a report given by its parts. Generic so that [`classify`]
/// walks an [`ErrorReport`]'s levels without first copying them into a
/// list of [`LevelRef`] (natively, that copy was 1.4 % of a call).
fn classify_levels<'a>(
    provider: Option<&str>,
    levels: impl Iterator<Item = LevelRef<'a>> + Clone,
    now_ms: u64,
) -> Classification {
    let provider = provider_scope(provider);
    let mut walk = Walk::default();
    // The error's code is its first code, depth-first: a credential refused
    // for good (`deactivated_workspace`) decides from any depth.
    let first_code = levels
        .clone()
        .find_map(|level| level.code.filter(|c| !trim(c).is_empty()));
    if first_code.is_some_and(rules::names_revoked_credential) {
        walk.chosen = Some(Reason::AuthPermanent);
    }
    for level in levels {
        walk.take(&level, &provider, now_ms);
    }
    walk.finish()
}

/// The walk through a report's levels, depth-first: what has been read so
/// far.
#[derive(Default)]
struct Walk {
    /// (depth, status) of the levels enclosing the current one that had a
    /// status; a level inherits the innermost. Inline: in the sandbox each
    /// allocation is a call into the guest's allocator.
    enclosing: InlineVec<(u32, u16), INLINE_ENCLOSING>,
    first_implied: Option<Reason>,
    context_overflow: bool,
    chosen: Option<Reason>,
    retry_after_ms: Option<u64>,
    body_retry_ms: Option<u64>,
    anything_said: bool,
    no_error_details: bool,
    /// A catch-all format verdict waits on the first nested level with
    /// text: if that level is a body-less 400/422, the format verdict goes.
    format_pending: Option<u32>,
    format_cleared: bool,
}

/// A level's status as read: the one given (as a status, in the code, in
/// the body), else the one its text starts with.
struct LevelStatus {
    given: Option<u16>,
    from_text: Option<u16>,
}

impl LevelStatus {
    fn own(&self) -> Option<u16> {
        self.given.or(self.from_text)
    }
}

impl Walk {
    /// Reads one level.
    fn take(&mut self, level: &LevelRef<'_>, provider: &ProviderScope, now_ms: u64) {
        let message = trim(level.message);
        let has_code =
            (level.code.into_iter().chain(level.error_type)).any(|c| !trim(c).is_empty());
        self.anything_said |= !message.is_empty() || level.status.is_some() || has_code;
        let bare = text::bare(message);
        self.no_error_details |= bare == Some(Bare::NoErrorDetails);
        if self.retry_after_ms.is_none() {
            self.retry_after_ms = retry_after::from_headers(level.headers, now_ms);
        }
        if self.chosen == Some(Reason::Timeout) && refuses_certificate(level) {
            // A transport failure caused by a refused certificate (F-12.7).
            self.chosen = Some(Reason::TlsCertificate);
        }
        if self.chosen.is_some() {
            // The reason is settled; a later body matters only for a retry
            // delay that no header gave.
            if self.retry_after_ms.is_none() && self.body_retry_ms.is_none() {
                let leading = text::leading_status(message);
                self.body_retry_ms =
                    read_body(message, leading.is_some()).and_then(|b| b.retry_delay_ms);
            }
            return;
        }
        let leading = text::leading_status(message);
        let body = read_body(message, leading.is_some());
        let details = level.details.and_then(body::parse_details);
        if self.body_retry_ms.is_none() {
            self.body_retry_ms = [&body, &details]
                .into_iter()
                .find_map(|b| b.as_ref().and_then(|b| b.retry_delay_ms));
        }
        let status = level_status(level, body.as_ref(), leading);
        let inherited = self.enclose(level.depth, status.own());
        let signals = signals::scan(message);
        let says_something = status.own().is_some() || has_code || !signals.is_empty();
        if !message.is_empty() {
            let rest = leading.map_or(message, |lead| lead.rest);
            let status_here = status.own().or(inherited);
            self.settle_pending_format(level.depth, rest, status_here, says_something);
        }
        let codes = level_codes(level, [codes_of(&body), codes_of(&details)], provider);
        let facts = LevelFacts {
            status: status.own().or(inherited),
            status_from_text: status.from_text.is_some(),
            message,
            leading,
            bare,
            codes: &codes,
            signals,
            provider: *provider,
            upstream_body: body.as_ref().is_some_and(|b| b.upstream),
        };
        self.weigh(rules::classify_level(&facts), level.depth);
    }

    /// Enters a level at `depth` with `status`: the enclosing levels it is
    /// not inside are left; the status it inherits, if it has none.
    fn enclose(&mut self, depth: u32, status: Option<u16>) -> Option<u16> {
        while (self.enclosing.last()).is_some_and(|(at, _)| *at >= depth) {
            self.enclosing.pop();
        }
        let inherited = self.enclosing.last().map(|(_, status)| *status);
        if let Some(status) = status {
            self.enclosing.push((depth, status));
        }
        inherited
    }

    /// A pending format verdict meets a nested level with text: a
    /// body-less 400/422 clears it; a level that says anything keeps it.
    /// `rest` is the level's text after any status it starts with.
    fn settle_pending_format(
        &mut self,
        depth: u32,
        rest: &str,
        status: Option<u16>,
        says_something: bool,
    ) {
        if self.format_pending.is_none_or(|at| depth <= at) {
            return;
        }
        if matches!(status, Some(400 | 422)) && text::says_no_body(rest) {
            self.format_cleared = true;
            self.format_pending = None;
        } else if says_something {
            self.format_pending = None;
        }
    }

    /// Takes a level's verdict into the walk.
    fn weigh(&mut self, verdict: rules::Verdict, depth: u32) {
        match verdict {
            Some((Reason::ContextOverflow, _)) => self.context_overflow = true,
            Some((reason, Evidence::Specific)) => self.chosen = Some(reason),
            Some((reason, Evidence::Implied)) => {
                if self.first_implied.is_none() && reason == Reason::Format {
                    self.format_pending = Some(depth);
                }
                self.first_implied = self.first_implied.or(Some(reason));
            }
            None => {}
        }
    }

    /// The verdict of the whole walk.
    fn finish(self) -> Classification {
        let reason = (self.chosen)
            .or_else(|| self.context_overflow.then_some(Reason::ContextOverflow))
            .or((self.first_implied).filter(|r| *r != Reason::Format || !self.format_cleared));
        let detail = if !self.anything_said {
            Some(Detail::EmptyResponse)
        } else if self.no_error_details {
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
            retry_after_ms: self.retry_after_ms.or(self.body_retry_ms),
        }
    }
}

/// A level's status. Some SDKs put the HTTP status in the code (`"code":
/// 429`), many in front of the message (`429 {…}`, `HTTP 410: No body`).
fn level_status(
    level: &LevelRef<'_>,
    body: Option<&BodyFacts>,
    leading: Option<text::LeadingStatus<'_>>,
) -> LevelStatus {
    let given = level
        .status
        .or_else(|| level.code.and_then(|c| body::status_from_text(trim(c))))
        .or(body.and_then(|b| b.status));
    let from_text = given
        .is_none()
        .then(|| leading.map(|lead| lead.status))
        .flatten();
    LevelStatus { given, from_text }
}

/// The codes a body or details gave, if any.
fn codes_of(facts: &Option<BodyFacts>) -> &[String] {
    facts.as_ref().map_or(&[][..], |f| &f.codes[..])
}

/// A level's codes as evidence: its own code, its error type, then its
/// body's codes and its details', less those another provider family owns.
/// Sized once: growing it would be a second call into the allocator.
fn level_codes(level: &LevelRef<'_>, read: [&[String]; 2], provider: &ProviderScope) -> Vec<Code> {
    let given = level.code.into_iter().chain(level.error_type);
    let mut codes = Vec::with_capacity(
        usize::from(level.code.is_some())
            + usize::from(level.error_type.is_some())
            + read.iter().map(|codes| codes.len()).sum::<usize>(),
    );
    codes.extend(given.map(Code::read).filter(|c| provider.reads(c)));
    codes.extend(
        (read.iter().flat_map(|codes| codes.iter()))
            .map(|code| Code::read(code))
            .filter(|c| provider.reads(c)),
    );
    codes
}

/// Whether a level without an HTTP status names a certificate the client
/// refused, by its code or its text.
fn refuses_certificate(level: &LevelRef<'_>) -> bool {
    if level.status.is_some() {
        return false;
    }
    let by_code = level.code.is_some_and(|code| {
        crate::codes::lookup(code)
            == Some((Some(Reason::TlsCertificate), crate::codes::Weight::Specific))
    });
    by_code || signals::scan(level.message).has(crate::signals::Signal::CertificateRefused)
}

fn provider_scope(provider: Option<&str>) -> ProviderScope {
    let Some(provider) = provider.map(trim) else {
        return ProviderScope::default();
    };
    let bytes = provider.as_bytes();
    let contains = |name: &str| {
        bytes
            .windows(name.len())
            .any(|w| w.eq_ignore_ascii_case(name.as_bytes()))
    };
    let any_of = |names: &[&str]| names.iter().any(|name| contains(name));
    let family = if any_of(GOOGLE_PROVIDERS) {
        Family::Google
    } else if any_of(ANTHROPIC_PROVIDERS) {
        Family::Anthropic
    } else if any_of(OPENAI_PROVIDERS) {
        Family::OpenAi
    } else {
        Family::Other
    };
    ProviderScope {
        family: Some(family),
        tables: TableSet::of(provider),
    }
}

/// The message read as a provider's JSON error body, when it is one: the
/// whole message, or after a wrapper (`Error code: 400 - {…}`, `429 {…}`,
/// `Codex error: {…}`). A body quoted inside a sentence ("got status:
/// INTERNAL. {…"code":400…}") is only text: its codes and status are not
/// the response's.
fn read_body(message: &str, status_first: bool) -> Option<BodyFacts> {
    let body = body::parse(message)?;
    let prefix = trim_end(&message[..body.offset]);
    let wrapped = prefix.is_empty() || prefix.ends_with([':', '-']) || status_first;
    wrapped.then_some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A family's names are found anywhere in the trimmed provider id, in
    /// any case, or as the whole id, as its table says.
    #[test]
    fn provider_scope_finds_the_names_as_each_table_says() {
        const BALANCE: &str = "Moonshot, Kimi, xAI, Baichuan";
        let reference = |provider: &str| {
            let provider = provider.trim().to_ascii_lowercase();
            ["moonshot", "kimi", "xai", "baichuan"]
                .iter()
                .any(|name| provider.contains(name))
        };
        for provider in [
            "moonshot",
            "Moonshot",
            "MOONSHOTAI",
            "kimi",
            "kimi-k2",
            "xai",
            "XAI",
            "my-xai",
            "x",
            "xa",
            "xaix",
            "baichuan",
            "BaiChuan2",
            "openai",
            "anthropic",
            "",
            " ",
            " kimi ",
            "\u{a0}xai",
            "mkb",
            "bbaichuan",
            "moonshoT",
            "ｘai",
            "é-kimi",
        ] {
            let families = provider_scope(Some(provider)).tables.families();
            assert_eq!(
                families.contains(&BALANCE),
                reference(provider),
                "{provider:?}: {families:?}"
            );
        }
        let families = |provider| provider_scope(Some(provider)).tables.families();
        assert!(families(" OpenRouter ").contains(&"OpenRouter"));
        assert!(families("openrouter-x").is_empty());
        assert!(families("dashscope-intl")[0].starts_with("Alibaba"));
        assert_eq!(provider_scope(None), ProviderScope::default());
    }
}
