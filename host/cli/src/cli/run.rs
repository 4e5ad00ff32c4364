//! `failover run`: one prompt through the chain with real providers; the
//! reply on stdout, who served it and any fallback on stderr.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, Context as _};
use futures_util::StreamExt;

use super::Context;
use crate::model::{ChatReply, ChatRequest, Message, Role, StreamEvent};
use crate::runner::{retry_wait_cap_from_env, ReplyEnd, RunOptions, Runner, Unobserved};
use crate::time::{now_ms, SystemClock};
use crate::upstreams::guard::{self, Broken};
use crate::upstreams::HttpProvider;

/// Exit status when the run failed (every candidate, or a stop).
const EXIT_RUN_FAILED: u8 = 1;

#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// Use exactly this `provider/model` with no fallback, or an alias of
    /// `models.aliases` (a model, or a chain of its own), instead of the
    /// configured chain.
    #[arg(long, value_name = "PROVIDER/MODEL")]
    model: Option<String>,
    /// The session whose profile pin and fallback state apply.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// A system prompt.
    #[arg(long, value_name = "TEXT")]
    system: Option<String>,
    /// Print the reply as it streams in.
    #[arg(long)]
    stream: bool,
    /// The prompt; read from stdin when absent or `-`.
    prompt: Vec<String>,
}

pub fn run(context: &Context, args: RunArgs) -> anyhow::Result<ExitCode> {
    let prompt = match args.prompt.as_slice() {
        [] => read_stdin()?,
        [dash] if dash == "-" => read_stdin()?,
        words => words.join(" "),
    };
    if prompt.trim().is_empty() {
        return Err(anyhow!("the prompt is empty"));
    }
    let config = context.config()?.clone();
    // An alias is its chain: the first model, then the others in order.
    let chain = args
        .model
        .as_deref()
        .map(|model| config.expand_aliases([model]))
        .unwrap_or_default();
    config.check_models(&chain).map_err(|e| anyhow!(e))?;
    let (store, sessions) = context.serving_stores()?;
    let provider = HttpProvider::new(Arc::new(config.clone()), store.clone())?;
    let deadline = now_ms().saturating_add(config.run_timeout_ms());
    let max_stream_bytes = config.gateway.limits().max_stream_bytes;
    let runner = Runner::new(
        context.shared_policy()?,
        config,
        store,
        sessions,
        provider,
        SystemClock,
    )
    .with_retry_wait_cap(retry_wait_cap_from_env().map_err(|e| anyhow!(e))?);
    let request = ChatRequest {
        model: args.model.clone().unwrap_or_else(|| "auto".into()),
        system: args.system,
        messages: vec![Message {
            role: Role::User,
            content: prompt,
        }],
        stream: args.stream,
        deadline_ms: Some(deadline),
        ..ChatRequest::default()
    };
    let options = RunOptions {
        session: args.session,
        deadline_ms: Some(deadline),
        ..match chain.split_first() {
            Some((first, rest)) => RunOptions::for_chain(context.agent(), first, rest),
            None => RunOptions::for_requested(context.agent(), "auto"),
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let bounds = (deadline, max_stream_bytes);
    runtime.block_on(run_and_print(&runner, &options, &request, bounds))
}

/// Runs the request and prints the reply on stdout, who served it on
/// stderr; a stream that breaks after it started is reported and recorded.
async fn run_and_print(
    runner: &Runner<HttpProvider, SystemClock>,
    options: &RunOptions,
    request: &ChatRequest,
    (deadline, max_stream_bytes): (u64, u64),
) -> anyhow::Result<ExitCode> {
    let policy = runner.policy();
    let outcome = match runner.run_with(policy.as_ref(), options, request).await {
        Ok(outcome) => outcome,
        Err(error) => {
            eprintln!("failover: {error}");
            if let crate::runner::RunError::Exhausted(summary) = &error {
                print_attempts(&summary.attempts);
            }
            return Ok(ExitCode::from(EXIT_RUN_FAILED));
        }
    };
    let broken = match outcome.reply {
        ChatReply::Complete(completion) => {
            println!("{}", completion.text);
            None
        }
        ChatReply::Stream(stream) => {
            print_stream(guard::guard(stream, Some(deadline), max_stream_bytes)).await?
        }
    };
    print_attempts(&outcome.attempts);
    let after = match outcome.attempts.len() {
        0 => String::new(),
        n => format!(" after {n} failed attempt(s)"),
    };
    eprintln!(
        "served by {} (profile {}){after}",
        outcome.model, outcome.profile
    );
    let failure = broken
        .as_ref()
        .and_then(|b| b.provider_failure(&outcome.provider));
    if let Some(unfinished) = &outcome.unfinished {
        let end = match (&broken, &failure) {
            (None, _) => ReplyEnd::Complete,
            (Some(_), Some(error)) => ReplyEnd::Broken(error),
            (Some(_), None) => ReplyEnd::Stopped,
        };
        if let Err(e) = runner.finish_reply(policy.as_ref(), &Unobserved, unfinished, end) {
            eprintln!("failover: cannot record how the stream ended: {e}");
        }
    }
    let Some(broken) = broken else {
        return Ok(ExitCode::SUCCESS);
    };
    eprintln!("failover: {}", broken.message());
    Ok(ExitCode::from(EXIT_RUN_FAILED))
}

/// Prints a stream as it arrives; what broke it, if something did.
async fn print_stream(mut events: guard::GuardedStream) -> anyhow::Result<Option<Broken>> {
    let mut stdout = std::io::stdout().lock();
    let mut broken = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(StreamEvent::Text(text)) => write!(stdout, "{text}")?,
            Ok(StreamEvent::ToolCall(call)) => {
                if let Some(name) = &call.name {
                    write!(stdout, "\n[tool call {name}] ")?;
                }
                write!(stdout, "{}", call.arguments)?;
            }
            Ok(StreamEvent::Finish { .. } | StreamEvent::Extra(_)) => {}
            Err(error) => {
                broken = Some(error);
                break;
            }
        }
        stdout.flush()?;
    }
    writeln!(stdout)?;
    Ok(broken)
}

fn print_attempts(attempts: &[crate::runner::Attempt]) {
    for attempt in attempts {
        eprintln!(
            "  ✗ {} via {}: {} — {}",
            attempt.model,
            attempt.profile.as_deref().unwrap_or("(skipped)"),
            attempt.reason.as_str(),
            attempt.summary
        );
    }
}

fn read_stdin() -> anyhow::Result<String> {
    let mut prompt = String::new();
    std::io::stdin()
        .read_to_string(&mut prompt)
        .context("cannot read the prompt from stdin")?;
    Ok(prompt)
}
