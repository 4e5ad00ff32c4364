//! `failover serve`: the OpenAI-compatible gateway.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, Context as _};

use super::Context;
use crate::gateway::{
    self, ClientKeys, Gateway, GatewayOptions, CLIENT_KEYS_FILE_ENV, DEFAULT_LISTEN,
};
use crate::runner::retry_wait_cap_from_env;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The address to listen on. Beyond loopback, client keys are required.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// A file of client keys, one per line; each request must then carry
    /// one (`Authorization: Bearer <key>`).
    #[arg(long, value_name = "FILE", env = CLIENT_KEYS_FILE_ENV)]
    client_keys_file: Option<PathBuf>,
}

pub fn run(context: &Context, args: ServeArgs) -> anyhow::Result<ExitCode> {
    let client_keys = match &args.client_keys_file {
        Some(path) => ClientKeys::from_file(path)?,
        None => ClientKeys::default(),
    };
    let options = GatewayOptions {
        agent: context.agent().to_owned(),
        client_keys,
        retry_wait_cap_ms: retry_wait_cap_from_env().map_err(|e| anyhow!(e))?,
    };
    let policy = context.shared_policy()?;
    let gateway = Gateway::new(
        policy.clone(),
        context.config()?.clone(),
        &context.state_dir()?,
        options,
    )?;
    gateway.check_listen(args.listen)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let local = listener.local_addr()?;
        eprintln!(
            "failover: serving on http://{local} (agent {}, policy {})",
            context.agent(),
            policy.version()
        );
        gateway::serve(listener, Arc::new(gateway), shutdown_signal()).await?;
        eprintln!("failover: stopped");
        Ok(ExitCode::SUCCESS)
    })
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    eprintln!("failover: shutting down; finishing requests in flight");
}
