//! A client's body to `POST /v1/messages`: parsed, and rendered for both
//! kinds of upstream when it parses.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    failover_engine::fuzzing::anthropic_request(data);
});
