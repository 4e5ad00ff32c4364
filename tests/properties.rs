//! The fuzz targets' invariants (`fuzz/`), briefly and on stable: for
//! provider errors built from the shapes providers and client libraries
//! use, and for arbitrary text, nothing panics; the native core and the
//! embedded component classify alike; a verdict's `failover` flag follows
//! from its reason. A few hundred cases per property: the fuzzers run the
//! millions. And one the gate only samples: `plan-candidate` answers as
//! `order-profiles` then `decide-candidate`, natively and in the component.

use std::sync::OnceLock;

use failover::auth::{CredentialKind, OrderRequest, RecordedReason, StoredProfile, Usage};
use failover::config::Config;
use failover::plan_by_two_calls;
use failover::replay::trace::Trace;
use failover::report::flatten;
use failover::runner::CandidateFacts;
use failover::{Policy, PolicyEngine, ProviderError, Reason};
use proptest::prelude::*;
use serde_json::{json, Value};

fn policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| Policy::default_policy(&PolicyEngine::new().unwrap()).unwrap())
}

/// Phrases and bodies providers send, to be cut and combined.
const PIECES: &[&str] = &[
    "Rate limit reached for requests",
    "You exceeded your current quota, please check your plan and billing details.",
    "Overloaded",
    "This model's maximum context length is 8192 tokens",
    "invalid x-api-key",
    "The model `gpt-9` does not exist",
    "Your credit balance is too low to access the Anthropic API.",
    "Request timed out.",
    "ECONNRESET",
    "socket hang up",
    "Resource has been exhausted (e.g. check quota).",
    "Servicio no disponible temporalmente",
    "请求过于频繁",
    r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    r#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}"#,
    "<html><body>502 Bad Gateway</body></html>",
    "429 ",
    "",
];

fn message() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(prop::sample::select(PIECES), 0..4).prop_map(|p| p.join(" ")),
        ".{0,80}",
    ]
}

fn headers() -> impl Strategy<Value = Value> {
    let value = prop_oneof![
        Just("120".to_owned()),
        Just("1.5".to_owned()),
        Just("-3".to_owned()),
        Just("1e30".to_owned()),
        Just("Wed, 21 Oct 2015 07:28:00 GMT".to_owned()),
        "[ -~]{0,20}",
    ];
    let name = prop::sample::select(
        &[
            "retry-after",
            "retry-after-ms",
            "x-ratelimit-reset-requests",
            "anthropic-ratelimit-requests-reset",
            "x-request-id",
        ][..],
    );
    prop::collection::btree_map(name, value, 0..3).prop_map(|h| serde_json::to_value(h).unwrap())
}

fn level() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop::sample::select(
            &[
                "openai",
                "anthropic",
                "google",
                "openrouter",
                "bedrock",
                "x",
            ][..],
        )),
        prop::option::of(prop_oneof![
            prop::sample::select(
                &[400u16, 401, 402, 403, 404, 408, 413, 429, 500, 502, 503, 529][..]
            ),
            100u16..=599,
        ]),
        prop::option::of(prop::sample::select(
            &[
                "rate_limit_exceeded",
                "insufficient_quota",
                "ETIMEDOUT",
                "context_length_exceeded",
                "?",
            ][..],
        )),
        message(),
        headers(),
    )
        .prop_map(|(provider, status, code, message, headers)| {
            json!({"provider": provider, "status": status, "code": code,
                   "message": message, "headers": headers})
        })
}

/// An error of up to three levels: a level, its `error` and its `cause`.
fn provider_error() -> impl Strategy<Value = Value> {
    (
        level(),
        prop::option::of(level()),
        prop::option::of(level()),
    )
        .prop_map(|(mut top, error, cause)| {
            if let Some(error) = error {
                top["error"] = error;
            }
            if let Some(cause) = cause {
                top["cause"] = cause;
            }
            top
        })
}

fn check(error: &ProviderError) -> Result<(), TestCaseError> {
    let flat = flatten(error, 1_767_225_600_000, &policy().limits());
    let native = policy_guest::classify(&flat.report);
    let component = policy().classify_report(flat).unwrap();
    prop_assert_eq!(&native, &component);
    prop_assert_eq!(
        native.failover,
        native.reason.is_some_and(Reason::advances_chain)
    );
    Ok(())
}

/// 2026-01-01 00:00 UTC.
const NOW: u64 = 1_767_225_600_000;

