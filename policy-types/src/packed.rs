//! Error reports packed into bytes, as `classify-packed` and
//! `classify-packed-batch` carry them (contract 0.8.0; the layout is in
//! `wit/policy.wit`).
//!
//! Why bytes: the canonical ABI lowers every string and list of a record
//! with its own call into the module's allocator, and a report's record
//! made three to five of them, most of a short classification's cost. One
//! byte list is one. The host writes with [`write_report`]; a module reads
//! with [`read_report`] or [`read_batch`], which check the whole layout and
//! every text's UTF-8, so a malformed list is an error, never a panic.

use crate::classify::{ErrorLevel, ErrorReport};
use crate::inline::InlineVec;

/// Levels a [`PackedReport`] holds without an allocation: an error and
/// the causes an SDK wraps around it (most reports have one or two).
pub const INLINE_LEVELS: usize = 4;

/// The length that stands for an absent `text?`.
const NONE: u32 = u32::MAX;

/// One level of a report, borrowed from wherever it is kept: an
/// [`ErrorLevel`], or a packed report's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LevelRef<'a> {
    /// See [`ErrorLevel::depth`].
    pub depth: u32,
    /// See [`ErrorLevel::status`].
    pub status: Option<u16>,
    /// See [`ErrorLevel::code`].
    pub code: Option<&'a str>,
    /// See [`ErrorLevel::message`].
    pub message: &'a str,
    /// See [`ErrorLevel::headers`].
    pub headers: &'a str,
}

impl ErrorLevel {
    /// This level, borrowed.
    pub fn borrowed(&self) -> LevelRef<'_> {
        LevelRef {
            depth: self.depth,
            status: self.status,
            code: self.code.as_deref(),
            message: &self.message,
            headers: &self.headers,
        }
    }
}

impl LevelRef<'_> {
    /// This level, owned.
    pub fn to_level(self) -> ErrorLevel {
        ErrorLevel {
            depth: self.depth,
            status: self.status,
            code: self.code.map(str::to_owned),
            message: self.message.to_owned(),
            headers: self.headers.to_owned(),
        }
    }
}

/// A report read from packed bytes, its texts borrowed from them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PackedReport<'a> {
    /// See [`ErrorReport::provider`].
    pub provider: Option<&'a str>,
    /// See [`ErrorReport::levels`]; never empty. Kept inline up to
    /// [`INLINE_LEVELS`]: in the sandbox an allocation is a call into the
    /// guest's allocator, and a report read to be classified at once rarely
    /// has more levels than that.
    pub levels: InlineVec<LevelRef<'a>, INLINE_LEVELS>,
    /// See [`ErrorReport::now_ms`].
    pub now_ms: u64,
}

impl PackedReport<'_> {
    /// This report, owned.
    pub fn to_report(&self) -> ErrorReport {
        ErrorReport {
            provider: self.provider.map(str::to_owned),
            levels: self.levels.iter().map(|level| level.to_level()).collect(),
            now_ms: self.now_ms,
        }
    }
}

/// Why packed bytes could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackedError {
    /// The bytes end inside the named field.
    Truncated(&'static str),
    /// A report says it has no levels.
    NoLevels,
    /// A text is not UTF-8.
    NotUtf8(&'static str),
    /// Bytes remain after the last report.
    Trailing,
}

impl std::fmt::Display for PackedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PackedError::Truncated(field) => write!(f, "the bytes end inside `{field}`"),
            PackedError::NoLevels => f.write_str("a report has no levels"),
            PackedError::NotUtf8(field) => write!(f, "`{field}` is not UTF-8"),
            PackedError::Trailing => f.write_str("bytes remain after the last report"),
        }
    }
}

impl std::error::Error for PackedError {}

/// Appends `report` to `out`, laid out for `classify-packed`.
pub fn write_report(out: &mut Vec<u8>, report: &ErrorReport) {
    write_parts(
        out,
        report.provider.as_deref(),
        report.now_ms,
        report.levels.iter().map(ErrorLevel::borrowed),
    );
}

/// Appends a report given by its parts to `out`, laid out for
/// `classify-packed`. A report has at least one level: with none, one
/// empty level is written, as the host's flattening makes it.
pub fn write_parts<'a>(
    out: &mut Vec<u8>,
    provider: Option<&str>,
    now_ms: u64,
    levels: impl ExactSizeIterator<Item = LevelRef<'a>>,
) {
    out.extend_from_slice(&now_ms.to_le_bytes());
    if levels.len() == 0 {
        write_count(out, 1);
        write_optional(out, provider);
        write_level(out, LevelRef::default());
        return;
    }
    write_count(out, levels.len());
    write_optional(out, provider);
    for level in levels {
        write_level(out, level);
    }
}

