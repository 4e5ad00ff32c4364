//! A client's body to `POST /v1/chat/completions`: parsed, and rendered for
//! an upstream when it parses.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    failover_engine::fuzzing::openai_request(data);
});
