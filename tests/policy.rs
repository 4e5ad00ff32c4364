//! The policy component as the host runs it, sharing one compiled default
//! policy: the case corpora natively and through the component, the
//! contract, the profile and runner functions, the sandbox.

mod cases;
mod contract;
mod contract_one;
mod profiles;
pub(crate) mod python;
mod runner;
mod sandbox;
mod sdk;
mod support;
