//! A recorded trace (JSON Lines), read strictly and leniently.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    failover_engine::fuzzing::trace(data);
});
