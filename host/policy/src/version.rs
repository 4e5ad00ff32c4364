//! Which policy module decides, and what it has cost since it was loaded.

/// Which module is running: what operators see in status output and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyVersion {
    /// The module's own name (`failover-default`).
    pub name: String,
    /// The module's own version.
    pub version: String,
    /// The contract it was built for (`failover:policy@1.0.0`).
    pub contract: String,
    /// SHA-256 of the component's bytes, lowercase hex.
    pub sha256: String,
}

impl std::fmt::Display for PolicyVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = self.sha256.get(..12).unwrap_or(&self.sha256);
        write!(
            f,
            "{} {} ({}, sha256:{short})",
            self.name, self.version, self.contract
        )
    }
}

/// Counters for one module since it was loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PolicyStats {
    /// Calls made into the module.
    pub calls: u64,
    /// Instances created (the first, and one after every trap).
    pub instantiations: u64,
    /// Calls that trapped.
    pub traps: u64,
    /// The most fuel any successful call used: how close the module comes
    /// to [`crate::Limits::fuel_per_call`].
    pub max_fuel_used: u64,
    /// Fuel used by all successful calls together; divided by `calls`, the
    /// average cost of a call.
    pub total_fuel_used: u64,
}
