//! Limits, input bounds and instance reuse.

use failover::limits::{FUEL_PER_CALL, MAX_LEVELS, MAX_MESSAGE_BYTES};
use failover::report::flatten;
use failover::TrapKind;
use failover::{Limits, Policy, PolicyError, ProviderError, Reason};

use super::support::{classify_native, engine};

fn fresh_policy() -> Policy {
    Policy::default_policy(engine()).expect("loads")
}

fn rate_limited() -> ProviderError {
    ProviderError::message("Too many requests").with_status(429)
}

#[test]
fn warm_instances_are_reused_across_calls() {
    let policy = fresh_policy();
    let loaded = policy.stats();
    for now_ms in 0..5 {
        policy.classify(&rate_limited(), now_ms).unwrap();
    }
    let stats = policy.stats();
    assert_eq!(stats.instantiations, loaded.instantiations, "{stats:?}");
    assert_eq!(stats.calls, loaded.calls + 5);
    assert_eq!(stats.traps, 0);
}

#[test]
fn the_same_input_is_answered_once() {
    // Pure answers are kept by their inputs: the same error at the same
    // millisecond asks the module once; another error asks again.
    let policy = fresh_policy();
    let loaded = policy.stats();
    for _ in 0..5 {
        policy.classify(&rate_limited(), 7).unwrap();
    }
    assert_eq!(policy.stats().calls, loaded.calls + 1);
    let other = ProviderError::message("Overloaded").with_status(529);
    let verdict = policy.classify(&other, 7).unwrap();
    assert_eq!(verdict.reason, Some(Reason::Overloaded));
    assert_eq!(policy.stats().calls, loaded.calls + 2);
}

#[test]
fn a_trap_discards_the_instance_and_the_next_call_gets_a_fresh_one() {
    let policy = fresh_policy();
    let starving = Limits {
        fuel_per_call: 1_000,
        ..Limits::default()
    };
    policy.set_limits(starving);
    let before = policy.stats();
    // A long message needs far more than 1,000 units of fuel.
    let long = ProviderError::message("rate limit ".repeat(5_000));
    for _ in 0..2 {
        let error = policy.classify(&long, 0).unwrap_err();
        assert!(
            matches!(
                error,
                PolicyError::Trap {
                    kind: TrapKind::OutOfFuel,
                    ..
                }
            ),
            "{error:?}"
        );
    }
    let after = policy.stats();
    assert_eq!(after.traps, before.traps + 2);
    // Each trapped instance was dropped, so each call made a new one.
    assert_eq!(after.instantiations, before.instantiations + 2);

    policy.set_limits(Limits::default());
    let verdict = policy.classify(&long, 0).unwrap();
    assert_eq!(verdict.reason, Some(Reason::RateLimit));
    policy.classify(&long, 0).unwrap();
    assert_eq!(policy.stats().instantiations, after.instantiations + 1);
}

#[test]
fn a_memory_cap_below_the_module_needs_is_an_error_not_a_crash() {
    let tiny = Limits {
        max_memory_bytes: 64 * 1024,
        ..Limits::default()
    };
    let error = Policy::load(engine(), failover::policy::DEFAULT_POLICY, tiny).unwrap_err();
    assert!(matches!(error, PolicyError::Trap { .. }), "{error:?}");
}

#[test]
fn a_one_mebibyte_message_is_cut_and_classified() {
    let policy = fresh_policy();
    let mut message = "x".repeat(1024 * 1024);
    message.push_str(" rate limit");
    let error = ProviderError::message(message).with_status(500);
    let report = flatten(&error, 0, &policy.limits());
    assert!(report.truncated);
    assert_eq!(report.levels[0].message.len(), MAX_MESSAGE_BYTES);
    // The rate-limit text was past the cut, so the status decides.
    let verdict = policy.classify(&error, 0).unwrap();
    assert_eq!(verdict.reason, Some(Reason::ServerError));
    assert_eq!(verdict, classify_native(&report));
}

/// The largest input the host lets through, built to make the policy work
/// as hard as it can: every level full, dense with phrases that name no
/// reason on their own (so no level settles the verdict and every level is
/// scanned), and every header slot full.
fn worst_case_input() -> ProviderError {
    let dense = "limit quota model exceed context_ limit model ";
    let text: String = dense.repeat(MAX_MESSAGE_BYTES / dense.len() + 1);
    let mut error = ProviderError::message(text.clone());
    for _ in 1..MAX_LEVELS {
        error = ProviderError::message(text.clone()).with_cause(error);
    }
    for i in 0..64 {
        error = error.with_header(format!("x-header-{i}"), "v".repeat(1024));
    }
    error
}

/// A body-shaped variant: each level a JSON error body just under the size
/// that is parsed, so the JSON reader runs on every level too.
fn worst_case_bodies() -> ProviderError {
    let mut body =
        String::from(r#"{"error":{"type":"x","code":"y","details":[{"reason":"z"}],"pad":["#);
    while body.len() + 40 < policy_guest::MAX_JSON_BODY_BYTES {
        body.push_str("\"limit quota model exceed limit model\",");
    }
    body.push_str("0]}}");
    let mut error = ProviderError::message(body.clone());
    for _ in 1..MAX_LEVELS {
        error = ProviderError::message(body.clone()).with_cause(error);
    }
    error
}

#[test]
fn the_worst_allowed_input_fits_the_fuel_budget_with_a_wide_margin() {
    for (name, error) in [
        ("text", worst_case_input()),
        ("bodies", worst_case_bodies()),
    ] {
        let policy = fresh_policy();
        let verdict = policy.classify(&error, 0).unwrap();
        let report = flatten(&error, 0, &policy.limits());
        assert_eq!(verdict, classify_native(&report), "{name}");
        assert_eq!(
            verdict.reason, None,
            "{name}: no level should settle the verdict"
        );
        let used = policy.stats().max_fuel_used;
        // Fuel is deterministic, so this is a bound, not a timing assertion.
        assert!(
            used * 4 < FUEL_PER_CALL,
            "the worst case ({name}) used {used} fuel, over a quarter of the {FUEL_PER_CALL} budget"
        );
        eprintln!("worst-case fuel ({name}): {used}");
    }
}

#[test]
fn oversized_nesting_and_headers_are_cut_before_the_guest() {
    let policy = fresh_policy();
    let mut error = ProviderError::message("bottom").with_code("ETIMEDOUT");
    for _ in 0..100 {
        error = ProviderError::message("wrapper").with_cause(error);
    }
    let report = flatten(&error, 0, &policy.limits());
    assert_eq!(report.levels.len(), MAX_LEVELS);
    // The ETIMEDOUT level was beyond the bound, so nothing names the failure.
    let verdict = policy.classify(&error, 0).unwrap();
    assert_eq!(verdict.reason, None);
}