/// Appends a batch's report count to `out`: the reports follow it.
pub fn write_batch_count(out: &mut Vec<u8>, reports: usize) {
    write_count(out, reports);
}

fn write_level(out: &mut Vec<u8>, level: LevelRef<'_>) {
    out.extend_from_slice(&level.depth.to_le_bytes());
    out.extend_from_slice(&level.status.unwrap_or(0).to_le_bytes());
    write_optional(out, level.code);
    write_text(out, level.message);
    write_text(out, level.headers);
}

fn write_count(out: &mut Vec<u8>, count: usize) {
    let count = u32::try_from(count).expect("fewer than 2^32 items");
    out.extend_from_slice(&count.to_le_bytes());
}

fn write_text(out: &mut Vec<u8>, text: &str) {
    let len = u32::try_from(text.len())
        .ok()
        .filter(|len| *len != NONE)
        .expect("a text shorter than 4 GiB");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(text.as_bytes());
}

fn write_optional(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(text) => write_text(out, text),
        None => out.extend_from_slice(&NONE.to_le_bytes()),
    }
}

/// Reads one packed report (`classify-packed`'s argument).
pub fn read_report(bytes: &[u8]) -> Result<PackedReport<'_>, PackedError> {
    let mut report = PackedReport::default();
    read_report_into(bytes, &mut report)?;
    Ok(report)
}

/// Reads one packed report into `report`, whatever it held before. After
/// an error, `report` holds part of what was read: use it only on `Ok`.
///
/// For a module, which reads the report where it keeps it: moved (out of
/// the reader, through an `Option` and a `Result`), a report with its
/// levels inline is copied whole each time, and in the sandbox each copy is
/// a `memory.copy` that wasmtime runs as a call out to the host's `memcpy`
/// (~100 instructions a copy, BENCHMARKS.md, issue 16, eighteenth part).
#[inline(always)]
pub fn read_report_into<'a>(
    bytes: &'a [u8],
    report: &mut PackedReport<'a>,
) -> Result<(), PackedError> {
    let mut reader = Reader::new(bytes);
    let read = reader.report_into(report);
    reader.finish(read)
}

/// Reads a packed batch (`classify-packed-batch`'s argument).
pub fn read_batch(bytes: &[u8]) -> Result<Vec<PackedReport<'_>>, PackedError> {
    let mut reader = Reader::new(bytes);
    let reports = (|| {
        let count = reader.u32("report-count")?;
        // Each report takes at least 34 bytes (a level at least 18): no
        // claimed count allocates more than the bytes could hold.
        let mut reports = Vec::with_capacity((count as usize).min(bytes.len() / 34));
        for _ in 0..count {
            // Read in its place in the list, not moved there.
            reports.push(PackedReport::default());
            let last = reports.len() - 1;
            reader.report_into(&mut reports[last])?;
        }
        Some(reports)
    })();
    reader.finish(reports)
}

