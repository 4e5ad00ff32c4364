//! Moving values between these types and the bindings each side of the
//! contract generates from the WIT (wasmtime's on the host, wit-bindgen's
//! in a guest): a [`Mirror`] trait implemented once here for the shapes
//! (options, lists, tuples, maps of counts), and a [`mirror!`] macro that
//! writes both directions for records and enums, field by field, from a
//! list of their names. A WIT record and its type here have the same
//! fields; an enum the same cases.

use std::collections::BTreeMap;

use crate::profiles::RecordedReason;

/// Converts a value into its twin on the other side of the contract.
pub trait Mirror<T> {
    /// The twin.
    fn mirror(self) -> T;
}

macro_rules! itself {
    ($($t:ty),*) => {$(
        impl Mirror<$t> for $t {
            fn mirror(self) -> $t {
                self
            }
        }
    )*};
}
itself!(bool, u16, u32, u64, String);

impl<A: Mirror<B>, B> Mirror<Option<B>> for Option<A> {
    fn mirror(self) -> Option<B> {
        self.map(Mirror::mirror)
    }
}

impl<A: Mirror<B>, B> Mirror<Vec<B>> for Vec<A> {
    fn mirror(self) -> Vec<B> {
        self.into_iter().map(Mirror::mirror).collect()
    }
}

impl<A: Mirror<C>, B: Mirror<D>, C, D> Mirror<(C, D)> for (A, B) {
    fn mirror(self) -> (C, D) {
        (self.0.mirror(), self.1.mirror())
    }
}

/// A WIT record that is one entry of a map of failure counts
/// (`failure-count`: a reason and a count).
pub trait CountEntry {
    /// The generated reason type.
    type Reason;
    /// The entry for `reason` and `count`.
    fn entry(reason: Self::Reason, count: u32) -> Self;
    /// Its reason and count.
    fn split(self) -> (Self::Reason, u32);
}

impl<W: CountEntry> Mirror<Vec<W>> for BTreeMap<RecordedReason, u32>
where
    RecordedReason: Mirror<W::Reason>,
{
    fn mirror(self) -> Vec<W> {
        self.into_iter()
            .map(|(reason, count)| W::entry(reason.mirror(), count))
            .collect()
    }
}

/// Entries of one reason are added together.
impl<W: CountEntry> Mirror<BTreeMap<RecordedReason, u32>> for Vec<W>
where
    W::Reason: Mirror<RecordedReason>,
{
    fn mirror(self) -> BTreeMap<RecordedReason, u32> {
        let mut counts = BTreeMap::new();
        for entry in self {
            let (reason, count) = entry.split();
            let total: &mut u32 = counts.entry(reason.mirror()).or_default();
            *total = total.saturating_add(count);
        }
        counts
    }
}

/// Both directions of [`Mirror`] between this crate's types and a module
/// of generated bindings, `wit`:
///
/// ```ignore
/// policy_types::mirror! { wit;
///     records { StoredProfile = StoredProfile { id, provider, kind, expires, refreshable, usage } }
///     enums { Reason = FailureReason { RateLimit, Overloaded, … } }
/// }
/// ```
#[macro_export]
macro_rules! mirror {
    ($wit:ident;
     records { $( $ty:ident = $wty:ident { $($field:ident),* $(,)? } )* }
     enums { $( $ety:ident = $ewty:ident { $($case:ident),* $(,)? } )* }
    ) => {
        $(
            impl $crate::Mirror<$wit::$wty> for $crate::$ty {
                fn mirror(self) -> $wit::$wty {
                    $wit::$wty { $($field: $crate::Mirror::mirror(self.$field)),* }
                }
            }
            impl $crate::Mirror<$crate::$ty> for $wit::$wty {
                fn mirror(self) -> $crate::$ty {
                    $crate::$ty { $($field: $crate::Mirror::mirror(self.$field)),* }
                }
            }
        )*
        $(
            impl $crate::Mirror<$wit::$ewty> for $crate::$ety {
                fn mirror(self) -> $wit::$ewty {
                    match self { $($crate::$ety::$case => $wit::$ewty::$case),* }
                }
            }
            impl $crate::Mirror<$crate::$ety> for $wit::$ewty {
                fn mirror(self) -> $crate::$ety {
                    match self { $($wit::$ewty::$case => $crate::$ety::$case),* }
                }
            }
        )*
    };
}

