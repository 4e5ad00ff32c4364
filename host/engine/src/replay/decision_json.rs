//! A decision's JSON line, written directly.
//!
//! A replay writes three or four lines a request, a dozen short strings
//! each. Through `serde_json` every key and value went through its general
//! string escaper one at a time, which was a tenth of a replay's time. The
//! keys are fixed, so they are written as they stand; a value is copied
//! whole when nothing in it needs escaping and escaped by `serde_json`
//! otherwise. The line is the one `serde_json::to_string` writes for the
//! derived form, byte for byte (checked in the tests below and by every
//! expected trace); a `state` line, rare and holding a JSON tree, is
//! written by `serde_json` itself.

use super::decision::Decision;

/// A line being written: `{"kind":"…"` then `,"key":value` per field.
struct Line(String);

impl Line {
    /// Room for a typical line (an attempt is 150–200 bytes).
    const TYPICAL_LEN: usize = 192;

    fn new(kind: &str) -> Line {
        let mut out = String::with_capacity(Self::TYPICAL_LEN);
        out.push_str("{\"kind\":\"");
        out.push_str(kind);
        out.push('"');
        Line(out)
    }

    /// `key` is one of the fixed field names: nothing in it to escape.
    fn key(&mut self, key: &str) {
        self.0.push_str(",\"");
        self.0.push_str(key);
        self.0.push_str("\":");
    }

    fn number(&mut self, key: &str, value: u64) {
        self.key(key);
        self.0.push_str(itoa::Buffer::new().format(value));
    }

    fn string(&mut self, key: &str, value: &str) {
        self.key(key);
        if value.bytes().any(needs_escape) {
            // As serde_json escapes it: writing to a String cannot fail.
            let escaped = serde_json::to_string(value).unwrap_or_default();
            self.0.push_str(&escaped);
        } else {
            self.0.push('"');
            self.0.push_str(value);
            self.0.push('"');
        }
    }

    fn optional_string(&mut self, key: &str, value: Option<&str>) {
        if let Some(value) = value {
            self.string(key, value);
        }
    }

