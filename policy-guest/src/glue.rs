//! The export glue every build of the default policy shares, whatever
//! contract version its bindings were generated from: each exported
//! function is the core function between two conversions. A macro rather
//! than code because each contract version's bindings are distinct types,
//! generated in the crate that exports them (`component` for the current
//! contract, `tests/fixtures/legacy-policy` for 0.4.0).

/// Implements `classifier`, `meta`, `profiles` and `runner` for `$policy`
/// with the default policy's core. Expects the generated `wit` (types),
/// `classifier`, `meta`, `profiles` and `runner` modules in scope, and
/// `Mirror` impls for `wit` (`policy_types::mirror_contract!(wit)`).
/// `$contract` is what `describe` says; `$batch` is any further item of
/// the classifier (`classify-batch`, from 0.5.0), and the items after
/// `runner` any further item of the runner (0.6.0's `plan-candidate`).
#[macro_export]
#[doc(hidden)]
macro_rules! default_policy_glue {
    ($policy:ident, $contract:expr, { $($batch:item)* } $(, runner { $($plan:item)* })?) => {
        use $crate::policy_types::Mirror as _;

        impl classifier::Guest for $policy {
            fn classify(report: wit::ErrorReport) -> wit::Classification {
                // The levels borrowed from the record, not converted into
                // an `ErrorReport`: see `classify_borrowed`.
                let mut levels = $crate::policy_types::inline::InlineVec::<
                    $crate::policy_types::packed::LevelRef<'_>,
                    { $crate::policy_types::packed::INLINE_LEVELS },
                >::new();
                levels.reserve(report.levels.len());
                for level in &report.levels {
                    levels.push($crate::policy_types::packed::LevelRef {
                        depth: level.depth,
                        status: level.status,
                        code: level.code.as_deref(),
                        message: &level.message,
                        headers: &level.headers,
                    });
                }
                $crate::classify_borrowed(report.provider.as_deref(), &levels, report.now_ms)
                    .mirror()
            }

            $($batch)*
        }

        impl meta::Guest for $policy {
            fn describe() -> wit::PolicyInfo {
                wit::PolicyInfo {
                    name: $crate::POLICY_NAME.into(),
                    version: $crate::POLICY_VERSION.into(),
                    contract: $contract.into(),
                }
            }
        }

        impl profiles::Guest for $policy {
            fn order_profiles(request: wit::OrderRequest) -> Vec<wit::RankedProfile> {
                $crate::profiles::order_profiles(&request.mirror()).mirror()
            }

            fn pin_profile(request: wit::PinRequest) -> wit::PinDecision {
                $crate::profiles::pin_profile(&request.mirror()).mirror()
            }

            fn record_failure(
                usage: wit::Usage,
                event: wit::FailureEvent,
                config: wit::CooldownConfig,
            ) -> wit::Usage {
                $crate::profiles::record_failure(&usage.mirror(), &event.mirror(), &config.mirror())
                    .mirror()
            }

            fn record_success(usage: wit::Usage, model: Option<String>, now_ms: u64) -> wit::Usage {
                $crate::profiles::record_success(&usage.mirror(), model.as_deref(), now_ms).mirror()
            }
        }

        impl runner::Guest for $policy {
            fn resolve_selection(request: wit::SelectionRequest) -> wit::Selection {
                $crate::runner::resolve_selection(&request.mirror()).mirror()
            }

            fn candidate_chain(request: wit::ChainRequest) -> wit::FallbackChain {
                $crate::runner::candidate_chain(&request.mirror()).mirror()
            }

            fn decide_candidate(request: wit::CandidateRequest) -> wit::CandidateDecision {
                $crate::runner::decide_candidate(&request.mirror()).mirror()
            }

            fn next_step(attempt: wit::FailedAttempt, config: wit::RotationConfig) -> wit::RunStep {
                $crate::runner::next_step(&attempt.mirror(), &config.mirror()).mirror()
            }

            fn model_gate(
                health: wit::ModelHealth,
                others_remain: bool,
                now_ms: u64,
            ) -> wit::GateDecision {
                let (gate, health) =
                    $crate::runner::model_gate(&health.mirror(), others_remain, now_ms);
                $crate::policy_types::GateDecision { gate, health }.mirror()
            }

            fn record_attempt_end(
                health: wit::ModelHealth,
                hung: bool,
                now_ms: u64,
            ) -> wit::ModelHealth {
                $crate::runner::record_attempt_end(&health.mirror(), hung, now_ms).mirror()
            }

            fn summarise(request: wit::SummaryRequest) -> wit::RunSummary {
                $crate::runner::summarise(
                    &request.attempts.mirror(),
                    &request.profiles.mirror(),
                    request.now_ms,
                )
                .mirror()
            }

            $($($plan)*)?
        }
    };
}