/// Every conversion of the contract, both ways, between this crate's types
/// and the module `wit` of bindings generated from `wit/policy.wit` — the
/// one place a side of the boundary needs (`policy_types::mirror_contract!(wit);`).
/// Records and enums go field by field and case by case; the two variants
/// and the count entries are spelled out. Bindings of an earlier contract
/// take `mirror_contract!(wit, before 0.7.0)` (0.6.0: a plan without its
/// `holds`) or `mirror_contract!(wit, before 0.6.0)` (without
/// `plan-candidate`'s types).
#[macro_export]
macro_rules! mirror_contract {
    ($wit:ident) => {
        $crate::mirror_contract!($wit, before 0.6.0);
        $crate::mirror! { $wit;
            records {
                CandidateFacts = CandidateFacts {
                    primary, sibling, last_probe_at, transient_probe_used, has_fallbacks,
                }
                CandidatePlan = CandidatePlan { ranked, decision, holds }
                PlanHold = PlanHold { until, reads_last_used }
            }
            enums {}
        }
    };
    // Bindings of 0.6.0: a plan says nothing of where else it holds, so
    // it holds at its own time only.
    ($wit:ident, before 0.7.0) => {
        $crate::mirror_contract!($wit, before 0.6.0);
        $crate::mirror! { $wit;
            records {
                CandidateFacts = CandidateFacts {
                    primary, sibling, last_probe_at, transient_probe_used, has_fallbacks,
                }
            }
            enums {}
        }
        impl $crate::Mirror<$wit::CandidatePlan> for $crate::CandidatePlan {
            fn mirror(self) -> $wit::CandidatePlan {
                $wit::CandidatePlan {
                    ranked: $crate::Mirror::mirror(self.ranked),
                    decision: $crate::Mirror::mirror(self.decision),
                }
            }
        }
        impl $crate::Mirror<$crate::CandidatePlan> for $wit::CandidatePlan {
            fn mirror(self) -> $crate::CandidatePlan {
                $crate::CandidatePlan {
                    ranked: $crate::Mirror::mirror(self.ranked),
                    decision: $crate::Mirror::mirror(self.decision),
                    holds: $crate::PlanHold::ONLY_NOW,
                }
            }
        }
    };
    // Bindings of a contract before 0.6.0, without `plan-candidate`'s types.
    ($wit:ident, before 0.6.0) => {
        $crate::mirror! { $wit;
            records {
                ErrorLevel = ErrorLevel { depth, status, code, message, headers }
                ErrorReport = ErrorReport { provider, levels, now_ms }
                Classification = Classification { reason, failover, detail, retry_after_ms }
                Usage = Usage {
                    last_used, cooldown_until, cooldown_reason, cooldown_model, disabled_until,
                    disabled_reason, error_count, failure_counts, last_failure_at,
                }
                StoredProfile = StoredProfile { id, provider, kind, expires, refreshable, usage }
                ConfiguredProfile = ConfiguredProfile { id, provider, mode }
                OrderRequest = OrderRequest {
                    provider, explicit_order, configured, stored, model, now_ms,
                }
                RankedProfile = RankedProfile { id, available, blocked_until }
                PinRequest = PinRequest {
                    ranked, current, source, pinned_at_compaction, compaction_count, session_reset,
                }
                PinDecision = PinDecision { profile, source, compaction_count }
                CooldownConfig = CooldownConfig {
                    billing_backoff_ms, billing_backoff_ms_by_provider, billing_max_ms,
                    failure_window_ms,
                }
                FailureEvent = FailureEvent {
                    provider, reason, model, retry_after_ms, reset_at_ms, now_ms,
                }
                SessionOverride = SessionOverride { model, source, origin }
                SelectionRequest = SelectionRequest {
                    configured_primary, agent_primary, cron_model, heartbeat, heartbeat_model,
                    session_override, primary_probe_interval_ms, last_primary_probe_at, now_ms,
                }
                Selection = Selection { model, source, clear_override, probe_primary }
                ChainRequest = ChainRequest {
                    requested, source, configured_primary, configured_fallbacks,
                    source_fallbacks, fallbacks_override,
                }
                FallbackChain = FallbackChain { candidates, strict }
                ProfileBlock = ProfileBlock { profile, reason, until }
                CandidateRequest = CandidateRequest {
                    primary, sibling, ranked, blocks, last_probe_at, transient_probe_used,
                    has_fallbacks, now_ms,
                }
                ModelHealth = ModelHealth { hangs, last_hang_at, slow_until, trial_started_at }
                GateDecision = GateDecision { gate, health }
                RotationConfig = RotationConfig {
                    rate_limited_profile_rotations, overloaded_profile_rotations,
                    overloaded_backoff_ms,
                }
                FailedAttempt = FailedAttempt {
                    reason, aborted, live_switch_to, user_pinned_profile, rotations,
                    profiles_left, chain, position,
                }
                AttemptRecord = AttemptRecord { model, provider, reason }
                SummaryRequest = SummaryRequest { attempts, profiles, now_ms }
                RunSummary = RunSummary { common_reason, ready_at }
            }
            enums {
                Reason = FailureReason {
                    RateLimit, Overloaded, Billing, Auth, AuthPermanent, Timeout, Format,
                    ModelNotFound, SessionExpired, ContextOverflow,
                }
                Detail = FailureDetail { EmptyResponse, NoErrorDetails, Unclassified }
                RecordedReason = RecordedReason {
                    RateLimit, Overloaded, Billing, Auth, AuthPermanent, Timeout, Format,
                    ModelNotFound, SessionExpired, ContextOverflow, Unknown,
                }
                PinSource = PinSource { Auto, User }
                SelectionSource = SelectionSource {
                    ConfiguredDefault, AgentPrimary, AutoOverride, UserOverride, LegacyOverride,
                    CronJob, Heartbeat,
                }
                OverrideSource = OverrideSource { Auto, User }
                Gate = Gate { Open, Trial, Skip }
                StopReason = StopReason { Aborted, ContextOverflow, Format, SessionExpired, Exhausted }
            }
        }

        // WIT's `oauth` is `Oauth` in generated Rust.
        impl $crate::Mirror<$wit::CredentialKind> for $crate::CredentialKind {
            fn mirror(self) -> $wit::CredentialKind {
                match self {
                    $crate::CredentialKind::OAuth => $wit::CredentialKind::Oauth,
                    $crate::CredentialKind::Token => $wit::CredentialKind::Token,
                    $crate::CredentialKind::ApiKey => $wit::CredentialKind::ApiKey,
                }
            }
        }
        impl $crate::Mirror<$crate::CredentialKind> for $wit::CredentialKind {
            fn mirror(self) -> $crate::CredentialKind {
                match self {
                    $wit::CredentialKind::Oauth => $crate::CredentialKind::OAuth,
                    $wit::CredentialKind::Token => $crate::CredentialKind::Token,
                    $wit::CredentialKind::ApiKey => $crate::CredentialKind::ApiKey,
                }
            }
        }

        impl $crate::mirror::CountEntry for $wit::FailureCount {
            type Reason = $wit::RecordedReason;
            fn entry(reason: $wit::RecordedReason, count: u32) -> Self {
                $wit::FailureCount { reason, count }
            }
            fn split(self) -> ($wit::RecordedReason, u32) {
                (self.reason, self.count)
            }
        }

        impl $crate::Mirror<$wit::CandidateDecision> for $crate::CandidateDecision {
            fn mirror(self) -> $wit::CandidateDecision {
                use $crate::Mirror as _;
                match self {
                    $crate::CandidateDecision::Attempt(p) => $wit::CandidateDecision::Attempt(p),
                    $crate::CandidateDecision::Probe { profile, transient } => {
                        $wit::CandidateDecision::Probe($wit::Probe { profile, transient })
                    }
                    $crate::CandidateDecision::Skip(r) => $wit::CandidateDecision::Skip(r.mirror()),
                }
            }
        }
        impl $crate::Mirror<$crate::CandidateDecision> for $wit::CandidateDecision {
            fn mirror(self) -> $crate::CandidateDecision {
                use $crate::Mirror as _;
                match self {
                    $wit::CandidateDecision::Attempt(p) => $crate::CandidateDecision::Attempt(p),
                    $wit::CandidateDecision::Probe(p) => $crate::CandidateDecision::Probe {
                        profile: p.profile,
                        transient: p.transient,
                    },
                    $wit::CandidateDecision::Skip(r) => $crate::CandidateDecision::Skip(r.mirror()),
                }
            }
        }

        impl $crate::Mirror<$wit::RunStep> for $crate::RunStep {
            fn mirror(self) -> $wit::RunStep {
                use $crate::Mirror as _;
                match self {
                    $crate::RunStep::RotateProfile(ms) => $wit::RunStep::RotateProfile(ms),
                    $crate::RunStep::Candidate(at) => $wit::RunStep::Candidate(at),
                    $crate::RunStep::Stop(why) => $wit::RunStep::Stop(why.mirror()),
                }
            }
        }
        impl $crate::Mirror<$crate::RunStep> for $wit::RunStep {
            fn mirror(self) -> $crate::RunStep {
                use $crate::Mirror as _;
                match self {
                    $wit::RunStep::RotateProfile(ms) => $crate::RunStep::RotateProfile(ms),
                    $wit::RunStep::Candidate(at) => $crate::RunStep::Candidate(at),
                    $wit::RunStep::Stop(why) => $crate::RunStep::Stop(why.mirror()),
                }
            }
        }
    };
}
