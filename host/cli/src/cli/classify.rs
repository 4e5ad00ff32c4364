//! `failover classify`: provider errors in, verdicts out.
//!
//! Reads JSON Lines (stdin or a file), one error per line in the form
//! [`ProviderError::from_json`] documents, and writes one JSON verdict per
//! non-blank line, in order. A bad line gets an error on stderr naming its
//! number and `{"error": "...", "line": N}` on stdout in its place; the rest
//! still run and the exit status is 1. The one-off form takes the error from
//! flags instead: `failover classify --status 429 --message "..."`.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;

use anyhow::{bail, Context};
use serde_json::json;

use super::lines::{Line, LineReader};
use super::timefmt::now_ms;
use super::EXIT_SOME_FAILED;
use crate::policy::{Policy, MAX_BATCH_REPORTS};
use crate::provider_error::ProviderError;
use crate::report::{flatten, FlatReport};
use crate::Limits;

/// Longest input line accepted. Messages themselves are cut to
/// [`crate::policy::MAX_MESSAGE_BYTES`] before matching, so this only bounds what is held
/// in memory while one line is parsed: a 1 MiB message JSON-escaped, nested
/// a few levels, fits with room to spare.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, clap::Args)]
pub(crate) struct ClassifyArgs {
    /// JSON Lines file to read; stdin when absent or `-`.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,

    /// Clock for HTTP-date `retry-after` values, in ms since the Unix epoch
    /// (default: now).
    #[arg(long, value_name = "MS")]
    now: Option<u64>,

    /// One-off form: the HTTP status.
    #[arg(long, value_parser = clap::value_parser!(u16).range(100..=599))]
    status: Option<u16>,

    /// One-off form: the provider (`openai`, `openrouter`, ...).
    #[arg(long)]
    provider: Option<String>,

    /// One-off form: the symbolic code (`ETIMEDOUT`, `rate_limit_exceeded`, ...).
    #[arg(long)]
    code: Option<String>,

    /// One-off form: the message, or a raw JSON error body.
    #[arg(long)]
    message: Option<String>,

    /// One-off form: a response header, `Name: value`; repeatable.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
}

impl ClassifyArgs {
    fn is_one_off(&self) -> bool {
        self.status.is_some()
            || self.provider.is_some()
            || self.code.is_some()
            || self.message.is_some()
            || !self.headers.is_empty()
    }

    fn one_off_error(&self) -> anyhow::Result<ProviderError> {
        let mut error = ProviderError {
            provider: self.provider.clone(),
            status: self.status,
            code: self.code.clone(),
            message: self.message.clone().unwrap_or_default(),
            ..ProviderError::default()
        };
        for header in &self.headers {
            let Some((name, value)) = header.split_once(':') else {
                bail!("--header {header:?} is not of the form `Name: value`");
            };
            error = error.with_header(name.trim(), value.trim());
        }
        Ok(error)
    }
}

pub fn run(policy: &Policy, args: ClassifyArgs) -> anyhow::Result<ExitCode> {
    let now_ms = args.now.unwrap_or_else(now_ms);
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());

    if args.is_one_off() {
        if args.file.is_some() {
            bail!("give either a FILE or the one-off flags (--status, --message, ...), not both");
        }
        let verdict = policy.classify(&args.one_off_error()?, now_ms)?;
        writeln!(out, "{}", serde_json::to_string(&verdict)?)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }

    let input = match args.file.as_deref() {
        None => Input::Stdin,
        Some(path) if path.as_os_str() == "-" => Input::Stdin,
        Some(path) => Input::File(
            File::open(path).with_context(|| format!("cannot open {}", path.display()))?,
        ),
    };
    let source = args
        .file
        .as_deref()
        .filter(|p| p.as_os_str() != "-")
        .map_or_else(|| "stdin".to_owned(), |p| p.display().to_string());

    match classify_lines(policy, input, &mut out, now_ms) {
        Ok(0) => Ok(ExitCode::SUCCESS),
        Ok(failed) => {
            eprintln!("failover classify: {failed} line(s) of {source} could not be classified");
            Ok(ExitCode::from(EXIT_SOME_FAILED))
        }
        // Whoever reads our output stopped reading; there is no one to tell.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        // Reading the input or writing the verdicts failed part-way.
        Err(e) => Err(anyhow::Error::new(e).context(format!("classifying {source}"))),
    }
}

/// Where the lines come from.
enum Input {
    Stdin,
    File(File),
}

impl Input {
    fn reader(self) -> Box<dyn BufRead> {
        match self {
            Input::Stdin => Box::new(io::stdin().lock()),
            Input::File(file) => Box::new(BufReader::with_capacity(READ_BUFFER_BYTES, file)),
        }
    }
}

/// Read buffer for a file: large reads, few system calls.
const READ_BUFFER_BYTES: usize = 256 * 1024;

