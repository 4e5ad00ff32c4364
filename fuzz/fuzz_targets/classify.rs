//! A provider error as JSON → `ProviderError` → flattened → classified, by
//! the native core and by the embedded component: both must agree, and a
//! verdict's `failover` flag must follow from its reason. The line reader
//! (which tries a fast path for flat objects first) must read the text as
//! the general reader over a JSON tree does.

#![no_main]

use std::sync::OnceLock;

use failover_policy::report::flatten;
use failover_policy::ProviderError;
use failover_sandbox::{Policy, PolicyEngine};
use libfuzzer_sys::fuzz_target;
use policy_types::Reason;

/// A fixed instant: classification reads the clock only through the report.
const NOW_MS: u64 = 1_767_225_600_000;

fn policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        let engine = PolicyEngine::new().expect("engine");
        Policy::default_policy(&engine).expect("the embedded policy loads")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let general = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .map(|value| ProviderError::from_json(&value));
    let read = ProviderError::from_json_str(text);
    match (&read, &general) {
        (Ok(error), Some(Ok(expected))) => assert_eq!(error, expected, "the readers disagree"),
        (Ok(_), _) => panic!("the line reader accepts what the general reader refuses"),
        (Err(_), Some(Ok(_))) => panic!("the line reader refuses what the general reader accepts"),
        (Err(_), _) => {}
    }
    let Ok(error) = read else {
        return;
    };
    let policy = policy();
    let flat = flatten(&error, NOW_MS, &policy.limits());
    let native = policy_guest::classify(&flat.report);
    let component = policy
        .classify_report(flat)
        .expect("the default policy classifies every input");
    assert_eq!(native, component, "native and component disagree");
    assert_eq!(
        native.failover,
        native.reason.is_some_and(Reason::advances_chain),
        "the failover flag does not follow from the reason"
    );
});
