//! The built-in conformance corpus: every exported function called on
//! representative inputs under production limits. A case passes when the
//! module answers without trapping and the answer is a valid decision —
//! well-formed, naming only the profiles and models it was given, with
//! times in range (the checks live in the call wrappers). Agreement with
//! the default policy is not asked: a module that decides differently passes.

use crate::provider_error::ProviderError;
use policy_types::{
    AttemptRecord, CandidateRequest, ChainRequest, FailedAttempt, ModelHealth, OverrideSource,
    ProfileBlock, RotationConfig, SelectionRequest, SelectionSource, SessionOverride,
    SummaryRequest,
};
use policy_types::{
    ConfiguredProfile, CooldownConfig, CredentialKind, FailureEvent, OrderRequest, PinRequest,
    PinSource, RankedProfile, RecordedReason, StoredProfile, Usage,
};

use super::error::PolicyError;
use super::module::Policy;

/// The corpus's clock: a fixed instant, so a report is reproducible.
const NOW: u64 = 1_767_225_600_000;
const MINUTE: u64 = 60_000;

/// A call of a case: `Ok` when the module answered with a valid decision.
pub type CaseCall = Box<dyn Fn(&Policy) -> Result<(), PolicyError> + Send + Sync>;

/// One case: its name and the call.
pub struct Case {
    /// What the case checks.
    pub name: String,
    /// The call.
    pub run: CaseCall,
}

fn case(
    name: impl Into<String>,
    run: impl Fn(&Policy) -> Result<(), PolicyError> + Send + Sync + 'static,
) -> Case {
    Case {
        name: name.into(),
        run: Box::new(run),
    }
}

/// Every case, in a stable order.
pub fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    classify_cases(&mut cases);
    profile_cases(&mut cases);
    runner_cases(&mut cases);
    cases
}

fn classify_cases(cases: &mut Vec<Case>) {
    let errors: Vec<(&str, ProviderError)> = vec![
        (
            "429 with retry-after",
            ProviderError::message("Rate limit reached")
                .with_status(429)
                .with_header("retry-after", "20"),
        ),
        (
            "529 overloaded",
            ProviderError::message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            )
            .with_status(529),
        ),
        (
            "402 credits",
            ProviderError::message("Your credit balance is too low").with_status(402),
        ),
        (
            "401 invalid key",
            ProviderError::message("Incorrect API key provided").with_status(401),
        ),
        (
            "context overflow",
            ProviderError::message("prompt is too long: 250000 tokens > 200000 maximum")
                .with_status(400),
        ),
        (
            "timeout code",
            ProviderError::message("socket hang up").with_code("ETIMEDOUT"),
        ),
        ("empty", ProviderError::default()),
        (
            "nested",
            ProviderError::message("request failed")
                .with_cause(ProviderError::message("Too many requests").with_status(429)),
        ),
    ];
    for (name, error) in errors {
        let error = error.with_provider("openai");
        cases.push(case(format!("classify: {name}"), move |p| {
            p.classify(&error, NOW).map(drop)
        }));
    }
}

fn stored(id: &str, usage: Usage) -> StoredProfile {
    StoredProfile {
        id: id.into(),
        provider: "openai".into(),
        kind: CredentialKind::ApiKey,
        expires: None,
        refreshable: false,
        usage,
    }
}

/// Three profiles: one fresh, one cooling down, one disabled.
fn three_profiles() -> Vec<StoredProfile> {
    vec![
        stored(
            "openai:a",
            Usage {
                last_used: Some(NOW - 5 * MINUTE),
                ..Usage::default()
            },
        ),
        stored(
            "openai:b",
            Usage {
                cooldown_until: Some(NOW + MINUTE),
                cooldown_reason: Some(RecordedReason::RateLimit),
                error_count: 1,
                last_failure_at: Some(NOW),
                ..Usage::default()
            },
        ),
        stored(
            "openai:c",
            Usage {
                disabled_until: Some(NOW + 5 * 60 * MINUTE),
                disabled_reason: Some(RecordedReason::Billing),
                error_count: 1,
                last_failure_at: Some(NOW),
                ..Usage::default()
            },
        ),
    ]
}

