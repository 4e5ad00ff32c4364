//! Integration tests of the policy component as the host runs it. One test
//! binary (each links wasmtime) sharing one compiled default policy.

mod native;

mod policy {
    pub mod cases;
    pub mod contract;
    pub mod profiles;
    pub mod runner;
    pub mod sandbox;
    pub mod support;
}
