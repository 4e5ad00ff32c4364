//! Tests of the module above.

use super::*;

const HEADER: &str =
    r#"{"type":"header","version":1,"clockStart":1000,"agent":"main","config":{}}"#;

fn parse(text: &str, lenient: bool) -> Result<Trace, TraceError> {
    Trace::parse(text.as_bytes(), Path::new("t.jsonl"), lenient)
}

#[test]
fn reads_a_trace_and_names_bad_lines() {
    let text = format!(
        "{HEADER}\n{}\n{}\n",
        r#"{"type":"request","id":1,"at":1000,"model":"auto"}"#,
        r#"{"type":"outcome","request":1,"at":1000,"provider":"openai","model":"openai/m","profile":"openai:a","error":{"status":429}}"#
    );
    let trace = parse(&text, false).unwrap();
    assert_eq!((trace.requests.len(), trace.outcomes.len()), (1, 1));
    let broken = format!("{text}{{\"type\":\"request\",\"id\":2,\"at\":");
    let error = parse(&broken, false).unwrap_err().to_string();
    assert!(error.contains("t.jsonl: line 4: truncated"), "{error}");
    let lenient = parse(&broken, true).unwrap();
    assert_eq!(lenient.skipped.len(), 1);
    assert_eq!(lenient.skipped[0].0, 4);
}

#[test]
fn state_lines_carry_a_profile_or_a_session() {
    let text = format!(
        "{HEADER}\n{}\n{}\n",
        r#"{"type":"state","at":1500,"profile":"openai:a","usage":{"cooldownUntil":9000,"cooldownReason":"rate_limit","errorCount":1}}"#,
        r#"{"type":"state","at":1600,"session":"s1","entry":{"modelOverride":"gpt-4o","providerOverride":"openai","modelOverrideSource":"user"}}"#
    );
    let trace = parse(&text, false).unwrap();
    assert_eq!(trace.states.len(), 2);
    assert!(matches!(
        &trace.states[0].change,
        StateChange::Profile { profile, usage } if profile == "openai:a" && usage.cooldown_until == Some(9000)
    ));
    assert!(matches!(
        &trace.states[1].change,
        StateChange::Session { session, entry } if session == "s1" && entry.model().as_deref() == Some("openai/gpt-4o")
    ));
    let bad = format!(
        "{HEADER}\n{}\n",
        r#"{"type":"state","at":1,"profile":"p:a"}"#
    );
    assert!(parse(&bad, false)
        .unwrap_err()
        .to_string()
        .contains("line 2"));
}

#[test]
fn an_outcome_before_its_request_names_its_line() {
    let text = format!(
        "{HEADER}\n{}\n",
        r#"{"type":"outcome","request":7,"at":0,"provider":"p","model":"p/m","profile":"p:a"}"#
    );
    let error = parse(&text, false).unwrap_err().to_string();
    assert!(
        error.contains("line 2") && error.contains("request 7"),
        "{error}"
    );
}

#[test]
fn newer_versions_and_missing_headers_are_refused() {
    let newer = parse(
        r#"{"type":"header","version":9,"clockStart":0,"agent":"main","config":{}}"#,
        true,
    )
    .unwrap_err()
    .to_string();
    assert!(
        newer.contains("version 9") && newer.contains(&format!("reads version {TRACE_VERSION}")),
        "{newer}"
    );
    let headless = parse(r#"{"type":"request","id":1,"at":0,"model":"auto"}"#, true)
        .unwrap_err()
        .to_string();
    assert!(
        headless.contains("line 1") && headless.contains("header"),
        "{headless}"
    );
}

#[test]
fn a_broken_stream_belongs_to_an_earlier_request_and_carries_a_readable_error() {
    let broken = r#"{"type":"broken","request":1,"at":1900,"provider":"openai","model":"openai/gpt-4o","profile":"openai:a","error":{"message":"cut","code":"ECONNRESET"}}"#;
    let request = r#"{"type":"request","id":1,"at":1500,"model":"auto"}"#;
    let trace = parse(&format!("{HEADER}\n{request}\n{broken}\n"), false).unwrap();
    assert_eq!(trace.broken.len(), 1);
    let error = trace.broken[0].failure().unwrap().unwrap();
    assert_eq!(error.code.as_deref(), Some("ECONNRESET"));
    let orphan = parse(&format!("{HEADER}\n{broken}\n"), false)
        .unwrap_err()
        .to_string();
    assert!(
        orphan.contains("line 2") && orphan.contains("request 1"),
        "{orphan}"
    );
}