fn cooldowns() -> CooldownConfig {
    CooldownConfig {
        billing_backoff_ms: 5 * 60 * MINUTE,
        billing_backoff_ms_by_provider: vec![("openrouter".into(), 2 * 60 * MINUTE)],
        billing_max_ms: 24 * 60 * MINUTE,
        failure_window_ms: 24 * 60 * MINUTE,
    }
}

fn profile_cases(cases: &mut Vec<Case>) {
    for (name, explicit, configured) in [
        ("stored only", None, false),
        (
            "explicit order",
            Some(vec![
                "openai:c".to_owned(),
                "openai:a".to_owned(),
                "openai:nobody".to_owned(),
            ]),
            false,
        ),
        ("configured", None, true),
    ] {
        cases.push(case(format!("order-profiles: {name}"), move |p| {
            let configured = if configured {
                vec![ConfiguredProfile {
                    id: "openai:b".into(),
                    provider: "openai".into(),
                    mode: Some(CredentialKind::ApiKey),
                }]
            } else {
                Vec::new()
            };
            p.order_profiles(&OrderRequest {
                provider: "openai".into(),
                explicit_order: explicit.clone(),
                configured,
                stored: three_profiles(),
                model: Some("openai/gpt-4o".into()),
                now_ms: NOW,
            })
            .map(drop)
        }));
    }
    let ranked = || {
        vec![
            RankedProfile {
                id: "openai:a".into(),
                available: true,
                blocked_until: None,
            },
            RankedProfile {
                id: "openai:b".into(),
                available: false,
                blocked_until: Some(NOW + MINUTE),
            },
        ]
    };
    for (name, current, source, reset) in [
        ("no pin", None, None, false),
        (
            "auto pin on a blocked profile",
            Some("openai:b"),
            Some(PinSource::Auto),
            false,
        ),
        ("user pin", Some("openai:b"), Some(PinSource::User), false),
        (
            "after a reset",
            Some("openai:a"),
            Some(PinSource::Auto),
            true,
        ),
    ] {
        cases.push(case(format!("pin-profile: {name}"), move |p| {
            p.pin_profile(&PinRequest {
                ranked: ranked(),
                current: current.map(str::to_owned),
                source,
                pinned_at_compaction: Some(0),
                compaction_count: 1,
                session_reset: reset,
            })
            .map(drop)
        }));
    }
    // Every reason on a fresh profile and inside a window, with an ordinary
    // Retry-After; and the input outside policy authors tripped over: a
    // provider asking for a wait of centuries (the window must stay within
    // a week).
    let waits = RecordedReason::ALL
        .into_iter()
        .map(|reason| (reason, "", Some(30_000), None))
        .chain(
            [RecordedReason::RateLimit, RecordedReason::Billing].map(|reason| {
                (
                    reason,
                    " with an absurd retry-after",
                    Some(u64::MAX),
                    Some(u64::MAX),
                )
            }),
        );
    for (reason, what, retry_after_ms, reset_at_ms) in waits {
        for (state, usage) in [
            ("fresh", Usage::default()),
            ("inside a window", three_profiles().remove(1).usage),
        ] {
            cases.push(case(
                format!("record-failure: {}{what} ({state})", reason.as_str()),
                move |p| {
                    p.record_failure(
                        &usage,
                        &FailureEvent {
                            provider: "openai".into(),
                            reason,
                            model: Some("openai/gpt-4o".into()),
                            retry_after_ms,
                            reset_at_ms,
                            now_ms: NOW,
                        },
                        &cooldowns(),
                    )
                    .map(drop)
                },
            ));
        }
    }
    // An OAuth credential that expired and cannot be refreshed.
    cases.push(case(
        "order-profiles: an expired credential that cannot be refreshed",
        |p| {
            let mut stored = three_profiles();
            stored.push(StoredProfile {
                kind: CredentialKind::OAuth,
                expires: Some(NOW - MINUTE),
                refreshable: false,
                ..self::stored("openai:expired", Usage::default())
            });
            p.order_profiles(&OrderRequest {
                provider: "openai".into(),
                explicit_order: Some(vec!["openai:expired".into(), "openai:a".into()]),
                configured: Vec::new(),
                stored,
                model: Some("openai/gpt-4o".into()),
                now_ms: NOW,
            })
            .map(drop)
        },
    ));
    cases.push(case("record-success: after a cooldown", |p| {
        let usage = three_profiles().remove(1).usage;
        p.record_success(&usage, Some("openai/gpt-4o"), NOW)
            .map(drop)
    }));
}

