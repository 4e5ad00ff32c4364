//! The policy's readers of untrusted input: a header block for the wait it
//! asks for, and a message as a provider's JSON error body.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    policy_guest::fuzzing::retry_after(text, 1_767_225_600_000);
    policy_guest::fuzzing::retry_after(text, u64::MAX);
    policy_guest::fuzzing::body(text);
});
