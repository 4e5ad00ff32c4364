//! The `failover` command; everything it does lives in the library's `cli`.

fn main() -> std::process::ExitCode {
    failover::cli::main()
}