/// Lines read and parsed ahead of the classification: enough to keep full
/// batches coming, few enough that memory stays bounded (a line is at
/// most [`MAX_LINE_BYTES`], but real lines are a few hundred bytes).
const READ_AHEAD_LINES: usize = 2 * MAX_BATCH_REPORTS;

/// One input line, read, parsed, flattened and cut for the policy.
struct ReadLine {
    number: usize,
    parsed: Result<FlatReport, String>,
}

/// Classifies every line; returns how many failed.
///
/// A thread reads, parses and flattens lines while this one classifies
/// and writes, so a file keeps two cores busy. Lines go to the policy in
/// batches of whatever has been read (at most [`MAX_BATCH_REPORTS`]), and
/// the verdicts are written and flushed after each batch: a file is
/// classified in large batches, while each line of a slow producer (a
/// person typing, a log being followed) is answered as soon as it arrives.
fn classify_lines(
    policy: &Policy,
    input: Input,
    out: &mut impl Write,
    now_ms: u64,
) -> io::Result<usize> {
    let (sender, lines) = mpsc::sync_channel::<io::Result<ReadLine>>(READ_AHEAD_LINES);
    let limits = policy.limits();
    // Not joined: a reader waiting on a slow input must not keep the
    // command from ending when writing fails. Once `lines` is dropped (when
    // this returns), its next send fails and it ends.
    std::thread::Builder::new()
        .name("classify-read".into())
        .spawn(move || read_lines(input, &sender, now_ms, &limits))?;
    let mut failed = 0;
    let mut batch = Vec::with_capacity(MAX_BATCH_REPORTS);
    // Ends when the reader is done and every line was received.
    while let Ok(first) = lines.recv() {
        let mut next = Some(first);
        let mut read_error = None;
        while let Some(read) = next.take() {
            match read {
                Ok(line) => batch.push(line),
                Err(error) => {
                    read_error = Some(error);
                    break;
                }
            }
            if batch.len() < MAX_BATCH_REPORTS {
                next = lines.try_recv().ok();
            }
        }
        // The lines read before a read error are still answered.
        failed += classify_batch(policy, &mut batch, out)?;
        out.flush()?;
        if let Some(error) = read_error {
            return Err(error);
        }
    }
    Ok(failed)
}

/// Reads, parses and flattens every line into `sender`; stops at the end
/// of the input, on a read error (sent on), or when no one receives any
/// more.
fn read_lines(
    input: Input,
    sender: &mpsc::SyncSender<io::Result<ReadLine>>,
    now_ms: u64,
    limits: &Limits,
) {
    let mut reader = LineReader::new(input.reader(), MAX_LINE_BYTES);
    let mut buf = Vec::new();
    loop {
        let line = match reader.next_line(&mut buf) {
            Ok(Some(line)) => line,
            Ok(None) => return,
            Err(e) => {
                let _ = sender.send(Err(e));
                return;
            }
        };
        let number = reader.number();
        let parsed = match line {
            Line::TooLong => Err(format!("line is longer than {MAX_LINE_BYTES} bytes")),
            Line::Bytes => match parse_line(&buf, number) {
                Ok(None) => continue,
                Ok(Some(error)) => Ok(flatten(&error, now_ms, limits)),
                Err(message) => Err(message),
            },
        };
        if sender.send(Ok(ReadLine { number, parsed })).is_err() {
            return;
        }
    }
}

/// Classifies the lines of `batch` (emptying it) and writes their verdicts,
/// or errors, in order; returns how many failed.
fn classify_batch(
    policy: &Policy,
    batch: &mut Vec<ReadLine>,
    out: &mut impl Write,
) -> io::Result<usize> {
    let reports: Vec<FlatReport> = batch
        .iter_mut()
        .filter_map(|line| line.parsed.as_mut().ok().map(std::mem::take))
        .collect();
    let mut verdicts = policy.classify_reports(reports).into_iter();
    let mut failed = 0;
    for line in batch.drain(..) {
        let result = match line.parsed {
            Ok(_) => verdicts
                .next()
                .expect("one verdict per parsed line")
                .map_err(|e| e.to_string()),
            Err(message) => Err(message),
        };
        match result {
            Ok(verdict) => {
                serde_json::to_writer(&mut *out, &verdict)?;
                out.write_all(b"\n")?;
            }
            Err(message) => {
                failed += 1;
                let number = line.number;
                eprintln!("failover classify: line {number}: {message}");
                serde_json::to_writer(&mut *out, &json!({ "error": message, "line": number }))?;
                out.write_all(b"\n")?;
            }
        }
    }
    Ok(failed)
}

/// `Ok(None)` for a blank line.
fn parse_line(bytes: &[u8], number: usize) -> Result<Option<ProviderError>, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| format!("not valid UTF-8 (bad byte at offset {})", e.valid_up_to()))?;
    // A byte-order mark some editors put at the start of a file.
    let text = if number == 1 {
        text.trim_start_matches('\u{feff}')
    } else {
        text
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    ProviderError::from_json_str(text)
        .map(Some)
        .map_err(|e| e.to_string())
}
