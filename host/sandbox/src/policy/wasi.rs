//! Stand-ins for the WASI imports that some policy toolchains write into
//! every module they build (componentize-py's output imports 25 WASI 0.2
//! interfaces, whatever the policy does). A policy is pure, so none of them
//! may reach the machine:
//!
//! - the wall clock reads the Unix epoch and the monotonic clock zero;
//! - random bytes are a fixed sequence, the same on every call;
//! - the environment, the arguments and the working directory are empty;
//! - everything else — files, sockets, standard streams, polling, exit —
//!   traps when called, failing that call with a policy error.
//!
//! Only WASI 0.2 interfaces of `STANDIN_INTERFACES` get stand-ins; any
//! other import is refused ([`foreign_imports`]).

use wasmtime::component::{Component, ComponentType, Lift, Linker, LinkerInstance, Lower};
use wasmtime::StoreContextMut;

/// The WASI packages whose interfaces get stand-ins.
pub(crate) const STANDIN_INTERFACES: &[&str] = &[
    "wasi:cli/",
    "wasi:clocks/",
    "wasi:filesystem/",
    "wasi:io/",
    "wasi:random/",
    "wasi:sockets/",
];

/// The WASI version line the stand-ins answer for: 0.2.x.
const STANDIN_VERSION: &str = "@0.2.";

/// The most random bytes one call may ask for: more than any interpreter
/// seeds itself with, too little to exhaust a policy's memory limit.
const MAX_RANDOM_BYTES: u64 = 64 * 1024;

/// The seed of the fixed "random" sequence.
const RANDOM_SEED: u64 = 0x5eed_f00d_cafe_d00d;

/// The imports of `component` that no stand-in covers, by name.
pub fn foreign_imports(engine: &wasmtime::Engine, component: &Component) -> Vec<String> {
    component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_owned())
        .filter(|name| !has_standin(name))
        .collect()
}

fn has_standin(name: &str) -> bool {
    STANDIN_INTERFACES.iter().any(|p| name.starts_with(p)) && name.contains(STANDIN_VERSION)
}

/// `wasi:clocks/wall-clock`'s `datetime`.
#[derive(ComponentType, Lift, Lower, Clone, Copy)]
#[component(record)]
struct Datetime {
    seconds: u64,
    nanoseconds: u32,
}

/// Defines the stand-ins for every WASI import of `component` in `linker`
/// (call [`foreign_imports`] first: other imports are left undefined, and
/// instantiating then fails).
pub fn link_standins<T: 'static>(
    linker: &mut Linker<T>,
    component: &Component,
) -> wasmtime::Result<()> {
    let engine = linker.engine().clone();
    let names: Vec<String> = component
        .component_type()
        .imports(&engine)
        .map(|(name, _)| name.to_owned())
        .filter(|name| has_standin(name))
        .collect();
    for name in &names {
        let interface = name.split('@').next().unwrap_or_default();
        let mut instance = linker.instance(name)?;
        match interface {
            "wasi:clocks/wall-clock" => wall_clock(&mut instance)?,
            "wasi:clocks/monotonic-clock" => monotonic_clock(&mut instance)?,
            "wasi:random/random" | "wasi:random/insecure" => random(&mut instance)?,
            "wasi:random/insecure-seed" => {
                instance.func_wrap("insecure-seed", |_, (): ()| {
                    Ok(((RANDOM_SEED, RANDOM_SEED.rotate_left(32)),))
                })?;
            }
            "wasi:cli/environment" => environment(&mut instance)?,
            _ => {}
        }
    }
    // Files, sockets, streams, polling and exit: a trap when called.
    linker.define_unknown_imports_as_traps(component)
}

fn wall_clock<T: 'static>(instance: &mut LinkerInstance<'_, T>) -> wasmtime::Result<()> {
    let epoch = Datetime {
        seconds: 0,
        nanoseconds: 0,
    };
    let tick = Datetime {
        seconds: 0,
        nanoseconds: 1,
    };
    instance.func_wrap("now", move |_, (): ()| Ok((epoch,)))?;
    instance.func_wrap("resolution", move |_, (): ()| Ok((tick,)))
}

fn monotonic_clock<T: 'static>(instance: &mut LinkerInstance<'_, T>) -> wasmtime::Result<()> {
    instance.func_wrap("now", |_, (): ()| Ok((0u64,)))?;
    instance.func_wrap("resolution", |_, (): ()| Ok((1u64,)))
}

fn random<T: 'static>(instance: &mut LinkerInstance<'_, T>) -> wasmtime::Result<()> {
    instance.func_wrap("get-random-bytes", random_bytes::<T>)?;
    instance.func_wrap("get-random-u64", random_u64::<T>)?;
    instance.func_wrap("get-insecure-random-bytes", random_bytes::<T>)?;
    instance.func_wrap("get-insecure-random-u64", random_u64::<T>)
}

fn random_bytes<T>(_: StoreContextMut<'_, T>, (len,): (u64,)) -> wasmtime::Result<(Vec<u8>,)> {
    if len > MAX_RANDOM_BYTES {
        wasmtime::bail!("asked for {len} random bytes (at most {MAX_RANDOM_BYTES})");
    }
    Ok((fixed_bytes(len as usize),))
}

fn random_u64<T>(_: StoreContextMut<'_, T>, (): ()) -> wasmtime::Result<(u64,)> {
    Ok((splitmix(RANDOM_SEED),))
}

fn environment<T: 'static>(instance: &mut LinkerInstance<'_, T>) -> wasmtime::Result<()> {
    instance.func_wrap("get-environment", |_, (): ()| {
        Ok((Vec::<(String, String)>::new(),))
    })?;
    instance.func_wrap("get-arguments", |_, (): ()| Ok((Vec::<String>::new(),)))?;
    instance.func_wrap("initial-cwd", |_, (): ()| Ok((None::<String>,)))
}

/// The first `len` bytes of the fixed sequence.
fn fixed_bytes(len: usize) -> Vec<u8> {
    let mut state = RANDOM_SEED;
    let mut bytes = Vec::with_capacity(len);
    while bytes.len() < len {
        state = splitmix(state);
        bytes.extend(state.to_le_bytes().into_iter().take(len - bytes.len()));
    }
    bytes
}

/// One step of splitmix64: a well-mixed 64-bit value from `state`.
fn splitmix(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_sequence_is_the_same_every_time_and_as_long_as_asked() {
        assert_eq!(fixed_bytes(13), fixed_bytes(13));
        assert_eq!(fixed_bytes(13).len(), 13);
        assert_eq!(fixed_bytes(20)[..13], fixed_bytes(13)[..]);
        assert_ne!(fixed_bytes(8), vec![0; 8]);
    }

    #[test]
    fn only_wasi_0_2_interfaces_have_stand_ins() {
        assert!(has_standin("wasi:filesystem/types@0.2.9"));
        assert!(has_standin("wasi:random/random@0.2.0"));
        assert!(!has_standin("wasi:http/outgoing-handler@0.2.9"));
        assert!(!has_standin("wasi:random/random@0.3.0"));
        assert!(!has_standin("evil:net/socket"));
    }
}