/// Reads fields off the front of the bytes. A read that fails answers
/// `None` and leaves why in `failure`: the fields that do read pass no
/// error value along. Every step is inlined into the report's reader, so
/// the compiled guest keeps the reader's place in a register (a call out
/// would make it keep the reader in memory and go through it per field).
struct Reader<'a> {
    bytes: &'a [u8],
    failure: PackedError,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader {
            bytes,
            failure: PackedError::Trailing,
        }
    }

    /// Reads a report into `report`, replacing what it held.
    #[inline(always)]
    fn report_into(&mut self, report: &mut PackedReport<'a>) -> Option<()> {
        report.now_ms = u64::from_le_bytes(self.array("now-ms")?);
        let count = self.u32("level-count")?;
        if count == 0 {
            return self.fail(PackedError::NoLevels);
        }
        report.provider = self.optional("provider")?;
        report.levels.clear();
        // A level takes at least 18 bytes: depth, status and three lengths.
        report
            .levels
            .reserve((count as usize).min(self.bytes.len() / 18 + 1));
        for _ in 0..count {
            report.levels.push(self.level()?);
        }
        Some(())
    }

    #[inline(always)]
    fn level(&mut self) -> Option<LevelRef<'a>> {
        let depth = self.u32("depth")?;
        let status = u16::from_le_bytes(self.array("status")?);
        Some(LevelRef {
            depth,
            status: (status != 0).then_some(status),
            code: self.optional("code")?,
            message: self.text("message")?,
            headers: self.text("headers")?,
        })
    }

    /// `read` when it read and nothing is left over; else why not.
    #[inline(always)]
    fn finish<T>(self, read: Option<T>) -> Result<T, PackedError> {
        match read {
            Some(value) if self.bytes.is_empty() => Ok(value),
            Some(_) => Err(PackedError::Trailing),
            None => Err(self.failure),
        }
    }

    #[inline(always)]
    fn fail<T>(&mut self, why: PackedError) -> Option<T> {
        self.failure = why;
        None
    }

    #[inline(always)]
    fn array<const N: usize>(&mut self, field: &'static str) -> Option<[u8; N]> {
        match self.bytes.split_first_chunk::<N>() {
            Some((head, rest)) => {
                self.bytes = rest;
                Some(*head)
            }
            None => self.fail(PackedError::Truncated(field)),
        }
    }

    #[inline(always)]
    fn u32(&mut self, field: &'static str) -> Option<u32> {
        self.array(field).map(u32::from_le_bytes)
    }

    #[inline(always)]
    fn text(&mut self, field: &'static str) -> Option<&'a str> {
        let len = self.u32(field)?;
        self.text_of(field, len)
    }

    #[inline(always)]
    fn optional(&mut self, field: &'static str) -> Option<Option<&'a str>> {
        match self.u32(field)? {
            NONE => Some(None),
            len => self.text_of(field, len).map(Some),
        }
    }

    #[inline(always)]
    fn text_of(&mut self, field: &'static str, len: u32) -> Option<&'a str> {
        let Some((text, rest)) = self.bytes.split_at_checked(len as usize) else {
            return self.fail(PackedError::Truncated(field));
        };
        self.bytes = rest;
        match utf8(text) {
            Some(text) => Some(text),
            None => self.fail(PackedError::NotUtf8(field)),
        }
    }
}

/// `bytes` as text when they are UTF-8.
///
/// In the sandbox (wasm with SIMD) ASCII is checked sixteen bytes or more
/// at a time (`crate::ascii`), and `str::from_utf8`, which there takes a
/// word a turn after a set-up of its own, runs only on text that is not
/// all ASCII: provider errors nearly all are, and a report has three to
/// five texts.
#[inline(always)]
fn utf8(bytes: &[u8]) -> Option<&str> {
    if !crate::ascii::is_ascii(bytes) {
        return std::str::from_utf8(bytes).ok();
    }
    // SAFETY: ASCII is UTF-8.
    Some(unsafe { std::str::from_utf8_unchecked(bytes) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ErrorReport {
        ErrorReport {
            provider: Some("openai".into()),
            levels: vec![
                ErrorLevel {
                    depth: 0,
                    status: Some(429),
                    code: Some("rate_limit_exceeded".into()),
                    message: "Rate limit reached — réessayez".into(),
                    headers: "retry-after: 2\n".into(),
                },
                ErrorLevel {
                    depth: 1,
                    status: None,
                    code: Some(String::new()),
                    message: String::new(),
                    headers: String::new(),
                },
            ],
            now_ms: 1_700_000_000_123,
        }
    }

    #[test]
    fn a_report_reads_back_as_written() {
        let mut bytes = Vec::new();
        write_report(&mut bytes, &sample());
        assert_eq!(read_report(&bytes).unwrap().to_report(), sample());
        let bare = ErrorReport {
            provider: None,
            levels: vec![ErrorLevel::default()],
            now_ms: 0,
        };
        bytes.clear();
        write_report(&mut bytes, &bare);
        assert_eq!(bytes.len(), 8 + 4 + 4 + 4 + 2 + 4 + 4 + 4);
        assert_eq!(read_report(&bytes).unwrap().to_report(), bare);
    }

    #[test]
    fn a_report_deeper_than_the_inline_levels_reads_back_whole() {
        let deep = ErrorReport {
            provider: None,
            levels: (0..3 * INLINE_LEVELS as u32)
                .map(|depth| ErrorLevel {
                    depth,
                    status: Some(400 + depth as u16),
                    code: (depth % 2 == 0).then(|| format!("code_{depth}")),
                    message: format!("level {depth}"),
                    headers: String::new(),
                })
                .collect(),
            now_ms: 7,
        };
        let mut bytes = Vec::new();
        write_report(&mut bytes, &deep);
        let read = read_report(&bytes).unwrap();
        assert!(read.levels.spilled());
        assert_eq!(read.to_report(), deep);
        // And in a batch, between reports that fit inline.
        let mut bytes = Vec::new();
        let reports = [sample(), deep, sample()];
        write_batch_count(&mut bytes, reports.len());
        for report in &reports {
            write_report(&mut bytes, report);
        }
        let batch: Vec<ErrorReport> = read_batch(&bytes)
            .unwrap()
            .iter()
            .map(PackedReport::to_report)
            .collect();
        assert_eq!(batch, reports);
    }

    /// A report read into one that held another keeps nothing of the
    /// old one: not its levels (spilled or inline), provider or clock.
    #[test]
    fn a_report_read_into_another_replaces_it_whole() {
        let deep = ErrorReport {
            provider: Some("old".into()),
            levels: (0..2 * INLINE_LEVELS as u32)
                .map(|depth| ErrorLevel {
                    depth,
                    message: format!("old {depth}"),
                    ..ErrorLevel::default()
                })
                .collect(),
            now_ms: 99,
        };
        let shallow = ErrorReport {
            provider: None,
            ..sample()
        };
        let (mut deep_bytes, mut shallow_bytes) = (Vec::new(), Vec::new());
        write_report(&mut deep_bytes, &deep);
        write_report(&mut shallow_bytes, &shallow);
        let mut report = PackedReport::default();
        for (bytes, expected) in [
            (&deep_bytes, &deep),
            (&shallow_bytes, &shallow),
            (&deep_bytes, &deep),
            (&deep_bytes, &deep),
            (&shallow_bytes, &shallow),
        ] {
            read_report_into(bytes, &mut report).unwrap();
            assert_eq!(&report.to_report(), expected);
        }
        // A read that fails still leaves an error, not a half-read report
        // taken for whole.
        let truncated = &deep_bytes[..deep_bytes.len() - 1];
        assert!(read_report_into(truncated, &mut report).is_err());
    }

    #[test]
    fn a_report_without_levels_is_written_with_one_empty_level() {
        let mut bytes = Vec::new();
        write_report(&mut bytes, &ErrorReport::default());
        let read = read_report(&bytes).unwrap();
        assert_eq!(read.levels.as_slice(), [LevelRef::default()]);
    }

    #[test]
    fn a_batch_reads_back_as_written() {
        let reports = [sample(), ErrorReport::default(), sample()];
        let mut bytes = Vec::new();
        write_batch_count(&mut bytes, reports.len());
        for report in &reports {
            write_report(&mut bytes, report);
        }
        let read = read_batch(&bytes).unwrap();
        assert_eq!(read.len(), 3);
        assert_eq!(read[0].to_report(), sample());
        assert_eq!(read[2].to_report(), sample());
        let mut empty = Vec::new();
        write_batch_count(&mut empty, 0);
        assert_eq!(read_batch(&empty).unwrap(), vec![]);
    }

    #[test]
    fn the_layout_is_the_documented_one() {
        let report = ErrorReport {
            provider: Some("x".into()),
            levels: vec![ErrorLevel {
                depth: 2,
                status: Some(503),
                code: None,
                message: "hi".into(),
                headers: String::new(),
            }],
            now_ms: 7,
        };
        let mut bytes = Vec::new();
        write_report(&mut bytes, &report);
        let expected: Vec<u8> = [
            &7u64.to_le_bytes()[..],
            &1u32.to_le_bytes(),
            &1u32.to_le_bytes(),
            b"x",
            &2u32.to_le_bytes(),
            &503u16.to_le_bytes(),
            &u32::MAX.to_le_bytes(),
            &2u32.to_le_bytes(),
            b"hi",
            &0u32.to_le_bytes(),
        ]
        .concat();
        assert_eq!(bytes, expected);
    }

    #[test]
    fn malformed_bytes_are_errors_that_name_the_field() {
        let mut bytes = Vec::new();
        write_report(&mut bytes, &sample());
        // Every cut of a valid report is refused, none panics.
        for cut in 0..bytes.len() {
            assert!(read_report(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert_eq!(read_report(&[]), Err(PackedError::Truncated("now-ms")));
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert_eq!(read_report(&trailing), Err(PackedError::Trailing));
        let mut no_levels = 0u64.to_le_bytes().to_vec();
        no_levels.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(read_report(&no_levels), Err(PackedError::NoLevels));
        // A message byte that cannot be UTF-8.
        let at = bytes.windows(4).position(|w| w == b"Rate").unwrap();
        let mut bad = bytes.clone();
        bad[at] = 0xff;
        assert_eq!(read_report(&bad), Err(PackedError::NotUtf8("message")));
        // A count far beyond the bytes allocates nothing large and fails.
        let mut huge = u32::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(&bytes);
        assert_eq!(read_batch(&huge), Err(PackedError::Truncated("now-ms")));
    }

    #[test]
    fn text_checks_accept_utf8_and_refuse_the_rest() {
        assert_eq!(
            utf8(b"plain ascii text, long enough"),
            Some("plain ascii text, long enough")
        );
        let mixed = "0123456789abcdef0123456789abcdef余额不足 ok";
        assert_eq!(utf8(mixed.as_bytes()), Some(mixed));
        let mut broken = mixed.as_bytes().to_vec();
        broken[32] = 0x80;
        assert_eq!(utf8(&broken), None);
        assert_eq!(utf8(b""), Some(""));
    }
}
