//! What can go wrong loading or running a policy module.

/// Where people read about contract versions and moving between them.
const CONTRACT_GUIDE: &str = "docs/contract.md";

/// A policy module was refused or a call into it failed. The host stays up
/// in every case; messages never contain input text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The wasmtime engine could not be set up.
    #[error("policy engine: {0}")]
    Engine(String),
    /// The bytes are not a valid WebAssembly component.
    #[error("not a valid policy component: {0}")]
    Compile(String),
    /// The module imports something the contract does not provide (WASI,
    /// say). A policy must be a pure function of its inputs.
    #[error("the module imports {}, which the {contract} world does not provide; a policy may import nothing but the WASI 0.2 interfaces that get deterministic stand-ins ({})", .imports.join(", "), CONTRACT_GUIDE)]
    ForeignImports {
        /// What it imports.
        imports: Vec<String>,
        /// The world it should implement.
        contract: &'static str,
    },
    /// The module was built for another version of the contract.
    #[error("the module was built for {found}, but this host runs {expected}; {} says what changed between them and how to move a module to a version this host runs", CONTRACT_GUIDE)]
    ContractMismatch {
        /// The contract the module names.
        found: String,
        /// The contract this host runs.
        expected: &'static str,
    },
    /// The module lacks an export the contract requires.
    #[error("the module does not export {0}")]
    MissingExport(String),
    /// The module trapped, ran out of fuel or memory, or hit the deadline.
    /// The instance is discarded; the next call gets a fresh one.
    #[error("the policy module failed during `{call}`: {kind}")]
    Trap {
        /// The contract function that was called.
        call: &'static str,
        /// Why it stopped.
        kind: TrapKind,
    },
    /// Asked the same twice, the module answered differently: it keeps
    /// state or reads something besides its inputs.
    #[error("asked the same twice, the module answered {first}, then {second}")]
    Nondeterministic {
        /// Its first answer, written out (cut to a few hundred bytes).
        first: String,
        /// Its second answer.
        second: String,
    },
    /// The module returned something the host refuses to act on.
    #[error("the policy module returned an invalid decision from `{call}`: {problem}")]
    InvalidOutput {
        /// The contract function that answered.
        call: &'static str,
        /// What is wrong with the answer.
        problem: String,
    },
}

/// Why a call into a policy module stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrapKind {
    /// Its fuel budget per call ran out ([`crate::Limits::fuel_per_call`]).
    #[error("it ran out of fuel (the per-call budget)")]
    OutOfFuel,
    /// The wall-clock deadline passed ([`crate::Limits::call_deadline`]).
    #[error("it ran past the wall-clock deadline")]
    Deadline,
    /// Its stack overflowed.
    #[error("it exhausted its stack")]
    StackOverflow,
    /// It asked for more memory than [`crate::Limits::max_memory_bytes`].
    #[error("it ran out of memory (the per-instance limit)")]
    Memory,
    /// Any other trap, by its one-line message.
    #[error("it trapped: {0}")]
    Other(String),
}
