//! An upstream's whole reply to a chat-completions call: read member by
//! member, checked against a JSON tree of it, and relayed.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    failover_engine::fuzzing::openai_reply(data);
});
