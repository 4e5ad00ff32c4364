//! Replay: the example incident traces against their golden outputs, a
//! second policy against the default, bad traces, unrecorded calls, and
//! recorded gateway traffic replayed faithfully.

use crate::harness;
use crate::support::guests;
use crate::upstream;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use failover::gateway::ClientKeys;
use failover::replay::{replay, Decision, ReplayOptions, Trace, Unrecorded};
use harness::*;
use upstream::Behaviour;

fn failover() -> Command {
    crate::support::binary::failover()
}

fn traces() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/traces");
    let mut traces: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.to_string_lossy().ends_with(".jsonl")
                && !p.to_string_lossy().ends_with(".expected.jsonl")
        })
        .collect();
    traces.sort();
    traces
}

fn golden(trace: &Path) -> PathBuf {
    trace.with_extension("").with_extension("expected.jsonl")
}

fn replayed(trace: &Path, unrecorded: Unrecorded) -> failover::replay::Replay {
    let parsed = Trace::read(trace, false).unwrap();
    replay(
        &parsed,
        trace,
        policy(),
        &ReplayOptions {
            unrecorded,
            ..ReplayOptions::default()
        },
        |_, _| {},
    )
    .unwrap()
}

#[test]
fn every_example_incident_replays_to_its_golden_output() {
    let traces = traces();
    assert_eq!(traces.len(), 18, "{traces:?}");
    for trace in traces {
        let expected = std::fs::read_to_string(golden(&trace)).unwrap();
        let actual = replayed(&trace, Unrecorded::Error).json_lines().join("\n") + "\n";
        assert_eq!(actual, expected, "{}", trace.display());
    }
}

#[test]
fn the_incidents_show_what_they_are_about() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/traces");
    let run = |name: &str| replayed(&dir.join(format!("{name}.jsonl")), Unrecorded::Error);
    let served = |r: &failover::replay::Replay| -> Vec<(String, String)> {
        r.decisions
            .iter()
            .filter_map(|d| match d {
                Decision::Served { model, profile, .. } => Some((model.clone(), profile.clone())),
                _ => None,
            })
            .collect()
    };
    // A context overflow stops the run: no fallback call at all.
    let overflow = run("context-overflow");
    assert!(overflow.decisions.iter().any(
        |d| matches!(d, Decision::Failed { error, .. } if error == "stopped:context_overflow")
    ));
    assert!(!overflow
        .decisions
        .iter()
        .any(|d| matches!(d, Decision::Attempt { model, .. } if model.starts_with("openai"))));
    // The user's pinned model fails loudly, never answered by the fallback.
    let pinned = run("user-pinned-outage");
    assert!(served(&pinned).is_empty());
    assert!(!pinned
        .decisions
        .iter()
        .any(|d| matches!(d, Decision::Attempt { model, .. } if model.starts_with("openai"))));
    // Billing: the backup key carries on while the account is disabled.
    let billing = run("billing-exhaustion");
    assert_eq!(served(&billing)[1].1, "openai:backup");
    assert_eq!(
        served(&billing)[2].1,
        "openai:work",
        "back after the 5 h disable"
    );
    // The storm: each run rotates at most once before falling back (F-6.7).
    let storm = run("rate-limit-storm");
    let first_run_openai = storm
        .decisions
        .iter()
        .filter(|d| matches!(d, Decision::Attempt { request: 1, model, .. } if model == "openai/gpt-4o"))
        .count();
    assert_eq!(first_run_openai, 2);
    assert_eq!(served(&storm).last().unwrap().1, "openai:k1");
    // Every call of every example was in the recording.
    for name in [
        "rate-limit-storm",
        "overload-wave",
        "billing-exhaustion",
        "openrouter-provider-errors",
        "subscription-usage-limit",
    ] {
        assert_eq!(run(name).unrecorded, 0, "{name}");
    }
}

/// The (model, profile) each request was served by, by request id.
fn served_by(replay: &failover::replay::Replay) -> Vec<(u64, String, String)> {
    replay
        .decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Served {
                request,
                model,
                profile,
                ..
            } => Some((*request, model.clone(), profile.clone())),
            _ => None,
        })
        .collect()
}

/// The models request `id` called, in order.
fn attempted(replay: &failover::replay::Replay, id: u64) -> Vec<String> {
    replay
        .decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Attempt { request, model, .. } if *request == id => Some(model.clone()),
            _ => None,
        })
        .collect()
}

