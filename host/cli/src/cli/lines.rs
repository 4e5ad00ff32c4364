//! Reading input one line at a time without trusting its size.

use std::io::{self, BufRead};

/// One line of input, without its line ending.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// The line's bytes (not yet checked for UTF-8).
    Bytes,
    /// The line was longer than the reader's bound; its bytes were skipped.
    TooLong,
}

/// Splits a byte stream into lines, holding at most `max_bytes` of any line
/// in memory. A longer line is skipped to its end and reported as
/// [`Line::TooLong`], so one oversized line cannot exhaust memory or stop the
/// lines after it.
pub(crate) struct LineReader<R> {
    reader: R,
    max_bytes: usize,
    number: usize,
}

impl<R: BufRead> LineReader<R> {
    pub fn new(reader: R, max_bytes: usize) -> Self {
        LineReader {
            reader,
            max_bytes,
            number: 0,
        }
    }

    /// The 1-based number of the line last returned.
    pub fn number(&self) -> usize {
        self.number
    }

    /// Reads the next line into `buf` (cleared first). `None` at end of input.
    pub(crate) fn next_line(&mut self, buf: &mut Vec<u8>) -> io::Result<Option<Line>> {
        buf.clear();
        let mut too_long = false;
        let mut read_any = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                if !read_any {
                    return Ok(None);
                }
                break;
            }
            read_any = true;
            let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
                Some(end) => (&available[..end], Some(end + 1)),
                None => (available, None),
            };
            if !too_long && buf.len() + chunk.len() <= self.max_bytes {
                buf.extend_from_slice(chunk);
            } else {
                too_long = true;
                buf.clear();
            }
            let consumed = done.unwrap_or(chunk.len());
            self.reader.consume(consumed);
            if done.is_some() {
                break;
            }
        }
        self.number += 1;
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        Ok(Some(if too_long { Line::TooLong } else { Line::Bytes }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
        let mut reader = LineReader::new(io::BufReader::with_capacity(4, input), max);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while let Some(line) = reader.next_line(&mut buf).unwrap() {
            out.push((line, buf.clone()));
        }
        out
    }

    #[test]
    fn splits_and_strips_line_endings() {
        let got = lines(b"one\r\ntwo\n\nthree", 100);
        let texts: Vec<_> = got.iter().map(|(_, b)| b.as_slice()).collect();
        assert_eq!(texts, [&b"one"[..], b"two", b"", b"three"]);
    }

    #[test]
    fn long_lines_are_skipped_not_buffered() {
        let got = lines(b"short\nthis line is too long\nok\n", 8);
        assert_eq!(got[0], (Line::Bytes, b"short".to_vec()));
        assert_eq!(got[1], (Line::TooLong, Vec::new()));
        assert_eq!(got[2], (Line::Bytes, b"ok".to_vec()));
        assert_eq!(got.len(), 3);
    }
}
