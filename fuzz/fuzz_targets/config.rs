//! The JSON5 config file's text.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        failover_engine::fuzzing::config(text);
    }
});