const CHAIN: [&str; 3] = [
    "anthropic/claude-sonnet-4",
    "openai/gpt-4o",
    "google/gemini-2.5-pro",
];

fn chain() -> Vec<String> {
    CHAIN.iter().map(|m| (*m).to_owned()).collect()
}

fn runner_cases(cases: &mut Vec<Case>) {
    let overrides = [
        ("configured default", None),
        ("user override", Some(OverrideSource::User)),
        ("auto override", Some(OverrideSource::Auto)),
    ];
    for (name, source) in overrides {
        cases.push(case(format!("resolve-selection: {name}"), move |p| {
            p.resolve_selection(&SelectionRequest {
                configured_primary: Some(CHAIN[0].into()),
                session_override: source.map(|source| SessionOverride {
                    model: CHAIN[1].into(),
                    source: Some(source),
                    origin: Some(CHAIN[0].into()),
                }),
                ..SelectionRequest::default()
            })
            .map(drop)
        }));
    }
    cases.push(case(
        "resolve-selection: auto override due for a primary probe",
        |p| {
            p.resolve_selection(&SelectionRequest {
                configured_primary: Some(CHAIN[0].into()),
                session_override: Some(SessionOverride {
                    model: CHAIN[1].into(),
                    source: Some(OverrideSource::Auto),
                    origin: Some(CHAIN[0].into()),
                }),
                primary_probe_interval_ms: 5 * MINUTE,
                last_primary_probe_at: Some(NOW - 10 * MINUTE),
                now_ms: NOW,
                ..SelectionRequest::default()
            })
            .map(drop)
        },
    ));
    for source in SelectionSource::ALL {
        cases.push(case(format!("candidate-chain: {source:?}"), move |p| {
            p.candidate_chain(&ChainRequest {
                requested: CHAIN[1].into(),
                source,
                configured_primary: Some(CHAIN[0].into()),
                configured_fallbacks: chain()[1..].to_vec(),
                source_fallbacks: None,
                fallbacks_override: None,
            })
            .map(drop)
        }));
    }
    let blocked = |reason: RecordedReason| {
        (
            vec![RankedProfile {
                id: "openai:a".into(),
                available: false,
                blocked_until: Some(NOW + MINUTE),
            }],
            vec![ProfileBlock {
                profile: "openai:a".into(),
                reason,
                until: NOW + MINUTE,
            }],
        )
    };
    for reason in [
        RecordedReason::RateLimit,
        RecordedReason::Billing,
        RecordedReason::AuthPermanent,
        RecordedReason::Overloaded,
    ] {
        for primary in [true, false] {
            cases.push(case(
                format!("decide-candidate: {} (primary {primary})", reason.as_str()),
                move |p| {
                    let (ranked, blocks) = blocked(reason);
                    p.decide_candidate(&CandidateRequest {
                        primary,
                        sibling: !primary,
                        ranked,
                        blocks,
                        last_probe_at: None,
                        transient_probe_used: false,
                        has_fallbacks: true,
                        now_ms: NOW,
                    })
                    .map(drop)
                },
            ));
        }
    }
    cases.push(case("decide-candidate: available", |p| {
        p.decide_candidate(&CandidateRequest {
            primary: true,
            ranked: vec![RankedProfile {
                id: "openai:a".into(),
                available: true,
                blocked_until: None,
            }],
            now_ms: NOW,
            ..CandidateRequest::default()
        })
        .map(drop)
    }));
    let rotation = || RotationConfig {
        rate_limited_profile_rotations: 1,
        overloaded_profile_rotations: 1,
        overloaded_backoff_ms: 0,
    };
    for reason in RecordedReason::ALL {
        for (position, profiles_left) in [(0u32, 1u32), (1, 0), (2, 0)] {
            cases.push(case(
                format!(
                    "next-step: {} at {position} with {profiles_left} left",
                    reason.as_str()
                ),
                move |p| {
                    p.next_step(
                        &FailedAttempt {
                            reason,
                            aborted: false,
                            live_switch_to: None,
                            user_pinned_profile: false,
                            rotations: 0,
                            profiles_left,
                            chain: chain(),
                            position,
                        },
                        &rotation(),
                    )
                    .map(drop)
                },
            ));
        }
    }
    cases.push(case("next-step: live switch", move |p| {
        p.next_step(
            &FailedAttempt {
                reason: RecordedReason::Unknown,
                aborted: false,
                live_switch_to: Some(CHAIN[2].into()),
                user_pinned_profile: false,
                rotations: 0,
                profiles_left: 1,
                chain: chain(),
                position: 0,
            },
            &rotation(),
        )
        .map(drop)
    }));
    // A live switch to a model the run has already passed.
    cases.push(case(
        "next-step: live switch to an earlier candidate",
        move |p| {
            p.next_step(
                &FailedAttempt {
                    reason: RecordedReason::Unknown,
                    aborted: false,
                    live_switch_to: Some(CHAIN[0].into()),
                    user_pinned_profile: false,
                    rotations: 0,
                    profiles_left: 0,
                    chain: chain(),
                    position: 2,
                },
                &rotation(),
            )
            .map(drop)
        },
    ));
    let hang = ModelHealth {
        hangs: 1,
        last_hang_at: Some(NOW - MINUTE),
        ..ModelHealth::default()
    };
    let slow = ModelHealth {
        hangs: 2,
        last_hang_at: Some(NOW - 2 * MINUTE),
        slow_until: Some(NOW - MINUTE),
        trial_started_at: None,
    };
    let stale = ModelHealth {
        hangs: 2,
        last_hang_at: Some(NOW - 30 * 24 * 60 * MINUTE),
        slow_until: Some(NOW - 30 * 24 * 60 * MINUTE),
        trial_started_at: Some(NOW - 30 * 24 * 60 * MINUTE),
    };
    for (name, health) in [
        ("healthy", ModelHealth::default()),
        ("one hang", hang),
        ("slow spell over", slow),
        ("a month-old record", stale),
    ] {
        for others_remain in [true, false] {
            cases.push(case(
                format!("model-gate: {name} (others remain {others_remain})"),
                move |p| p.model_gate(&health, others_remain, NOW).map(drop),
            ));
        }
        for hung in [true, false] {
            cases.push(case(
                format!("record-attempt-end: {name} (hung {hung})"),
                move |p| p.record_attempt_end(&health, hung, NOW).map(drop),
            ));
        }
    }
    cases.push(case("summarise: every model rate-limited", |p| {
        p.summarise(&SummaryRequest {
            attempts: CHAIN
                .iter()
                .map(|m| AttemptRecord {
                    model: (*m).into(),
                    provider: m.split('/').next().unwrap_or_default().into(),
                    reason: RecordedReason::RateLimit,
                })
                .collect(),
            profiles: three_profiles(),
            now_ms: NOW,
        })
        .map(drop)
    }));
}
