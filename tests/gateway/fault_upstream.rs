//! The tests' fault-injecting upstream as a program, to watch failover
//! recover by hand: it serves OpenAI-shaped (`/<any>/v1/chat/completions`)
//! and Anthropic-shaped (`/<any>/v1/messages`) calls, answering every
//! model with "hello from <model> …" unless the request names a fault for
//! it — `hang:claude-x`, `cut:gpt-x` … (see `faults.rs`).
//!
//! `cargo run --example fault-upstream [ADDRESS]` (default 127.0.0.1:9100);
//! `examples/fault-demo.json5` is a gateway config that uses it.

#[path = "emulation.rs"]
mod emulation;
#[path = "faults.rs"]
mod faults;
#[path = "upstream.rs"]
mod upstream;

/// Where it listens unless told otherwise.
const DEFAULT_ADDRESS: &str = "127.0.0.1:9100";

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| DEFAULT_ADDRESS.to_owned());
    let up = upstream::Upstream::start_on(&address).await?;
    println!("fault-injecting upstream on {}", up.base);
    println!("name a fault in a prompt as <fault>:<model>, e.g. \"cut:gpt-x\"");
    tokio::signal::ctrl_c().await
}
