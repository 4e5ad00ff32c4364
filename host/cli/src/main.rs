//! The `failover` command; everything it does lives in the library's `cli`.

/// mimalloc instead of the system allocator: a gateway request allocates
/// and frees hundreds of small blocks across the runtime's worker threads,
/// and glibc's malloc spent about a fifth of the gateway's CPU on them,
/// partly waiting on its arena locks (BENCHMARKS.md, issue 16).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    failover::cli::main()
}
