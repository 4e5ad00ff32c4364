//! The `failover` binary, run as a real process.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The clock the sample's golden output was made at (HTTP-date retry-after).
const SAMPLE_NOW: &str = "1792567590000";

fn failover() -> Command {
    crate::support::binary::failover()
}

fn run_with_stdin(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = failover()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut input = child.stdin.take().expect("stdin is piped");
    let stdin = stdin.to_vec();
    // Write on another thread so a large input cannot deadlock against output.
    let writer = std::thread::spawn(move || input.write_all(&stdin));
    let output = child.wait_with_output().expect("the binary finishes");
    writer
        .join()
        .expect("writer thread")
        .expect("stdin accepted");
    output
}

/// Runs `args`, expects success, returns the output.
fn run_ok(args: &[&str]) -> Output {
    let output = failover().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    output
}

fn stdout_lines(output: &Output) -> Vec<serde_json::Value> {
    String::from_utf8(output.stdout.clone())
        .expect("stdout is UTF-8")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect()
}

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn sample_file_classifies_to_its_golden_output() {
    let output = run_ok(&["classify", "--now", SAMPLE_NOW, &example("errors.jsonl")]);
    let expected = std::fs::read_to_string(example("errors.expected.jsonl")).unwrap();
    assert_eq!(String::from_utf8(output.stdout).unwrap(), expected);
}

#[test]
fn stdin_gives_the_same_answers_as_a_file() {
    let input = std::fs::read(example("errors.jsonl")).unwrap();
    let output = run_with_stdin(&["classify", "--now", SAMPLE_NOW], &input);
    assert!(output.status.success());
    let expected = std::fs::read_to_string(example("errors.expected.jsonl")).unwrap();
    assert_eq!(String::from_utf8(output.stdout).unwrap(), expected);
}

#[test]
fn bad_lines_are_reported_in_place_and_the_rest_still_run() {
    let mut input = Vec::new();
    input.extend_from_slice(b"{\"status\": 429}\n");
    input.extend_from_slice(b"\n");
    input.extend_from_slice(b"{\"status\": 429\n");
    input.extend_from_slice(b"{\"message\": \"caf\xe9\"}\n");
    input.extend_from_slice(b"{\"status\": \"429\"}\n");
    input.extend_from_slice(b"   \n");
    input.extend_from_slice(b"{\"cause\": {\"headers\": [1]}}\n");
    input.extend_from_slice(b"[1, 2]\n");
    input.extend_from_slice(b"{\"status\": 503, \"message\": \"overloaded\"}");
    let output = run_with_stdin(&["classify"], &input);
    assert_eq!(output.status.code(), Some(1));

    let lines = stdout_lines(&output);
    assert_eq!(lines.len(), 7, "one line per non-blank input line");
    assert_eq!(lines[0]["reason"], "rate_limit");
    for (index, line_number) in [(1, 3), (2, 4), (3, 5), (4, 7), (5, 8)] {
        assert_eq!(lines[index]["line"], line_number, "{:?}", lines[index]);
        assert!(lines[index]["error"].is_string());
    }
    assert!(lines[1]["error"]
        .as_str()
        .unwrap()
        .starts_with("invalid JSON"));
    assert!(lines[2]["error"].as_str().unwrap().contains("UTF-8"));
    assert!(lines[3]["error"]
        .as_str()
        .unwrap()
        .contains("field `status`"));
    assert!(lines[4]["error"]
        .as_str()
        .unwrap()
        .contains("field `cause.headers`"));
    assert!(lines[5]["error"]
        .as_str()
        .unwrap()
        .contains("expected a JSON object"));
    assert_eq!(lines[6]["reason"], "overloaded");

    let stderr = String::from_utf8(output.stderr).unwrap();
    for number in [3, 4, 5, 7, 8] {
        assert!(stderr.contains(&format!("line {number}:")), "{stderr}");
    }
    assert!(
        stderr.contains("5 line(s) of stdin could not be classified"),
        "{stderr}"
    );
}

#[test]
fn output_has_the_documented_fields() {
    let output = run_with_stdin(
        &["classify"],
        b"{\"message\": \"Something went sideways\"}\n",
    );
    assert!(output.status.success());
    let line = &stdout_lines(&output)[0];
    let object = line.as_object().unwrap();
    let mut keys: Vec<_> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["detail", "failover", "reason", "retryAfterMs"]);
    assert_eq!(line["reason"], serde_json::Value::Null);
    assert_eq!(line["failover"], false);
    assert_eq!(line["detail"], "unclassified");
}

#[test]
fn one_off_form() {
    let output = run_ok(&[
        "classify",
        "--status",
        "429",
        "--provider",
        "openai",
        "--message",
        "Too many requests",
        "--header",
        "Retry-After: 5",
    ]);
    let line = &stdout_lines(&output)[0];
    assert_eq!(line["reason"], "rate_limit");
    assert_eq!(line["failover"], true);
    assert_eq!(line["retryAfterMs"], 5000);
}

#[test]
fn one_off_openrouter_matcher_needs_the_provider() {
    let classify = |provider: &str| {
        let output = failover()
            .args([
                "classify",
                "--provider",
                provider,
                "--message",
                "Provider returned error",
            ])
            .output()
            .unwrap();
        stdout_lines(&output)[0]["reason"].clone()
    };
    assert_eq!(classify("openrouter"), "timeout");
    assert_eq!(classify("together"), serde_json::Value::Null);
}

