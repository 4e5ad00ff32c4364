//! `failover doctor`: is this set-up able to serve, and if not, why. It
//! checks the config, the state directory, the policy, and for each
//! candidate of the default chain its credentials and whether its
//! provider's address answers — then says what would serve now.
//!
//! Reaching a provider is one plain GET of its base URL, without a
//! credential: any HTTP answer (even 404) means the address works; what
//! is reported otherwise is the real cause (the name does not resolve, the
//! connection is refused, nothing answers in time, TLS fails).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;

use super::timefmt::now_ms;
use super::Context;
use crate::config::Config;
use crate::inspect::readiness::{chain_readiness, CandidateReadiness};
use crate::state::AuthStore;

/// How long a provider's address gets to answer: a healthy API answers a
/// bare GET in well under a second; five allows a slow network.
const REACH_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, clap::Args)]
pub(crate) struct DoctorArgs {
    /// Do not contact the providers (check the set-up only).
    #[arg(long)]
    offline: bool,
}

/// Exit status when something would keep requests from being served.
const EXIT_UNHEALTHY: u8 = 1;

pub fn run(context: &Context, args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let mut healthy = true;
    let mut check = |ok: bool, line: String| {
        println!("{} {line}", if ok { "ok  " } else { "FAIL" });
        healthy &= ok;
    };
    match context.config_file()? {
        Some(path) => match context.config() {
            Ok(_) => check(true, format!("config {}", path.display())),
            Err(error) => {
                check(false, format!("config: {error:#}"));
                return Ok(ExitCode::from(EXIT_UNHEALTHY));
            }
        },
        None => check(
            true,
            "config: none found, using the built-in defaults (write one with `failover init`)"
                .into(),
        ),
    }
    let config = context.config()?;
    let store = context.store()?;
    check(true, format!("state {}", store.paths().dir.display()));
    match context.policy() {
        Ok(policy) => {
            let v = policy.version();
            check(
                true,
                format!("policy {} {} (contract {})", v.name, v.version, v.contract),
            );
        }
        Err(error) => check(false, format!("policy: {error:#}")),
    }
    let candidates = chain_readiness(context.policy()?, config, &store, now_ms())?;
    check_shared_state(&store, &mut check);
    if candidates.is_empty() {
        check(
            false,
            "chain: no model configured (set agents.defaults.model.primary)".into(),
        );
    }
    let prober = if args.offline {
        None
    } else {
        Some(Prober::new()?)
    };
    let serving = report_candidates(config, &candidates, prober.as_ref());
    match &serving {
        Some(model) => println!("=> {model} would serve the default chain now"),
        None if !candidates.is_empty() => check(
            false,
            "=> nothing in the default chain can serve now".into(),
        ),
        None => {}
    }
    Ok(if healthy && serving.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_UNHEALTHY)
    })
}

/// The shared store's health, after a read: what that read found. A Redis
/// down is a warning: gateways go on from their local copies.
fn check_shared_state(store: &AuthStore, check: &mut dyn FnMut(bool, String)) {
    let Some(shared) = &store.backend_status().shared else {
        return;
    };
    match &shared.health.error {
        None => check(
            true,
            format!("routing state and sessions: redis {} answers", shared.url),
        ),
        Some(error) => println!(
            "warn routing state and sessions: redis {} does not answer ({error}); \
             gateways would serve from their local copies",
            shared.url
        ),
    }
}

/// A line for each candidate of the chain — its credentials and, unless
/// offline, whether its address answers; the first that would serve.
fn report_candidates(
    config: &Config,
    candidates: &[CandidateReadiness],
    prober: Option<&Prober>,
) -> Option<String> {
    let mut serving = None;
    for candidate in candidates {
        let endpoint = config.known_model(&candidate.model);
        let reach = match (&endpoint, prober) {
            (Err(error), _) => Err(error.clone()),
            (Ok(_), None) => Ok("not contacted (--offline)".to_owned()),
            (Ok(endpoint), Some(prober)) => prober.reach(&endpoint.base_url),
        };
        let ok = candidate.ready && reach.is_ok();
        let place = endpoint.as_ref().map_or_else(
            |_| String::new(),
            |e| format!(" at {}", shown_url(&e.base_url)),
        );
        let reach = reach.unwrap_or_else(|e| e);
        println!(
            "{} {}{place} — credentials: {}; address: {reach}",
            if ok { "ok  " } else { "warn" },
            candidate.model,
            candidate.why
        );
        if ok && serving.is_none() {
            serving = Some(candidate.model.clone());
        }
    }
    serving
}

/// One runtime and one HTTP client for every address checked.
struct Prober {
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
}

impl Prober {
    fn new() -> anyhow::Result<Prober> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let client = reqwest::Client::builder()
            .timeout(REACH_TIMEOUT)
            .build()
            .context("cannot build an HTTP client")?;
        Ok(Prober { runtime, client })
    }

    /// One GET of `base_url`: "answers (HTTP 404)", or the cause it does not.
    fn reach(&self, base_url: &str) -> Result<String, String> {
        self.runtime.block_on(async {
            match self.client.get(base_url).send().await {
                Ok(response) => Ok(format!("answers (HTTP {})", response.status().as_u16())),
                // The URL stays out of the words: it may carry a key.
                Err(error) => Err(format!("does not answer: {}", cause(&error.without_url()))),
            }
        })
    }
}

/// A base URL as shown: scheme, host, port and path — no user, password
/// or query, where a key may hide.
fn shown_url(base_url: &str) -> String {
    match reqwest::Url::parse(base_url) {
        Ok(url) => {
            let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
            format!(
                "{}://{}{port}{}",
                url.scheme(),
                url.host_str().unwrap_or(""),
                url.path()
            )
        }
        Err(_) => "(an unparsable URL)".to_owned(),
    }
}

/// The root cause of a failed request, in plain words.
fn cause(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        text = inner.to_string();
        source = inner.source();
    }
    let lower = text.to_ascii_lowercase();
    if error.is_timeout() {
        format!("no answer within {} s", REACH_TIMEOUT.as_secs())
    } else if lower.contains("dns")
        || lower.contains("failed to lookup")
        || lower.contains("name or service not known")
    {
        format!("the host name does not resolve (DNS: {text})")
    } else if lower.contains("connection refused") {
        "connection refused (nothing listens there)".to_owned()
    } else if lower.contains("certificate") || lower.contains("tls") {
        format!("TLS failed ({text})")
    } else {
        text
    }
}