fn final_line<'a>(
    replay: &'a failover::replay::Replay,
    kind: &str,
    id: &str,
) -> &'a serde_json::Value {
    replay
        .profiles
        .iter()
        .chain(&replay.sessions)
        .find(|line| line["kind"] == kind && line["id"] == id)
        .unwrap_or_else(|| panic!("no final {kind} {id}"))
}

const A: &str = "anthropic/claude-sonnet-4";
const O: &str = "openai/gpt-4o";
const T0: u64 = 1_767_225_600_000;

#[test]
fn the_project_rules_show_in_their_incidents() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/traces");
    let path = |name: &str| dir.join(format!("{name}.jsonl"));
    let run = |name: &str| replayed(&path(name), Unrecorded::Error);

    // F-12.1: a timeout tries the provider's next key before the next model.
    let timeouts = run("timeout-rotation");
    assert_eq!(served_by(&timeouts)[0], (1, A.into(), "anthropic:b".into()));
    assert_eq!(
        attempted(&timeouts, 2),
        [A, A, O],
        "one rotation, then the next model"
    );

    // F-8.2: a billing disable hours away is never probed; near its end it is.
    let billing = run("billing-probe-near-expiry");
    assert!(attempted(&billing, 1).iter().all(|m| m == O));
    assert!(attempted(&billing, 2).iter().all(|m| m == O));
    assert_eq!(served_by(&billing)[2], (3, A.into(), "anthropic:a".into()));

    // F-12.2: the override re-probes the primary once per interval.
    let reprobe = run("primary-reprobe");
    assert_eq!(attempted(&reprobe, 1), [O], "inside the interval: no probe");
    assert_eq!(
        attempted(&reprobe, 2),
        [A, O],
        "one probe, then the override"
    );
    assert_eq!(served_by(&reprobe)[2].1, A, "the probe answered");
    assert!(final_line(&reprobe, "session", "chat-1")
        .get("modelOverride")
        .is_none());

    // A silent provider moves to the next model, not its next key: one
    // attempt deadline, not two. F-12.3: after two hangs the model is
    // skipped, then a trial decides.
    let slow = run("slow-target");
    assert_eq!(attempted(&slow, 1), [A, O]);
    let first = (slow.decisions.iter())
        .find_map(|d| match d {
            Decision::Served { request: 1, at, .. } => Some(*at),
            _ => None,
        })
        .unwrap();
    assert_eq!(first, T0 + 120_500);
    assert_eq!(attempted(&slow, 3), [O]);
    assert!(slow.decisions.iter().any(|d| matches!(
        d,
        Decision::Skip { request: 3, model, reason } if model == A && reason == "timeout"
    )));
    assert_eq!(served_by(&slow)[3].1, A);

    // F-12.6: a Retry-After reaching past the open cooldown blocks the
    // model to its end; the rate limit is the model's, so its window is.
    let extends = run("retry-after-extends");
    assert_eq!(
        final_line(&extends, "profile", "anthropic:a")["modelCooldowns"][0]["until"],
        T0 + 10_200 + 3_600_000
    );
    assert_eq!(attempted(&extends, 2), [O], "still cooling down at t+120 s");

    // F-12.5: the failed fallbacks' pins go with their model override.
    let pin = run("failed-fallback-pin");
    let session = final_line(&pin, "session", "chat-9");
    assert_eq!(session["authProfileOverride"], "anthropic:a");
    assert!(session.get("modelOverride").is_none());
}

/// Failures the reference's users report, each shown impossible by its
/// incident.
#[test]
fn the_reported_failures_do_not_happen_in_their_incidents() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/traces");
    let run = |name: &str| replayed(&dir.join(format!("{name}.jsonl")), Unrecorded::Error);

    assert_a_quota_worded_429_is_a_rate_limit(&run("quota-worded-throttle"));
    assert_a_long_retry_after_holds_no_request(&run("long-retry-after"));

    // F-6.9: the probe that succeeds clears the disable and its counters.
    let billing = run("billing-probe-near-expiry");
    let probed = final_line(&billing, "profile", "anthropic:a");
    assert_eq!(
        (&probed["disabledUntil"], &probed["errorCount"]),
        (&serde_json::Value::Null, &serde_json::json!(0))
    );
    // F-12.1, F-6.1: a plain timeout rotates the key and cools neither.
    let timeouts = run("timeout-rotation");
    for key in ["anthropic:a", "anthropic:b"] {
        let state = final_line(&timeouts, "profile", key);
        assert!(state["cooldownUntil"].is_null(), "{key}: {state}");
    }

    assert_a_stream_broken_after_content_is_a_timeout(&run("truncated-stream"));
    assert_each_model_cools_down_on_its_own(&run("per-model-cooldowns"));
}

