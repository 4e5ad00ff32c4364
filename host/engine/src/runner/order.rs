//! A candidate's order as the policy is sent it: the provider's stored
//! profiles with their routing state, and the configured entries — only
//! those the contract sends `order-profiles` (see [`Narrow`]), so that no
//! other profile's state is read, copied and dropped on every request.

use std::collections::BTreeMap;

use failover_policy::Narrow;

use super::outcome::RunError;
use super::provider::Provider;
use super::shared::Runner;
use crate::auth::{ConfiguredProfile, OrderRequest, StoredProfile, Usage};
use crate::names::canonical_provider;
use crate::state::{stored_profile, stored_profiles, ProfileSummary};
use crate::time::Clock;

impl<P: Provider, C: Clock> Runner<P, C> {
    /// The order for `model` of `provider` at `now`, narrowed, and the
    /// routing state of its stored profiles as the store holds it.
    pub(super) fn order_for(
        &self,
        provider: &str,
        model: &str,
        now: u64,
    ) -> Result<(OrderRequest, BTreeMap<String, Usage>), RunError> {
        let explicit_order = self.config.explicit_order(provider);
        let mut configured = self.config.configured_profiles();
        let scope = OrderScope {
            provider,
            explicit_order: explicit_order.as_deref(),
            configured: &configured,
        };
        let narrowed = self.narrowed_stored(&scope)?;
        let mut keep = narrowed.keep_configured.into_iter();
        configured.retain(|_| keep.next().unwrap_or(false));
        let (stored, usage) = (narrowed.stored, narrowed.usage);
        let order = OrderRequest {
            provider: provider.to_owned(),
            explicit_order,
            configured,
            stored,
            model: Some(model.to_owned()),
            now_ms: now,
        };
        Ok((order, usage))
    }

    pub(super) fn stored(&self) -> Result<Vec<StoredProfile>, RunError> {
        Ok(self.stored_and_usage()?.0)
    }

    /// [`Runner::stored`], and the routing state as the store holds it.
    fn stored_and_usage(&self) -> Result<(Vec<StoredProfile>, BTreeMap<String, Usage>), RunError> {
        let usage = self.store.usage()?;
        let mut stored =
            (self.store).with_summaries(|summaries| stored_profiles(summaries, &usage))?;
        self.add_recent_use(&mut stored);
        Ok((stored, usage))
    }

    /// The stored profiles an order for `scope` can depend on ([`Narrow`])
    /// and their routing state as the store holds it — every other
    /// profile's state is neither read nor copied — and which of the
    /// scope's configured entries the order keeps.
    fn narrowed_stored(&self, scope: &OrderScope<'_>) -> Result<Narrowed, RunError> {
        let none = BTreeMap::new();
        let (mut stored, keep_configured) = self.store.with_summaries(|summaries| {
            let narrow = scope.narrow(summaries);
            let stored: Vec<StoredProfile> = (summaries.iter())
                .filter(|s| narrow.keeps(&s.id, canonical_provider(&s.provider)))
                .map(|s| stored_profile(s, &none))
                .collect();
            let keep = scope.configured.iter().map(|c| narrow.configured(c));
            (stored, keep.collect::<Vec<bool>>())
        })?;
        let ids: Vec<&str> = stored.iter().map(|p| p.id.as_str()).collect();
        let usage = self.store.usage_of(&ids)?;
        for profile in &mut stored {
            if let Some(state) = usage.get(&profile.id) {
                profile.usage = state.clone();
            }
        }
        self.add_recent_use(&mut stored);
        Ok(Narrowed {
            stored,
            usage,
            keep_configured,
        })
    }

    /// This process's coalesced `lastUsed` on `stored`.
    fn add_recent_use(&self, stored: &mut [StoredProfile]) {
        let recent = self.recent_use.lock().unwrap_or_else(|e| e.into_inner());
        for profile in stored {
            if let Some(at) = recent.get(&profile.id) {
                profile.usage.last_used = profile.usage.last_used.max(Some(*at));
            }
        }
    }
}

/// What [`Runner::narrowed_stored`] finds.
struct Narrowed {
    stored: Vec<StoredProfile>,
    usage: BTreeMap<String, Usage>,
    /// For each of the scope's configured entries, whether it is kept.
    keep_configured: Vec<bool>,
}

/// What a candidate's order is for, when its policy is sent only what the
/// answer can depend on (see [`Narrow`]).
struct OrderScope<'a> {
    provider: &'a str,
    explicit_order: Option<&'a [String]>,
    configured: &'a [ConfiguredProfile],
}

impl OrderScope<'_> {
    /// What an order for this scope keeps of `summaries`.
    fn narrow<'a>(&'a self, summaries: &'a [ProfileSummary]) -> Narrow<'a> {
        Narrow::new(
            self.provider,
            self.explicit_order,
            self.configured,
            (summaries.iter()).map(|s| (s.id.as_str(), canonical_provider(&s.provider))),
        )
    }
}
