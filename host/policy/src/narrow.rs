//! An order request narrowed to what concerns its provider.

use policy_types::{ConfiguredProfile, OrderRequest};
use rustc_hash::FxHashSet;

/// `request` with only what concerns its provider: its stored profiles and
/// any stored profile its explicit order or its configured entries name (an
/// order that lists only other providers' profiles must still see them
/// stored, to drop them), and the configured entries of the provider or of
/// an id of its profiles (an entry's mode applies by id). Every other
/// profile costs lowering, a string at a time, on every candidate, and
/// changes no answer of a policy that picks the provider's profiles.
pub fn for_provider(request: &OrderRequest, narrow: &Narrow) -> OrderRequest {
    OrderRequest {
        provider: request.provider.clone(),
        explicit_order: request.explicit_order.clone(),
        configured: (request.configured.iter())
            .filter(|c| narrow.configured(c))
            .cloned()
            .collect(),
        stored: (request.stored.iter())
            .filter(|p| narrow.keeps(&p.id, &p.provider))
            .cloned()
            .collect(),
        model: request.model.clone(),
        now_ms: request.now_ms,
    }
}

/// What [`for_provider`] keeps of an order, by id: the profiles the
/// contract sends `order-profiles` (the provider's own, and any other the
/// order names). A host can tell them before it builds any profile, and
/// build only those.
/// Telling costs no allocation when no explicit order or configured entry
/// names a profile: the common case, checked on every candidate.
pub struct Narrow<'a> {
    provider: &'a str,
    /// The ids its explicit order and its configured entries name.
    named: FxHashSet<&'a str>,
    /// The provider's own stored profiles, when a configured entry of
    /// another provider needs them; empty otherwise.
    own: FxHashSet<&'a str>,
}

impl<'a> Narrow<'a> {
    /// What an order for `provider` keeps, from its explicit order, the
    /// configured entries, and the stored profiles as `(id, provider)`
    /// (the provider canonical, as in a stored profile).
    pub fn new(
        provider: &'a str,
        explicit_order: Option<&'a [String]>,
        configured: &'a [ConfiguredProfile],
        stored: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        let named = (explicit_order.into_iter().flatten().map(String::as_str))
            .chain(
                (configured.iter())
                    .filter(|c| c.provider == provider)
                    .map(|c| c.id.as_str()),
            )
            .collect();
        let own = if configured.iter().any(|c| c.provider != provider) {
            stored
                .filter(|(_, of)| *of == provider)
                .map(|(id, _)| id)
                .collect()
        } else {
            FxHashSet::default()
        };
        Narrow {
            provider,
            named,
            own,
        }
    }

    /// Whether the stored profile `id` of `provider` is kept: the
    /// provider's own, or one its explicit order or entries name.
    pub fn keeps(&self, id: &str, provider: &str) -> bool {
        provider == self.provider || self.named.contains(id)
    }

    /// Whether a configured entry is kept: the provider's, or one of its
    /// profiles'.
    pub fn configured(&self, entry: &ConfiguredProfile) -> bool {
        entry.provider == self.provider || self.own.contains(entry.id.as_str())
    }
}

/// What [`for_provider`] keeps of `request`.
pub fn for_provider_ids(request: &OrderRequest) -> Narrow<'_> {
    Narrow::new(
        &request.provider,
        request.explicit_order.as_deref(),
        &request.configured,
        (request.stored.iter()).map(|p| (p.id.as_str(), p.provider.as_str())),
    )
}