    fn finish(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

/// Whether JSON needs `byte` escaped: a quote, a backslash or a control
/// character below space (serde_json leaves DEL and non-ASCII as they are).
fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

impl Decision {
    /// The decision's JSON line, as `serde_json::to_string` writes it.
    pub(crate) fn json_line(&self) -> String {
        let mut line = Line::new(self.kind());
        match self {
            Decision::Request {
                request,
                at,
                session,
                model,
            } => {
                line.number("request", *request);
                line.number("at", *at);
                line.optional_string("session", session.as_deref());
                line.string("model", model);
            }
            Decision::Attempt {
                request,
                at,
                model,
                profile,
                outcome,
                answered,
                status,
            } => {
                line.number("request", *request);
                line.number("at", *at);
                line.string("model", model);
                line.string("profile", profile);
                line.string("outcome", outcome);
                line.string("answered", answered.name());
                if let Some(status) = status {
                    line.number("status", u64::from(*status));
                }
            }
            Decision::Skip {
                request,
                model,
                reason,
            } => {
                line.number("request", *request);
                line.string("model", model);
                line.string("reason", reason);
            }
            Decision::Fallback {
                request,
                from,
                to,
                reason,
                final_outcome,
            } => {
                line.number("request", *request);
                line.string("from", from);
                line.optional_string("to", to.as_deref());
                line.string("reason", reason);
                line.string("finalOutcome", final_outcome);
            }
            Decision::Served { .. } | Decision::Broken { .. } | Decision::Failed { .. } => {
                self.end_fields(&mut line);
            }
            Decision::State { .. } => {
                // Rare, and it holds a JSON tree: serde_json writes it.
                return serde_json::to_string(self).unwrap_or_default();
            }
        }
        line.finish()
    }

    /// The fields of a request's end: served, broken or failed.
    fn end_fields(&self, line: &mut Line) {
        match self {
            Decision::Served {
                request,
                at,
                model,
                profile,
                source,
            } => {
                line.number("request", *request);
                line.number("at", *at);
                line.string("model", model);
                line.string("profile", profile);
                line.string("source", source);
            }
            Decision::Broken {
                request,
                at,
                model,
                profile,
                reason,
            } => {
                line.number("request", *request);
                line.number("at", *at);
                line.string("model", model);
                line.string("profile", profile);
                line.string("reason", reason);
            }
            Decision::Failed {
                request,
                at,
                error,
                message,
            } => {
                line.number("request", *request);
                line.number("at", *at);
                line.string("error", error);
                line.string("message", message);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::provider::Answered;
    use serde_json::json;

    /// Strings that need every kind of escape, none, and non-ASCII text.
    const AWKWARD: [&str; 6] = [
        "",
        "plain",
        "quote \" backslash \\ slash /",
        "controls \n \r \t \u{8} \u{c} \u{1} \u{1f} del \u{7f}",
        "naïve — 日本語 🙂",
        "{\"error\":{\"message\":\"Rate limit\"}}",
    ];

    fn every_shape(text: &str) -> Vec<Decision> {
        let s = || text.to_string();
        let mut shapes = attempt_shapes(text);
        shapes.extend([
            Decision::Request {
                request: 1,
                at: u64::MAX,
                session: Some(s()),
                model: s(),
            },
            Decision::Request {
                request: 0,
                at: 0,
                session: None,
                model: s(),
            },
            Decision::Skip {
                request: 2,
                model: s(),
                reason: s(),
            },
            Decision::Fallback {
                request: 3,
                from: s(),
                to: Some(s()),
                reason: s(),
                final_outcome: s(),
            },
            Decision::Fallback {
                request: 3,
                from: s(),
                to: None,
                reason: s(),
                final_outcome: s(),
            },
            Decision::Served {
                request: 4,
                at: 5,
                model: s(),
                profile: s(),
                source: s(),
            },
            Decision::Broken {
                request: 4,
                at: 7,
                model: s(),
                profile: s(),
                reason: s(),
            },
            Decision::Failed {
                request: 5,
                at: 6,
                error: s(),
                message: s(),
            },
            Decision::State {
                at: 9,
                profile: Some(s()),
                session: None,
                value: json!({"state": s(), "n": 1}),
            },
        ]);
        shapes
    }

    /// An attempt of each way it was answered.
    fn attempt_shapes(text: &str) -> Vec<Decision> {
        let s = || text.to_string();
        vec![
            Decision::Attempt {
                request: 7,
                at: 1_767_225_600_000,
                model: s(),
                profile: s(),
                outcome: s(),
                answered: Answered::Recorded,
                status: Some(429),
            },
            Decision::Attempt {
                request: 7,
                at: 1,
                model: s(),
                profile: s(),
                outcome: s(),
                answered: Answered::Covered,
                status: None,
            },
            Decision::Attempt {
                request: 7,
                at: 1,
                model: s(),
                profile: s(),
                outcome: s(),
                answered: Answered::Unrecorded,
                status: Some(u16::MAX),
            },
        ]
    }

    #[test]
    fn every_line_is_the_one_serde_json_writes() {
        for text in AWKWARD {
            for decision in every_shape(text) {
                assert_eq!(
                    decision.json_line(),
                    serde_json::to_string(&decision).unwrap(),
                    "{decision:?}"
                );
            }
        }
    }

    #[test]
    fn every_byte_is_escaped_as_serde_json_escapes_it() {
        for byte in 0u8..=0x7f {
            let text = format!("a{}b", char::from(byte));
            let decision = Decision::Skip {
                request: 1,
                model: text.clone(),
                reason: text,
            };
            assert_eq!(
                decision.json_line(),
                serde_json::to_string(&decision).unwrap(),
                "byte {byte:#x}"
            );
        }
    }
}
