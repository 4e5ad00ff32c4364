//! Embedding the fallback runner with your own provider.
//!
//! An agent runtime implements [`Provider`] (here a toy one: Anthropic is
//! overloaded, everything else answers), points a [`Runner`] at a state
//! directory and a config, and runs requests. The policy decides everything
//! — the chain, the profiles, when to rotate or fall back — and the runner
//! keeps cooldowns and session overrides on disk.
//!
//! Run with `cargo run --example embed_runner`.

use failover::auth::CredentialKind;
use failover::config::{Config, ModelChoice};
use failover::runner::{CallError, Provider, RunError, RunOptions, Runner, Target};
use failover::state::{AuthStore, SessionStore, StateDir};
use failover::time::SystemClock;
use failover::{Policy, PolicyEngine, ProviderError};

/// A provider of your own: real code would call the model's HTTP API with
/// the credential of `target.profile`.
struct ToyProvider;

impl Provider for ToyProvider {
    type Request = String;
    type Reply = String;

    async fn call(&self, target: &Target, prompt: &String) -> Result<String, CallError> {
        if target.provider == "anthropic" {
            let body =
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
            return Err(CallError::Failed(Box::new(
                ProviderError::message(body).with_status(529),
            )));
        }
        Ok(format!("{} says hello to {prompt:?}", target.model))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let state = tempfile::tempdir()?;
    let paths = StateDir::at(state.path()).agent("main")?;
    let store = AuthStore::open(paths.clone())?;
    store.update_profiles(|file| {
        file.put_static(
            "anthropic:main",
            "anthropic",
            CredentialKind::ApiKey,
            "sk-ant-example",
        )?;
        file.put_static(
            "openai:main",
            "openai",
            CredentialKind::ApiKey,
            "sk-example",
        )
    })?;

    let mut config = Config::default();
    config.agents.defaults.model = ModelChoice {
        primary: Some("anthropic/claude-sonnet-4".into()),
        fallbacks: Some(vec!["openai/gpt-4o".into()]),
        ..Default::default()
    };

    let engine = PolicyEngine::new()?;
    let policy = Policy::default_policy(&engine)?;
    let sessions = SessionStore::for_agent(&paths.dir);
    let runner = Runner::new(
        std::sync::Arc::new(policy),
        config,
        store,
        sessions,
        ToyProvider,
        SystemClock,
    );

    let options = RunOptions {
        session: Some("demo".into()),
        ..RunOptions::default()
    };
    match runner.run(&options, &"the world".to_owned()).await {
        Ok(outcome) => {
            println!("{}", outcome.reply);
            println!(
                "served by {} with profile {}",
                outcome.model, outcome.profile
            );
            for attempt in &outcome.attempts {
                println!(
                    "  failed first: {} ({}: {})",
                    attempt.model,
                    attempt.reason.as_str(),
                    attempt.summary
                );
            }
        }
        Err(RunError::Exhausted(summary)) => println!("{summary}"),
        Err(other) => return Err(other.into()),
    }
    let entry = runner.sessions().get("demo")?;
    println!(
        "session now on {:?} (an automatic fallback, kept for later turns)",
        entry.model()
    );
    Ok(())
}
