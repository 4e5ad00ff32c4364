//! Moving values between these types and the bindings each side of the
//! contract generates from the WIT (wasmtime's on the host, wit-bindgen's
//! in a guest): a [`Mirror`] trait implemented once here for the shapes
//! (options, lists, tuples, maps of counts), and a [`mirror!`] macro that
//! writes both directions for records and enums, field by field, from a
//! list of their names. A WIT record and its type here have the same
//! fields; an enum the same cases.

use std::collections::BTreeMap;

use crate::profiles::RecordedReason;

/// Converts a value into its twin on the other side of the contract.
pub trait Mirror<T> {
    /// The twin.
    fn mirror(self) -> T;
}

macro_rules! itself {
    ($($t:ty),*) => {$(
        impl Mirror<$t> for $t {
            fn mirror(self) -> $t {
                self
            }
        }
    )*};
}
itself!(bool, u16, u32, u64, String);

impl<A: Mirror<B>, B> Mirror<Option<B>> for Option<A> {
    fn mirror(self) -> Option<B> {
        self.map(Mirror::mirror)
    }
}

impl<A: Mirror<B>, B> Mirror<Vec<B>> for Vec<A> {
    fn mirror(self) -> Vec<B> {
        self.into_iter().map(Mirror::mirror).collect()
    }
}

impl<A: Mirror<C>, B: Mirror<D>, C, D> Mirror<(C, D)> for (A, B) {
    fn mirror(self) -> (C, D) {
        (self.0.mirror(), self.1.mirror())
    }
}

/// A WIT record that is one entry of a map of failure counts
/// (`failure-count`: a reason and a count).
pub trait CountEntry {
    /// The generated reason type.
    type Reason;
    /// The entry for `reason` and `count`.
    fn entry(reason: Self::Reason, count: u32) -> Self;
    /// Its reason and count.
    fn split(self) -> (Self::Reason, u32);
}

impl<W: CountEntry> Mirror<Vec<W>> for BTreeMap<RecordedReason, u32>
where
    RecordedReason: Mirror<W::Reason>,
{
    fn mirror(self) -> Vec<W> {
        self.into_iter()
            .map(|(reason, count)| W::entry(reason.mirror(), count))
            .collect()
    }
}

/// Entries of one reason are added together.
impl<W: CountEntry> Mirror<BTreeMap<RecordedReason, u32>> for Vec<W>
where
    W::Reason: Mirror<RecordedReason>,
{
    fn mirror(self) -> BTreeMap<RecordedReason, u32> {
        let mut counts = BTreeMap::new();
        for entry in self {
            let (reason, count) = entry.split();
            let total: &mut u32 = counts.entry(reason.mirror()).or_default();
            *total = total.saturating_add(count);
        }
        counts
    }
}

/// Both directions of [`Mirror`] between this crate's types and a module
/// of generated bindings, `wit`:
///
/// ```ignore
/// policy_types::mirror! { wit;
///     records { StoredProfile = StoredProfile { id, provider, kind, expires, refreshable, usage } }
///     enums { Reason = FailureReason { RateLimit, Overloaded, … } }
/// }
/// ```
#[macro_export]
macro_rules! mirror {
    ($wit:ident;
     records { $( $ty:ident = $wty:ident { $($field:ident),* $(,)? } )* }
     enums { $( $ety:ident = $ewty:ident { $($case:ident),* $(,)? } )* }
    ) => {
        $(
            impl $crate::Mirror<$wit::$wty> for $crate::$ty {
                fn mirror(self) -> $wit::$wty {
                    $wit::$wty { $($field: $crate::Mirror::mirror(self.$field)),* }
                }
            }
            impl $crate::Mirror<$crate::$ty> for $wit::$wty {
                fn mirror(self) -> $crate::$ty {
                    $crate::$ty { $($field: $crate::Mirror::mirror(self.$field)),* }
                }
            }
        )*
        $(
            impl $crate::Mirror<$wit::$ewty> for $crate::$ety {
                fn mirror(self) -> $wit::$ewty {
                    match self { $($crate::$ety::$case => $wit::$ewty::$case),* }
                }
            }
            impl $crate::Mirror<$crate::$ety> for $wit::$ewty {
                fn mirror(self) -> $crate::$ety {
                    match self { $($wit::$ewty::$case => $crate::$ety::$case),* }
                }
            }
        )*
    };
}
