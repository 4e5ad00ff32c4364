//! Server-sent events, decoded as bytes arrive (the subset providers use:
//! `event:` and `data:` fields, comments, any line ending).

/// One event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// `event:`; empty when absent.
    pub event: String,
    /// `data:` lines joined by `\n`.
    pub data: String,
}

/// Largest event accepted: a provider's chunk is a few KiB; more than this
/// is not a chat stream and would only grow memory.
pub(crate) const MAX_EVENT_BYTES: usize = 1 << 20;

/// An incremental decoder.
#[derive(Debug)]
pub(crate) struct SseDecoder {
    line: Vec<u8>,
    event: SseEvent,
    has_data: bool,
    /// The previous byte was `\r` (a `\n` right after it ends nothing).
    after_cr: bool,
    /// The largest event: [`MAX_EVENT_BYTES`] (smaller for the fuzzer,
    /// whose inputs are a few KiB).
    limit: usize,
}

impl Default for SseDecoder {
    fn default() -> Self {
        SseDecoder {
            line: Vec::new(),
            event: SseEvent::default(),
            has_data: false,
            after_cr: false,
            limit: MAX_EVENT_BYTES,
        }
    }
}

/// The stream broke the size bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a server-sent event over {MAX_EVENT_BYTES} bytes")]
pub(crate) struct OversizedEvent;

impl SseDecoder {
    /// A decoder whose largest event is `limit` bytes.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn with_limit(limit: usize) -> Self {
        SseDecoder {
            limit,
            ..SseDecoder::default()
        }
    }

    /// Feeds bytes; returns the events they complete.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, OversizedEvent> {
        let mut events = Vec::new();
        for &byte in bytes {
            let after_cr = std::mem::replace(&mut self.after_cr, byte == b'\r');
            match byte {
                b'\n' if after_cr => {}
                b'\n' | b'\r' => {
                    if let Some(event) = self.end_line()? {
                        events.push(event);
                    }
                }
                _ => {
                    if self.line.len() + self.event.data.len() >= self.limit {
                        return Err(OversizedEvent);
                    }
                    self.line.push(byte);
                }
            }
        }
        Ok(events)
    }

    /// The event left unterminated when the stream ended, if any.
    pub fn finish(&mut self) -> Option<SseEvent> {
        // An unterminated last line over the bound is dropped with the
        // stream's end.
        if !self.line.is_empty() && self.end_line().is_err() {
            return None;
        }
        self.dispatch()
    }

    /// Ends a line. The bound holds for the decoded text, not only for the
    /// bytes `feed` counts: a byte that is not UTF-8 becomes a three-byte
    /// U+FFFD.
    fn end_line(&mut self) -> Result<Option<SseEvent>, OversizedEvent> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        let line = String::from_utf8_lossy(&line);
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = line.split_once(':').unwrap_or((&line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" if value.len() > self.limit => return Err(OversizedEvent),
            "event" => self.event.event = value.to_owned(),
            "data" => {
                let separator = usize::from(self.has_data);
                if self.event.data.len() + separator + value.len() > self.limit {
                    return Err(OversizedEvent);
                }
                if self.has_data {
                    self.event.data.push('\n');
                }
                self.event.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        let had = std::mem::replace(&mut self.has_data, false);
        (had || !event.event.is_empty()).then_some(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `sse_decoder` fuzz target: bytes that are not UTF-8
    /// grew an event past the bound once decoded (each becomes a three-byte
    /// U+FFFD).
    #[test]
    fn the_bound_holds_for_the_decoded_text() {
        let mut decoder = SseDecoder {
            limit: 16,
            ..SseDecoder::default()
        };
        // Ten bytes under the bound, thirty once decoded.
        let mut stream = b"data: ".to_vec();
        stream.extend([0xff; 10]);
        stream.extend(b"\n\n");
        assert_eq!(decoder.feed(&stream), Err(OversizedEvent));

        // Within the bound, decoded: as before.
        let mut decoder = SseDecoder {
            limit: 16,
            ..SseDecoder::default()
        };
        let events = decoder.feed(b"data: 12345\ndata: 1234\n\n").unwrap();
        assert_eq!(events[0].data, "12345\n1234");
    }

    #[test]
    fn events_split_anywhere_and_any_line_ending() {
        let text = b"event: a\r\ndata: 1\r\ndata: 2\r\n\r\n: comment\n\ndata:x\r\rdata: tail";
        let mut whole = SseDecoder::default();
        let mut events = whole.feed(text).unwrap();
        events.extend(whole.finish());
        let mut bytewise = SseDecoder::default();
        let mut split = Vec::new();
        for b in text {
            split.extend(bytewise.feed(&[*b]).unwrap());
        }
        split.extend(bytewise.finish());
        assert_eq!(events, split);
        assert_eq!(
            events,
            [
                SseEvent {
                    event: "a".into(),
                    data: "1\n2".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "x".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "tail".into()
                },
            ]
        );
    }

    #[test]
    fn oversized_events_are_refused() {
        let mut decoder = SseDecoder::default();
        let big = vec![b'a'; MAX_EVENT_BYTES + 1];
        assert_eq!(decoder.feed(&big), Err(OversizedEvent));
    }
}