/// F-12.9: DashScope's quota-worded 429 (in `quota`) is a rate limit, not
/// a billing disable: the key serves again 90 s later instead of hours.
fn assert_a_quota_worded_429_is_a_rate_limit(quota: &failover::replay::Replay) {
    let first = quota
        .json_lines()
        .into_iter()
        .find(|line| line.contains(r#""profile":"dashscope:a""#) && line.contains("attempt"))
        .expect("the throttled attempt");
    assert!(first.contains(r#""outcome":"rate_limit""#), "{first}");
    let qwen = "dashscope/qwen-max";
    assert_eq!(
        served_by(quota),
        [
            (1, qwen.into(), "dashscope:b".into()),
            (2, qwen.into(), "dashscope:a".into())
        ]
    );
    let key = final_line(quota, "profile", "dashscope:a");
    assert!(key["disabledUntil"].is_null(), "{key}");
}

/// F-12.10: a 36-hour Retry-After (in `long`) never holds a request: the
/// fallback answers at once; with nothing left the request fails at once,
/// naming the wait; the cooldown still runs the whole 36 hours.
fn assert_a_long_retry_after_holds_no_request(long: &failover::replay::Replay) {
    assert_eq!(served_by(long), [(1, O.into(), "openai:a".into())]);
    let lines = long.json_lines();
    let line_of = |kind: &str| {
        let tag = format!(r#""kind":"{kind}""#);
        lines.iter().find(|l| l.contains(&tag)).unwrap().clone()
    };
    let (served, failed) = (line_of("served"), line_of("failed"));
    assert!(
        served.contains(&format!(r#""at":{}"#, T0 + 870)),
        "{served}"
    );
    assert!(
        failed.contains(&format!(r#""at":{}"#, T0 + 100_000)),
        "{failed}"
    );
    assert!(failed.contains("ready in ~36 h"), "{failed}");
    assert_eq!(
        final_line(long, "profile", "anthropic:a")["modelCooldowns"][0]["until"],
        T0 + 70 + 36 * 3_600_000
    );
}

/// F-12.12: a stream the provider cut or stalled after its first content
/// (in `truncated`) was served, then broke: the attempt's timeout, never a
/// success — `lastUsed` stays at the one stream that completed, and the key
/// is not cooled.
fn assert_a_stream_broken_after_content_is_a_timeout(truncated: &failover::replay::Replay) {
    let broken: Vec<u64> = (truncated.decisions.iter())
        .filter_map(|d| match d {
            Decision::Broken {
                request, reason, ..
            } if reason == "timeout" => Some(*request),
            _ => None,
        })
        .collect();
    assert_eq!(broken, [1, 3]);
    let key = || "anthropic:a".to_owned();
    assert_eq!(
        served_by(truncated),
        [
            (1, A.into(), key()),
            (2, A.into(), key()),
            (3, A.into(), key())
        ]
    );
    let key = final_line(truncated, "profile", "anthropic:a");
    assert_eq!(key["lastUsed"], T0 + 20_380, "{key}");
    assert_eq!(key["state"], "ok", "{key}");
}

/// F-12.11 (in `models`): gpt-4o-mini's rate limit while gpt-4o cools down
/// opens mini's own window, so the same key serves gpt-4.1 next; a success
/// on mini later leaves gpt-4o's window running.
fn assert_each_model_cools_down_on_its_own(models: &failover::replay::Replay) {
    let (mini, gpt41) = ("openai/gpt-4o-mini", "openai/gpt-4.1");
    let key = "openai:a";
    assert_eq!(
        served_by(models),
        [
            (1, mini.into(), key.into()),
            (2, gpt41.into(), key.into()),
            (3, mini.into(), key.into())
        ]
    );
    let state = final_line(models, "profile", key);
    assert!(state["cooldownUntil"].is_null(), "{state}");
    assert_eq!(
        state["modelCooldowns"],
        serde_json::json!([{"model": O, "reason": "rate_limit", "until": T0 + 90 + 600_000}])
    );
}

#[test]
fn a_replay_sees_other_processes_changes_and_the_recorded_settings() {
    // F-12.4.
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/traces/external-state-change.jsonl");
    let with = replayed(&path, Unrecorded::Error);
    assert!(with.decisions.iter().any(|d| matches!(
        d,
        Decision::State { profile: Some(p), .. } if p == "anthropic:a"
    )));
    assert_eq!(served_by(&with)[1], (2, A.into(), "anthropic:b".into()));
    // Without the state line the replay decides on a state the live
    // gateway never had.
    let dir = tempfile::tempdir().unwrap();
    let stripped = dir.path().join("stripped.jsonl");
    let text: String = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter(|line| !line.contains(r#""type":"state""#))
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(&stripped, text).unwrap();
    let without = replayed(&stripped, Unrecorded::Error);
    assert_eq!(served_by(&without)[1], (2, A.into(), "anthropic:a".into()));
    // The recorded retry-wait cap (0) is replayed: request 3 fails at once;
    // a flag overrides it, and the wait serves it.
    assert!(with
        .decisions
        .iter()
        .any(|d| matches!(d, Decision::Failed { request: 3, .. })));
    let parsed = Trace::read(&path, false).unwrap();
    let waited = replay(
        &parsed,
        &path,
        policy(),
        &ReplayOptions {
            retry_wait_cap_ms: Some(60_000),
            ..ReplayOptions::default()
        },
        |_, _| {},
    )
    .unwrap();
    assert_eq!(served_by(&waited)[2], (3, A.into(), "anthropic:b".into()));
    let out = cli(&[
        "replay",
        path.to_str().unwrap(),
        "--retry-wait-cap-ms",
        "60000",
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("#3 served by"));
}

/// Replays `trace` with default options on a blocking thread (replay runs
/// its own runtime, which may not start inside a test's).
pub(crate) async fn replay_off_the_runtime(
    trace: Trace,
    path: PathBuf,
) -> failover::replay::Replay {
    tokio::task::spawn_blocking(move || {
        replay(
            &trace,
            &path,
            policy(),
            &ReplayOptions::default(),
            |_, _| {},
        )
        .unwrap()
    })
    .await
    .unwrap()
}

fn cli(args: &[&str]) -> Output {
    failover().args(args).output().unwrap()
}

#[test]
fn expect_compares_with_a_golden_and_prints_the_first_difference() {
    let trace = traces()
        .into_iter()
        .find(|t| t.ends_with("overload-wave.jsonl"))
        .unwrap();
    let good = cli(&[
        "replay",
        trace.to_str().unwrap(),
        "--expect",
        golden(&trace).to_str().unwrap(),
    ]);
    assert!(
        good.status.success(),
        "{}",
        String::from_utf8_lossy(&good.stdout)
    );
    let dir = tempfile::tempdir().unwrap();
    let altered = dir.path().join("altered.jsonl");
    let text = std::fs::read_to_string(golden(&trace))
        .unwrap()
        .replacen("openai:a", "openai:z", 1);
    std::fs::write(&altered, text).unwrap();
    let bad = cli(&[
        "replay",
        trace.to_str().unwrap(),
        "--expect",
        altered.to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(1));
    let out = String::from_utf8_lossy(&bad.stdout);
    assert!(
        out.contains("differs") && out.contains("line ") && out.contains("openai:z"),
        "{out}"
    );
}

#[test]
fn a_second_policy_is_compared_against_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("context-advances.wasm");
    std::fs::write(
        &module,
        guests::component("examples/policy-context-advances", &[]),
    )
    .unwrap();
    let trace = traces()
        .into_iter()
        .find(|t| t.ends_with("context-overflow.jsonl"))
        .unwrap();
    let out = cli(&[
        "replay",
        trace.to_str().unwrap(),
        "--against",
        module.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("the policies diverge") && text.contains("failover-context-advances"),
        "{text}"
    );
    assert!(
        text.contains("first divergence") && text.contains("differing decisions by kind"),
        "{text}"
    );
    assert!(text.contains("failed: 1"), "{text}");
    // The same module against itself does not diverge.
    let same = traces()
        .into_iter()
        .find(|t| t.ends_with("rate-limit-storm.jsonl"))
        .unwrap();
    let out = cli(&[
        "--policy",
        module.to_str().unwrap(),
        "replay",
        same.to_str().unwrap(),
        "--against",
        module.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("no divergence"));
}

#[test]
fn the_python_policy_replays_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("status-only-py.wasm");
    std::fs::write(&module, crate::policy::python::python_policy()).unwrap();
    let trace = |name: &str| traces().into_iter().find(|t| t.ends_with(name)).unwrap();
    // It cannot see a context overflow in a 400, so it decides otherwise.
    let overflow = trace("context-overflow.jsonl");
    let out = cli(&[
        "replay",
        overflow.to_str().unwrap(),
        "--against",
        module.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("the policies diverge") && text.contains("status-only-py"),
        "{text}"
    );
    // Against itself, whole: the same decisions.
    let storm = trace("rate-limit-storm.jsonl");
    let out = cli(&[
        "--policy",
        module.to_str().unwrap(),
        "replay",
        storm.to_str().unwrap(),
        "--against",
        module.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("no divergence"), "{text}");
}

#[test]
fn bad_traces_name_the_line_and_lenient_skips_them() {
    let source = traces()
        .into_iter()
        .find(|t| t.ends_with("billing-exhaustion.jsonl"))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.jsonl");
    let mut text = std::fs::read_to_string(&source).unwrap();
    text.push_str("{\"type\":\"request\",\"id\":99,\"at\":17672\n");
    text.push_str("not json at all\n");
    std::fs::write(&broken, &text).unwrap();
    let strict = cli(&["replay", broken.to_str().unwrap()]);
    assert_eq!(strict.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert!(
        stderr.contains("broken.jsonl: line 9") && stderr.contains("truncated"),
        "{stderr}"
    );
    let lenient = cli(&["replay", broken.to_str().unwrap(), "--lenient"]);
    assert!(lenient.status.success());
    assert!(String::from_utf8_lossy(&lenient.stdout).contains("2 bad trace line(s) skipped"));
    assert!(String::from_utf8_lossy(&lenient.stderr).contains("line 10 skipped"));

    let newer = dir.path().join("newer.jsonl");
    std::fs::write(
        &newer,
        r#"{"type":"header","version":4,"clockStart":0,"agent":"main","config":{}}"#,
    )
    .unwrap();
    let refused = cli(&["replay", newer.to_str().unwrap(), "--lenient"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("trace format version 4"));
}

#[test]
fn unrecorded_calls_are_reported_and_answered_as_asked() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("gap.jsonl");
    std::fs::write(
        &trace,
        concat!(
            r#"{"type":"header","version":1,"clockStart":1000,"agent":"main","config":{"agents":{"defaults":{"model":{"primary":"openai/gpt-4o"}}}},"profiles":[{"id":"openai:a","provider":"openai","type":"api_key"}]}"#,
            "\n",
            r#"{"type":"request","id":1,"at":1000,"model":"auto"}"#,
            "\n"
        ),
    )
    .unwrap();
    let error = replayed(&trace, Unrecorded::Error);
    assert_eq!(error.unrecorded, 1);
    assert!(error
        .decisions
        .iter()
        .any(|d| matches!(d, Decision::Failed { .. })));
    let success = replayed(&trace, Unrecorded::Success);
    assert!(success
        .decisions
        .iter()
        .any(|d| matches!(d, Decision::Served { .. })));
    let out = cli(&["replay", trace.to_str().unwrap(), "--unrecorded", "success"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("UNRECORDED"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_gateway_traffic_replays_faithfully_and_keeps_no_secrets() {
    let h = start_with("", ClientKeys::default(), Some(false)).await;
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    h.up.then(
        "claude-x",
        Behaviour::Status(529, Vec::new(), overloaded.into()),
    )
    .then(
        "claude-x",
        Behaviour::Status(529, Vec::new(), overloaded.into()),
    );
    h.up.then(
        "gpt-x",
        Behaviour::Status(
            429,
            vec![("retry-after", "1".into())],
            r#"{"error":{"message":"rate limit"}}"#.into(),
        ),
    );
    let mut live = Vec::new();
    for (model, session) in [
        ("auto", Some("s1")),
        ("auto", Some("s1")),
        ("openrouter/meta/llama-x", None),
        (FALLBACK, None),
    ] {
        let answer = h.chat(model, false, session).await;
        live.push((
            answer.status,
            answer.header("x-failover-model").to_owned(),
            answer.header("x-failover-profile").to_owned(),
        ));
    }
    let path = h.trace.clone().unwrap();
    let h = Arc::new(h);
    let text = std::fs::read_to_string(&path).unwrap();
    for (_, key) in PROFILES {
        assert!(!text.contains(key), "secret {key} in the trace");
    }
    assert!(
        !text.contains("\"content\""),
        "no content without --record-content"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let trace = Trace::read(&path, false).unwrap();
    assert_eq!(trace.requests.len(), 4);
    let replay = replay_off_the_runtime(trace, path).await;
    assert_eq!(replay.unrecorded, 0, "{}", replay.render());
    let mut outcomes = Vec::new();
    for decision in &replay.decisions {
        match decision {
            Decision::Served { model, profile, .. } => {
                outcomes.push((200, model.clone(), profile.clone()))
            }
            Decision::Failed { .. } => outcomes.push((0, String::new(), String::new())),
            _ => {}
        }
    }
    let live: Vec<_> = live
        .into_iter()
        .map(|(status, model, profile)| {
            if status == 200 {
                (200, model, profile)
            } else {
                (0, String::new(), String::new())
            }
        })
        .collect();
    assert_eq!(outcomes, live, "{}", replay.render());
    Arc::try_unwrap(h).ok().unwrap().stop().await;
}

/// Replays `trace` (recorded by `h`, which keeps serving meanwhile) and
/// checks that every call was recorded and that `model` served.
async fn replays_served_by(h: Harness, trace: Trace, path: PathBuf, model: &str) {
    let h = Arc::new(h);
    let replay = replay_off_the_runtime(trace, path).await;
    assert_eq!(replay.unrecorded, 0, "{}", replay.render());
    assert!(
        replay
            .decisions
            .iter()
            .any(|d| matches!(d, Decision::Served { model: m, .. } if m == model)),
        "{}",
        replay.render()
    );
    Arc::try_unwrap(h).ok().unwrap().stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alias_chain_is_recorded_resolved_and_replays_down_the_same_chain() {
    let h = start_with("", ClientKeys::default(), Some(false)).await;
    let down = r#"{"error":{"message":"overloaded"}}"#;
    h.up.then("gpt-x", Behaviour::Status(503, Vec::new(), down.into()))
        .then("gpt-x", Behaviour::Status(503, Vec::new(), down.into()));
    let live = h.chat("openai-first", false, None).await;
    assert_eq!(live.header("x-failover-model"), PRIMARY, "{}", live.text);
    let path = h.trace.clone().unwrap();
    let trace = Trace::read(&path, false).unwrap();
    assert_eq!(trace.requests[0].model, FALLBACK);
    assert_eq!(trace.requests[0].fallbacks, [PRIMARY]);
    replays_served_by(h, trace, path, PRIMARY).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_passed_over_for_a_feature_is_passed_over_in_replay_too() {
    let h = start_with("", ClientKeys::default(), Some(false)).await;
    let body = serde_json::json!({"model": "auto", "n": 2, "messages": [{"role": "user", "content": "hi"}]});
    let live = h
        .post("/v1/chat/completions", &body.to_string(), Some("s-n"))
        .await;
    assert_eq!(live.header("x-failover-model"), FALLBACK, "{}", live.text);
    let path = h.trace.clone().unwrap();
    let trace = Trace::read(&path, false).unwrap();
    assert_eq!(trace.requests[0].openai_only, ["field `n` above 1"]);
    replays_served_by(h, trace, path, FALLBACK).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_content_keeps_prompts_and_replies() {
    let h = start_with("", ClientKeys::default(), Some(true)).await;
    assert_eq!(h.chat("auto", false, None).await.status, 200);
    let text = std::fs::read_to_string(h.trace.clone().unwrap()).unwrap();
    assert!(
        text.contains("\"content\"") && text.contains("hello from claude-x"),
        "{text}"
    );
    for (_, key) in PROFILES {
        // The upstream echoes the key in its reply text; the key itself is
        // a test fixture, so only check the header line holds none.
        assert!(!text.lines().next().unwrap().contains(key));
    }
    // An Anthropic client's conversation is kept in the same shape, its
    // top-level system prompt first.
    let messages = serde_json::json!({"model": "auto", "max_tokens": 50, "system": "be brief",
        "messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(
        h.post("/v1/messages", &messages.to_string(), None)
            .await
            .status,
        200
    );
    let trace = Trace::read(&h.trace.clone().unwrap(), false).unwrap();
    let content = trace.requests[1].content.clone().expect("content kept");
    assert_eq!(
        content[0],
        serde_json::json!({"role": "system", "content": "be brief"})
    );
    assert_eq!(content[1]["content"], "hi");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_captures_what_another_process_changes_meanwhile() {
    // F-12.4: `failover profiles mark` (here: another store on the same
    // files, as another process has) cools a key while the gateway records.
    let h = start_with("", ClientKeys::default(), Some(false)).await;
    let first = h.chat("auto", false, None).await;
    assert_eq!(first.header("x-failover-profile"), "anthropic:a");
    let until = failover::time::now_ms() + 3_600_000;
    h.store
        .update_profile_usage("anthropic:a", |u| {
            Ok::<_, std::convert::Infallible>(failover::auth::Usage {
                cooldown_until: Some(until),
                cooldown_reason: Some(failover::auth::RecordedReason::RateLimit),
                error_count: 1,
                ..u.clone()
            })
        })
        .unwrap();
    let second = h.chat("auto", false, None).await;
    assert_eq!(second.header("x-failover-profile"), "anthropic:b");
    let path = h.trace.clone().unwrap();
    let trace = Trace::read(&path, false).unwrap();
    assert_eq!(
        trace.states.len(),
        1,
        "exactly the foreign change, none of the gateway's own: {:?}",
        trace.states
    );
    assert!(matches!(
        &trace.states[0].change,
        failover::replay::StateChange::Profile { profile, usage }
            if profile == "anthropic:a" && usage.cooldown_until == Some(until)
    ));
    assert!(
        trace.header.settings.is_some(),
        "the run settings are recorded"
    );
    let replayed = replay_off_the_runtime(trace, path).await;
    let profiles: Vec<String> = served_by(&replayed).into_iter().map(|s| s.2).collect();
    assert_eq!(
        profiles,
        ["anthropic:a", "anthropic:b"],
        "replay saw what the gateway saw"
    );
    h.stop().await;
}

#[test]
fn a_streams_end_is_replayed_when_the_clock_reaches_it() {
    // F-12.12: request 1's stream breaks with a rate limit 30 s in; request
    // 2, which arrived 10 s in, met a key nothing had cooled yet. A stream
    // the client left records nothing: no success, no failure.
    let header = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/traces/truncated-stream.jsonl"),
    )
    .unwrap()
    .lines()
    .next()
    .unwrap()
    .to_owned();
    let outcome = |request: u64, at: u64| {
        format!(
            r#"{{"type":"outcome","request":{request},"at":{at},"provider":"anthropic","model":"{A}","profile":"anthropic:a","latencyMs":300}}"#
        )
    };
    let limited = r#"{"provider":"anthropic","message":"{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Rate limited\"}}"}"#;
    let lines = [
        header,
        format!(r#"{{"type":"request","id":1,"at":{T0},"model":"auto","stream":true}}"#),
        outcome(1, T0),
        format!(
            r#"{{"type":"request","id":2,"at":{},"model":"auto","stream":true}}"#,
            T0 + 10_000
        ),
        outcome(2, T0 + 10_000),
        format!(
            r#"{{"type":"broken","request":2,"at":{},"provider":"anthropic","model":"{A}","profile":"anthropic:a"}}"#,
            T0 + 12_000
        ),
        format!(
            r#"{{"type":"broken","request":1,"at":{},"provider":"anthropic","model":"{A}","profile":"anthropic:a","error":{limited}}}"#,
            T0 + 30_000
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlap.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let replayed = replayed(&path, Unrecorded::Error);
    let key = || "anthropic:a".to_owned();
    assert_eq!(
        served_by(&replayed),
        [(1, A.into(), key()), (2, A.into(), key())]
    );
    let broken: Vec<_> = (replayed.decisions.iter())
        .filter_map(|d| match d {
            Decision::Broken {
                request,
                at,
                reason,
                ..
            } => Some((*request, *at, reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(broken, [(1, T0 + 30_000, "rate_limit".to_owned())]);
    let state = final_line(&replayed, "profile", "anthropic:a");
    assert!(state["lastUsed"].is_null(), "{state}");
    assert_eq!(state["modelCooldowns"][0]["model"], A, "{state}");
}
