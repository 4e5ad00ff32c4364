//! A server-sent event stream, whole and cut into pieces: the events must
//! not depend on where the network cut it. The first byte says how many
//! cut offsets (two bytes each) precede the stream.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&count, rest)) = data.split_first() else {
        return;
    };
    let count = usize::from(count % 16);
    if rest.len() < count * 2 {
        return;
    }
    let (offsets, stream) = rest.split_at(count * 2);
    let cuts: Vec<usize> = offsets
        .chunks(2)
        .map(|pair| usize::from(u16::from_le_bytes([pair[0], pair[1]])))
        .collect();
    failover_engine::fuzzing::sse(stream, &cuts);
});
