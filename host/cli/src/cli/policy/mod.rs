//! `failover policy encode|check|swap|rollback|show` (and `new|build`, in
//! its child `new`): a built guest made a component, the validation gate
//! without a server, and the admin calls to a running `failover serve`.

mod new;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context as _};
use serde_json::Value;

use super::Context;
use crate::gateway::admin::AdminFiles;
use crate::policy::gate;

/// Exit status when the module was refused.
const EXIT_REFUSED: u8 = 1;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum PolicyCommand {
    /// Make a policy component of a core module built for
    /// wasm32-unknown-unknown with the contract's bindings, then check it.
    Encode {
        /// The core module (`target/wasm32-unknown-unknown/release/NAME.wasm`).
        core: PathBuf,
        /// Where to write the component.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Write a new policy crate on the policy SDK (contract 1.0).
    New {
        /// The policy's name, also its crate's.
        name: String,
        /// Where to write the crate (default: ./NAME); must not exist.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// The policy-sdk directory to depend on (default: the one this
        /// binary was built beside).
        #[arg(long, value_name = "DIR")]
        sdk: Option<PathBuf>,
    },
    /// Build a policy crate into a component (DIR/NAME.wasm), then check it.
    Build {
        /// The policy crate's directory.
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
    /// Run the validation gate on a module and print its report.
    Check {
        /// The policy component (`.wasm`).
        path: PathBuf,
    },
    /// Make a running `failover serve` use this module (after the gate).
    Swap {
        /// The policy component (`.wasm`).
        path: PathBuf,
    },
    /// Return a running `failover serve` to the module the last swap replaced.
    Rollback,
    /// The running gateway's active and previous modules.
    Show,
}

pub fn run(context: &Context, command: PolicyCommand) -> anyhow::Result<ExitCode> {
    match command {
        PolicyCommand::Encode { core, output } => encode_and_check(context, &core, &output),
        PolicyCommand::New { name, dir, sdk } => new::new(&name, dir, sdk),
        PolicyCommand::Build { dir } => new::build(context, &dir),
        PolicyCommand::Check { path } => check(context, &read_module(&path)?),
        PolicyCommand::Swap { path } => {
            let bytes = read_module(&path)?;
            admin_call(context, "/admin/policy/swap", Some(bytes))
        }
        PolicyCommand::Rollback => admin_call(context, "/admin/policy/rollback", Some(Vec::new())),
        PolicyCommand::Show => admin_call(context, "/admin/policy", None),
    }
}

/// The gate's report on `bytes`; exit 1 when refused.
/// Makes a component of the core module at `core`, writes it to `output`
/// and runs the gate on it.
pub(super) fn encode_and_check(
    context: &Context,
    core: &Path,
    output: &Path,
) -> anyhow::Result<ExitCode> {
    let module = read_module(core)?;
    let component = wit_component::ComponentEncoder::default()
        .module(&module)
        .and_then(|encoder| encoder.validate(true).encode())
        .map_err(|e| {
            anyhow!(
                "{} is not a policy guest's core module: {e:#}",
                core.display()
            )
        })?;
    std::fs::write(output, &component)
        .with_context(|| format!("cannot write {}", output.display()))?;
    eprintln!(
        "wrote {} ({} bytes); checking it:",
        output.display(),
        component.len()
    );
    check(context, &component)
}

fn check(context: &Context, bytes: &[u8]) -> anyhow::Result<ExitCode> {
    let limits = context.config()?.policy_limits();
    let (_, report) = gate::check(context.engine()?, bytes, limits);
    print!("{}", report.render());
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_REFUSED)
    })
}

fn read_module(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read policy module {}", path.display()))
}

/// Calls the admin endpoint the running gateway published; `body` makes it
/// a POST.
fn admin_call(context: &Context, route: &str, body: Option<Vec<u8>>) -> anyhow::Result<ExitCode> {
    let (address, token) = AdminFiles::of(&context.state_dir()?).read()?;
    let url = format!("http://{}{route}", address.address);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let (status, answer) = runtime.block_on(async {
        let client = reqwest::Client::new();
        let request = match body {
            Some(bytes) => client.post(&url).body(bytes),
            None => client.get(&url),
        };
        let response = request.bearer_auth(token).send().await.with_context(|| {
            format!(
                "the gateway's admin endpoint at {} does not answer (pid {})",
                address.address, address.pid
            )
        })?;
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        anyhow::Ok((status, text))
    })?;
    let json: Value = serde_json::from_str(&answer)
        .map_err(|_| anyhow!("the admin endpoint answered {status}: {answer}"))?;
    if let Some(report) = json.get("report").and_then(Value::as_str) {
        print!("{report}");
    }
    let describe = |v: &Value| {
        if v.is_null() {
            "none".to_owned()
        } else {
            format!(
                "{} {} (sha256:{})",
                v["name"].as_str().unwrap_or("?"),
                v["version"].as_str().unwrap_or("?"),
                v["sha256"].as_str().unwrap_or("?")
            )
        }
    };
    if status.is_success() {
        println!("active: {}", describe(&json["active"]));
        println!("previous: {}", describe(&json["previous"]));
        if let Some(depth) = json.get("rollbacks").and_then(Value::as_u64) {
            println!("rollbacks possible: {depth}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(error) = json.get("error").and_then(Value::as_str) {
        eprintln!("failover: {error}");
    }
    if json.get("active").is_some() {
        println!("still active: {}", describe(&json["active"]));
    }
    Ok(ExitCode::from(EXIT_REFUSED))
}