/// A stored profile of `openai` or `anthropic`, of any kind, maybe cooling
/// down or disabled for any reason, maybe expired.
fn stored_profile() -> impl Strategy<Value = StoredProfile> {
    let reason = prop::sample::select(vec![
        RecordedReason::RateLimit,
        RecordedReason::Overloaded,
        RecordedReason::Billing,
        RecordedReason::AuthPermanent,
        RecordedReason::Unknown,
    ]);
    let window = prop::option::of(-120_000i64..7_200_000);
    (
        (0..6u8, prop::bool::ANY, 0..3u8),
        (window.clone(), prop::option::of(reason.clone())),
        (window, prop::option::of(reason)),
        (
            prop::option::of(0..600_000u64),
            prop::option::of(-60_000i64..60_000),
            prop::bool::ANY,
        ),
    )
        .prop_map(
            |((name, other, kind), cooldown, disabled, (used, expires, refreshable))| {
                let provider = if other { "anthropic" } else { "openai" };
                let at = |offset: i64| NOW.saturating_add_signed(offset);
                StoredProfile {
                    id: format!("{provider}:{name}"),
                    provider: provider.into(),
                    kind: [
                        CredentialKind::OAuth,
                        CredentialKind::Token,
                        CredentialKind::ApiKey,
                    ][usize::from(kind)],
                    expires: expires.map(at),
                    refreshable,
                    usage: Usage {
                        last_used: used.map(|ago| NOW - ago),
                        cooldown_until: cooldown.0.map(at),
                        cooldown_reason: cooldown.1,
                        disabled_until: disabled.0.map(at),
                        disabled_reason: disabled.1,
                        ..Usage::default()
                    },
                }
            },
        )
}

/// An order for `openai`: any stored profiles, maybe an explicit order
/// naming some of them (and one that is not stored).
fn order() -> impl Strategy<Value = OrderRequest> {
    (
        prop::collection::vec(stored_profile(), 0..7),
        prop::option::of(prop::collection::vec(0..7u8, 0..5)),
    )
        .prop_map(|(stored, explicit)| OrderRequest {
            provider: "openai".into(),
            explicit_order: explicit
                .map(|names| names.into_iter().map(|n| format!("openai:{n}")).collect()),
            stored,
            model: Some("openai/gpt-4o".into()),
            now_ms: NOW,
            ..OrderRequest::default()
        })
}

fn facts() -> impl Strategy<Value = CandidateFacts> {
    (
        (
            prop::bool::ANY,
            prop::bool::ANY,
            prop::bool::ANY,
            prop::bool::ANY,
        ),
        prop::option::of(0..120_000u64),
    )
        .prop_map(
            |((primary, sibling, transient_probe_used, later_candidates), probe_ago)| {
                CandidateFacts {
                    primary,
                    sibling,
                    last_probe_at: probe_ago.map(|ago| NOW - ago),
                    transient_probe_used,
                    later_candidates,
                    ..CandidateFacts::default()
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn a_plan_is_the_order_then_the_decision_natively_and_in_the_component(
        order in order(),
        facts in facts(),
    ) {
        // The component's plan reads the blocks its own order gives; the
        // host's two calls read them from the stored usage: the same here.
        let one = policy().plan_candidate(&order, &facts)
            .map_err(|e| TestCaseError::fail(format!("{e}")))?;
        let two = plan_by_two_calls(policy(), &order, &facts)
            .map_err(|e| TestCaseError::fail(format!("{e}")))?;
        let native = crate::native::runner::plan_candidate(&order, &facts);
        prop_assert_eq!(&one, &two);
        prop_assert_eq!(&one, &native);
    }

    #[test]
    fn native_and_component_agree_on_provider_shaped_errors(value in provider_error()) {
        // Every generated shape is a valid error: it must be read.
        let error = ProviderError::from_json(&value)
            .map_err(|e| TestCaseError::fail(format!("{e}: {value}")))?;
        check(&error)?;
    }

    #[test]
    fn damaged_errors_configs_and_traces_never_panic_a_reader(
        value in provider_error(),
        cut in any::<prop::sample::Index>(),
        splice in "[\\]\\[{}\":,0-9a-z ]{0,4}",
    ) {
        // Real shapes, cut short or with a few JSON characters spliced in:
        // what a truncated body or a broken proxy sends.
        let text = value.to_string();
        let at = (0..=text.len()).filter(|i| text.is_char_boundary(*i)).nth(cut.index(text.len() + 1)).unwrap_or(0);
        for damaged in [text[..at].to_owned(), format!("{}{splice}{}", &text[..at], &text[at..])] {
            if let Ok(error) = ProviderError::from_json_str(&damaged) {
                check(&error)?;
            }
            let config = format!("{{ agents: {{ defaults: {{ model: {damaged} }} }} }}");
            let _ = Config::parse(&config, std::path::Path::new("prop.json5"));
            let trace = format!(
                "{{\"type\":\"header\",\"version\":1,\"clockStart\":0,\"agent\":\"main\",\"config\":{{}}}}\n{damaged}\n"
            );
            let _ = Trace::parse(trace.as_bytes(), std::path::Path::new("prop.jsonl"), true);
        }
    }

    #[test]
    fn arbitrary_text_never_panics_a_reader(text in ".{0,200}") {
        if let Ok(error) = ProviderError::from_json_str(&text) {
            check(&error)?;
        }
        check(&ProviderError::message(text.clone()).with_header("retry-after", text.clone()))?;
        let _ = Config::parse(&text, std::path::Path::new("prop.json5"));
        let _ = Trace::parse(text.as_bytes(), std::path::Path::new("prop.jsonl"), true);
    }
}