#[test]
fn now_fixes_the_clock_for_http_date_retry_after() {
    let input = br#"{"status": 429, "headers": {"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}}"#;
    let output = run_with_stdin(&["classify", "--now", "1792567670000"], input);
    assert_eq!(stdout_lines(&output)[0]["retryAfterMs"], 10_000);
}

#[test]
fn a_one_mebibyte_message_classifies() {
    let mut message = "x".repeat(1024 * 1024);
    message.insert_str(0, "Too many requests. ");
    let input = serde_json::json!({ "message": message }).to_string();
    let output = run_with_stdin(&["classify"], input.as_bytes());
    assert!(output.status.success());
    assert_eq!(stdout_lines(&output)[0]["reason"], "rate_limit");
}

#[test]
fn an_oversized_line_is_an_error_and_the_next_line_still_runs() {
    let mut input = Vec::with_capacity(17 * 1024 * 1024 + 64);
    input.extend_from_slice(b"{\"message\": \"");
    input.resize(17 * 1024 * 1024, b'a');
    input.extend_from_slice(b"\"}\n{\"status\": 529}\n");
    let output = run_with_stdin(&["classify"], &input);
    assert_eq!(output.status.code(), Some(1));
    let lines = stdout_lines(&output);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["line"], 1);
    assert!(lines[0]["error"].as_str().unwrap().contains("longer than"));
    assert_eq!(lines[1]["reason"], "overloaded");
}

/// Runs `args`, expects the setup-error exit status and `needle` on stderr;
/// returns stderr.
fn assert_setup_error(args: &[&str], needle: &str) -> String {
    let output = failover().args(args).output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(needle), "{needle:?} not in {stderr:?}");
    assert!(output.stdout.is_empty());
    stderr
}

#[test]
fn a_missing_file_is_a_clear_setup_error() {
    assert_setup_error(
        &["classify", "/nonexistent/errors.jsonl"],
        "cannot open /nonexistent/errors.jsonl",
    );
}

#[test]
fn a_header_flag_without_a_colon_is_refused() {
    assert_setup_error(
        &["classify", "--status", "429", "--header", "Retry-After 5"],
        "`Name: value`",
    );
}

#[test]
fn a_file_and_one_off_flags_together_are_refused() {
    assert_setup_error(
        &["classify", "--status", "429", &example("errors.jsonl")],
        "not both",
    );
}

#[test]
fn an_out_of_range_status_flag_is_refused() {
    assert_setup_error(&["classify", "--status", "42"], "--status");
}

/// Writes `bytes` as a policy module and the args to classify a 529 with it.
fn with_policy_file(bytes: &[u8], test: impl FnOnce(&[&str])) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.wasm");
    std::fs::write(&path, bytes).unwrap();
    test(&[
        "--policy",
        path.to_str().unwrap(),
        "classify",
        "--status",
        "529",
    ]);
}

#[test]
fn a_policy_module_from_a_file_runs() {
    with_policy_file(failover::policy::DEFAULT_POLICY, |args| {
        let output = run_ok(args);
        assert_eq!(stdout_lines(&output)[0]["reason"], "overloaded");
    });
}

#[test]
fn a_policy_module_built_on_the_sdk_runs_from_a_file() {
    let module = crate::support::guests::component("examples/policies/status-only", &[]);
    with_policy_file(&module, |args| {
        let output = run_ok(args);
        // The status-only policy reads a 529 as an overload too.
        assert_eq!(stdout_lines(&output)[0]["reason"], "overloaded");
    });
}

#[test]
fn each_line_from_a_slow_producer_is_answered_before_the_next_arrives() {
    use std::io::BufRead;
    let mut child = failover()
        .args(["classify", "--now", SAMPLE_NOW])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let mut input = child.stdin.take().unwrap();
    let (sender, verdicts) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            if sender.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    for (line, reason) in [
        (
            r#"{"status": 429, "message": "Too many requests"}"#,
            "rate_limit",
        ),
        (r#"{"status": 529, "message": "Overloaded"}"#, "overloaded"),
    ] {
        writeln!(input, "{line}").unwrap();
        input.flush().unwrap();
        // Stdin stays open: the verdict must come without more input.
        let verdict = verdicts
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("a verdict while the input is still open");
        let verdict: serde_json::Value = serde_json::from_str(&verdict).unwrap();
        assert_eq!(verdict["reason"], reason);
    }
    drop(input);
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_refused_policy_module_names_the_file_and_the_reason() {
    with_policy_file(b"\0asm garbage", |args| {
        let stderr = assert_setup_error(args, "refused");
        assert!(stderr.contains("policy.wasm"), "{stderr}");
    });
}

#[test]
fn policy_encode_makes_a_component_of_a_built_guest_and_checks_it() {
    let dir = tempfile::tempdir().unwrap();
    let core = dir.path().join("core.wasm");
    let out = dir.path().join("policy.wasm");
    std::fs::write(
        &core,
        crate::support::guests::core_module("examples/policy-context-advances", &[]),
    )
    .unwrap();
    let encode = || {
        failover()
            .args(["policy", "encode"])
            .arg(&core)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap()
    };
    let encoded = encode();
    let stdout = String::from_utf8_lossy(&encoded.stdout);
    assert!(
        encoded.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&encoded.stderr)
    );
    assert!(stdout.contains("verdict: accepted"), "{stdout}");
    let checked = failover()
        .args(["policy", "check"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(checked.status.success());
    // Not a guest: a clear error naming the file.
    std::fs::write(&core, b"not wasm").unwrap();
    let refused = encode();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("core.wasm is not a policy guest's core module"),
        "{stderr}"
    );
}
