//! `failover serve`: the OpenAI-compatible gateway.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, Context as _};

use super::Context;
use crate::gateway::admin::{self, Admin, AdminFiles};
use crate::gateway::{
    self, ClientKeys, Gateway, GatewayOptions, CLIENT_KEYS_FILE_ENV, DEFAULT_LISTEN,
};
use crate::replay::record;
use crate::runner::retry_wait_cap_from_env;

#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on. Beyond loopback, client keys are required.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// A file of client keys, one per line; each request must then carry
    /// one (`Authorization: Bearer <key>`).
    #[arg(long, value_name = "FILE", env = CLIENT_KEYS_FILE_ENV)]
    client_keys_file: Option<PathBuf>,
    /// The admin endpoint (policy swap and rollback): loopback only; port 0
    /// picks a free one. `failover policy swap` finds it in the state directory.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    admin_listen: SocketAddr,
    /// Record the traffic as a trace in this directory (`failover replay`
    /// replays it). Secrets are never written.
    #[arg(long, value_name = "DIR")]
    record: Option<PathBuf>,
    /// With `--record`: keep prompts and replies too.
    #[arg(long, requires = "record")]
    record_content: bool,
}

pub fn run(context: &Context, args: ServeArgs) -> anyhow::Result<ExitCode> {
    let client_keys = match &args.client_keys_file {
        Some(path) => ClientKeys::from_file(path)?,
        None => ClientKeys::default(),
    };
    let retry_wait_cap_ms = retry_wait_cap_from_env().map_err(|e| anyhow!(e))?;
    let options = GatewayOptions {
        agent: context.agent().to_owned(),
        client_keys,
        retry_wait_cap_ms,
        recorder: recorder(context, &args, retry_wait_cap_ms)?,
    };
    let policy = context.shared_policy()?;
    let gateway = Gateway::new(
        policy.clone(),
        context.config()?.clone(),
        &context.state_dir()?,
        options,
    )?;
    gateway.check_listen(args.listen)?;
    if !args.admin_listen.ip().is_loopback() {
        return Err(anyhow!(
            "the admin endpoint listens on loopback only, not {}",
            args.admin_listen
        ));
    }
    let admin = AdminParts {
        files: AdminFiles::of(&context.state_dir()?),
        engine: context.engine()?.clone(),
        limits: context.config()?.policy_limits(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let state = match gateway.runner().store().backend_status().shared {
        Some(shared) => format!("state in redis {}", shared.url),
        None => "state in files".to_owned(),
    };
    let banner = format!(
        "agent {}, policy {}, {state}",
        context.agent(),
        policy.version()
    );
    runtime.block_on(serve_until_stopped(
        Arc::new(gateway),
        admin,
        &args,
        &banner,
    ))
}

/// The recorder `--record` asks for, its trace started.
fn recorder(
    context: &Context,
    args: &ServeArgs,
    retry_wait_cap_ms: u64,
) -> anyhow::Result<Option<Arc<record::Recorder>>> {
    let Some(dir) = &args.record else {
        return Ok(None);
    };
    let store = context.store()?;
    let sessions = super::session::sessions(context)?;
    let header = record::header_for(
        context.config()?,
        context.agent(),
        &store,
        &sessions,
        crate::time::now_ms(),
        retry_wait_cap_ms,
    )?;
    let recorder = record::Recorder::start(dir, &header, args.record_content)?;
    eprintln!("failover: recording to {}", recorder.path().display());
    Ok(Some(Arc::new(recorder)))
}

/// What the admin endpoint is made of.
struct AdminParts {
    files: AdminFiles,
    engine: crate::PolicyEngine,
    limits: crate::Limits,
}

/// Listens, serves the gateway and its admin endpoint until Ctrl-C or
/// SIGTERM, then drains both.
async fn serve_until_stopped(
    gateway: Arc<Gateway>,
    parts: AdminParts,
    args: &ServeArgs,
    banner: &str,
) -> anyhow::Result<ExitCode> {
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let local = listener.local_addr()?;
    let admin_listener = tokio::net::TcpListener::bind(args.admin_listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.admin_listen))?;
    let admin_local = admin_listener.local_addr()?;
    let token = parts.files.publish(admin_local)?;
    let admin = Arc::new(Admin {
        gateway: gateway.clone(),
        loader: Arc::new(crate::policy::Loader {
            engine: parts.engine,
            limits: parts.limits,
        }),
        token,
    });
    eprintln!("failover: serving on http://{local} ({banner}; admin on {admin_local})");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop.send(true);
    });
    let until_stopped = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
        let _ = stopped.wait_for(|s| *s).await;
    };
    let admin_server = gateway::serve_router(
        admin_listener,
        admin::router(admin),
        gateway.limits(),
        until_stopped(stopped.clone()),
    );
    let served = tokio::join!(
        gateway::serve(listener, gateway, until_stopped(stopped)),
        admin_server
    );
    parts.files.withdraw();
    served.0?;
    served.1?;
    eprintln!("failover: stopped");
    Ok(ExitCode::SUCCESS)
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
