//! Slow targets (F-12.3): a model whose attempts hang to the attempt
//! deadline twice in a row is skipped for a while, then one half-open
//! attempt decides. This is the model's health, kept apart from credential
//! state: a hung provider says nothing about a key.

use policy_types::{AttemptEnd, Gate, ModelHealth};

/// Hangs in a row that make a model slow.
pub const SLOW_AFTER_HANGS: u32 = 2;
/// Hangs count as "in a row" when each follows the previous within this:
/// two hangs an hour apart are bad luck, not a slow provider.
pub const HANG_WINDOW_MS: u64 = 5 * 60_000;
/// How long a slow model is skipped while other candidates remain: long
/// enough to spare every request behind it the full attempt timeout, short
/// enough that a recovered provider is back within a minute.
pub const SLOW_FOR_MS: u64 = 60_000;
/// A half-open attempt that has not ended after this long is presumed lost
/// (its process died): another may start. Longer than any attempt timeout
/// a provider is configured with by default (120 s).
pub const TRIAL_EXPIRY_MS: u64 = 5 * 60_000;

/// The gate for a model and the health to keep.
///
/// A slow model is skipped while other candidates remain; with nothing else
/// left it is attempted anyway (a slow answer beats none). Once its slow
/// spell is over, one attempt is let through as a trial and the others skip
/// it until the trial ends.
pub fn model_gate(health: &ModelHealth, others_remain: bool, now_ms: u64) -> (Gate, ModelHealth) {
    let Some(slow_until) = health.slow_until else {
        return (Gate::Open, *health);
    };
    let trial_running = health
        .trial_started_at
        .is_some_and(|at| now_ms.saturating_sub(at) < TRIAL_EXPIRY_MS);
    if now_ms < slow_until || trial_running {
        let gate = if others_remain {
            Gate::Skip
        } else {
            Gate::Open
        };
        return (gate, *health);
    }
    let trial = ModelHealth {
        trial_started_at: Some(now_ms),
        ..*health
    };
    (Gate::Trial, trial)
}

/// A model's health after an attempt ended as `end`: a hang or a server
/// error is a strike (F-12.3, F-12.7), an answer clears the record (see
/// [`record_attempt_end`]).
pub fn record_model_attempt(health: &ModelHealth, end: AttemptEnd, now_ms: u64) -> ModelHealth {
    record_attempt_end(health, end != AttemptEnd::Answered, now_ms)
}

/// A model's health after an attempt ended: `hung` when it ran to the
/// attempt deadline without an answer. Any answer — a reply or a fast error
/// — shows the model responds and clears its record; a hang following
/// another within [`HANG_WINDOW_MS`] extends the streak, and a streak of
/// [`SLOW_AFTER_HANGS`] makes the model slow for [`SLOW_FOR_MS`].
pub fn record_attempt_end(health: &ModelHealth, hung: bool, now_ms: u64) -> ModelHealth {
    if !hung {
        return ModelHealth::default();
    }
    let in_a_row = health
        .last_hang_at
        .is_some_and(|at| now_ms.saturating_sub(at) <= HANG_WINDOW_MS);
    let hangs = if in_a_row {
        health.hangs.saturating_add(1)
    } else {
        1
    };
    let slow_until = if hangs >= SLOW_AFTER_HANGS {
        Some(now_ms.saturating_add(SLOW_FOR_MS))
    } else {
        None
    };
    ModelHealth {
        hangs,
        last_hang_at: Some(now_ms),
        slow_until,
        trial_started_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_767_225_600_000;

    #[test]
    fn two_hangs_in_a_row_make_a_model_slow_for_a_minute() {
        let one = record_attempt_end(&ModelHealth::default(), true, NOW);
        assert_eq!(one.slow_until, None);
        assert_eq!(model_gate(&one, true, NOW).0, Gate::Open);
        let two = record_attempt_end(&one, true, NOW + 1_000);
        assert_eq!(two.slow_until, Some(NOW + 1_000 + SLOW_FOR_MS));
        assert_eq!(model_gate(&two, true, NOW + 2_000).0, Gate::Skip);
        assert_eq!(
            model_gate(&two, false, NOW + 2_000).0,
            Gate::Open,
            "nothing else left"
        );
    }

    #[test]
    fn hangs_far_apart_or_an_answer_start_over() {
        let one = record_attempt_end(&ModelHealth::default(), true, NOW);
        let later = record_attempt_end(&one, true, NOW + HANG_WINDOW_MS + 1);
        assert_eq!((later.hangs, later.slow_until), (1, None));
        assert_eq!(
            record_attempt_end(&one, false, NOW + 1),
            ModelHealth::default()
        );
    }

    #[test]
    fn one_half_open_trial_decides() {
        let slow = record_attempt_end(
            &record_attempt_end(&ModelHealth::default(), true, NOW),
            true,
            NOW,
        );
        let after = NOW + SLOW_FOR_MS;
        let (gate, trial) = model_gate(&slow, true, after);
        assert_eq!(gate, Gate::Trial);
        assert_eq!(trial.trial_started_at, Some(after));
        // Others skip it while the trial runs.
        assert_eq!(model_gate(&trial, true, after + 10).0, Gate::Skip);
        // The trial hangs: slow again at once.
        let again = record_attempt_end(&trial, true, after + 5_000);
        assert_eq!(again.slow_until, Some(after + 5_000 + SLOW_FOR_MS));
        // The trial answers: healthy.
        assert_eq!(
            record_attempt_end(&trial, false, after + 5_000),
            ModelHealth::default()
        );
        // A trial whose process died does not block for ever.
        assert_eq!(
            model_gate(&trial, true, after + TRIAL_EXPIRY_MS).0,
            Gate::Trial
        );
    }
}
