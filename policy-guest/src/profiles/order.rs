//! Profile rotation order (spec F-4.1 … F-4.3).

use std::collections::{BTreeMap, BTreeSet};

use super::{CredentialKind, OrderRequest, RankedProfile, StoredProfile};

/// Up to this many profiles are looked up by linear search: at a handful
/// (the usual provider has one to five) an index costs more to build than
/// the searches it saves.
const SMALL: usize = 8;

/// The profiles to try for `request.provider`, best first.
///
/// The base list is the first that exists of `auth.order[provider]`, the
/// provider's `auth.profiles`, and its stored profiles (F-4.1). Entries that
/// are not stored, belong to another provider, are of another kind than the
/// config says, or hold an expired credential that cannot be refreshed are
/// dropped, and duplicates removed; when none of the listed ids is stored at
/// all, the stored profiles are used instead. Without an explicit order the
/// list is sorted OAuth → token → API key, least recently used first within a
/// kind (F-4.2). Blocked profiles go last, soonest free first (F-4.3), with
/// an explicit order too.
///
/// Past [`SMALL`] profiles, lookups go through ordered indexes, so
/// thousands of profiles order in O(n log n) — well inside the per-call
/// fuel.
pub fn order_profiles(request: &OrderRequest) -> Vec<RankedProfile> {
    let provider = request.provider.as_str();
    // The first stored profile of each id, as a linear search would find it
    // (and does, for a handful: cheaper than building the index).
    let by_id: Option<BTreeMap<&str, &StoredProfile>> = (request.stored.len() > SMALL).then(|| {
        let mut by_id = BTreeMap::new();
        for profile in &request.stored {
            by_id.entry(profile.id.as_str()).or_insert(profile);
        }
        by_id
    });
    let stored = |id: &str| match &by_id {
        Some(by_id) => by_id.get(id).copied(),
        None => request.stored.iter().find(|p| p.id == id),
    };
    let explicit = request
        .explicit_order
        .as_deref()
        .filter(|order| !order.is_empty());
    let configured: Vec<&str> = request
        .configured
        .iter()
        .filter(|c| c.provider == provider)
        .map(|c| c.id.as_str())
        .collect();
    let listed: Option<Vec<&str>> = match explicit {
        Some(order) => Some(order.iter().map(String::as_str).collect()),
        None if !configured.is_empty() => Some(configured),
        None => None,
    };

    let mut profiles: Vec<&StoredProfile> = match &listed {
        Some(ids) if ids.iter().any(|id| stored(id).is_some()) => {
            ids.iter().filter_map(|id| stored(id)).collect()
        }
        // Nothing listed, or nothing listed is stored: the stored profiles.
        _ => request
            .stored
            .iter()
            .filter(|p| p.provider == provider)
            .collect(),
    };
    let mut modes: BTreeMap<&str, Option<CredentialKind>> = BTreeMap::new();
    for configured in &request.configured {
        modes
            .entry(configured.id.as_str())
            .or_insert(configured.mode);
    }
    profiles.retain(|p| usable(request, &modes, p));
    keep_first_of_each_id(&mut profiles);
    if explicit.is_none() {
        profiles.sort_by_key(|p| (p.kind, p.usage.last_used.unwrap_or(0)));
    }

    let model = request.model.as_deref();
    let now = request.now_ms;
    let mut ranked: Vec<RankedProfile> = profiles
        .iter()
        .map(|p| {
            let blocked_until = p.usage.blocked_until(model, now);
            RankedProfile {
                id: p.id.clone(),
                available: blocked_until.is_none(),
                blocked_until,
            }
        })
        .collect();
    // Stable: available ones keep their order; blocked ones follow by expiry.
    ranked.sort_by_key(|r| r.blocked_until.map_or((false, 0), |until| (true, until)));
    ranked
}

/// Keeps each id's first profile: through an ordered set past [`SMALL`]
/// profiles, a linear search below (cheaper than building the set).
fn keep_first_of_each_id(profiles: &mut Vec<&StoredProfile>) {
    if profiles.len() > SMALL {
        let mut seen = BTreeSet::new();
        profiles.retain(|p| seen.insert(p.id.as_str()));
    } else {
        let mut seen: Vec<&str> = Vec::with_capacity(profiles.len());
        profiles.retain(|p| {
            let first = !seen.contains(&p.id.as_str());
            seen.push(p.id.as_str());
            first
        });
    }
}

/// Whether a stored profile may serve this provider at all; `modes` are
/// the configured profiles' expected kinds.
fn usable(
    request: &OrderRequest,
    modes: &BTreeMap<&str, Option<CredentialKind>>,
    profile: &StoredProfile,
) -> bool {
    if profile.provider != request.provider {
        return false;
    }
    let expected_mode = modes.get(profile.id.as_str()).copied().flatten();
    if expected_mode.is_some_and(|mode| mode != profile.kind) {
        return false;
    }
    let expired = profile.expires.is_some_and(|at| at <= request.now_ms);
    !expired || profile.refreshable
}

#[cfg(test)]
mod tests {
    use super::super::{ConfiguredProfile, Usage};
    use super::*;

    fn profile(id: &str, kind: CredentialKind, last_used: Option<u64>) -> StoredProfile {
        StoredProfile {
            id: id.into(),
            provider: id
                .split(':')
                .next()
                .unwrap()
                .replace("openai-codex", "openai"),
            kind,
            expires: None,
            refreshable: true,
            usage: Usage {
                last_used,
                ..Usage::default()
            },
        }
    }

    fn ids(ranked: &[RankedProfile]) -> Vec<&str> {
        ranked.iter().map(|r| r.id.as_str()).collect()
    }

    #[test]
    fn round_robin_puts_oauth_first_then_least_recently_used() {
        let request = OrderRequest {
            provider: "openai".into(),
            stored: vec![
                profile("openai:a", CredentialKind::ApiKey, Some(30)),
                profile("openai:b", CredentialKind::ApiKey, Some(10)),
                profile("openai:t", CredentialKind::Token, Some(5)),
                profile("openai-codex:me", CredentialKind::OAuth, Some(50)),
                profile("anthropic:x", CredentialKind::OAuth, None),
            ],
            now_ms: 100,
            ..OrderRequest::default()
        };
        assert_eq!(
            ids(&order_profiles(&request)),
            ["openai-codex:me", "openai:t", "openai:b", "openai:a"]
        );
    }

    #[test]
    fn a_repeated_id_is_its_first_stored_profile_with_few_profiles_or_many() {
        for count in [SMALL - 2, SMALL * 3] {
            let mut stored: Vec<StoredProfile> = (0..count)
                .map(|i| {
                    profile(
                        &format!("openai:{i:02}"),
                        CredentialKind::ApiKey,
                        Some(i as u64),
                    )
                })
                .collect();
            // A second `openai:00`, cooling down: never the one used.
            let mut second = profile("openai:00", CredentialKind::ApiKey, Some(0));
            second.usage.cooldown_until = Some(10_000);
            stored.push(second);
            let explicit = OrderRequest {
                provider: "openai".into(),
                explicit_order: Some(vec![
                    "openai:01".into(),
                    "openai:00".into(),
                    "openai:01".into(),
                ]),
                stored: stored.clone(),
                now_ms: 100,
                ..OrderRequest::default()
            };
            assert_eq!(
                ids(&order_profiles(&explicit)),
                ["openai:01", "openai:00"],
                "{count}"
            );
            let round_robin = OrderRequest {
                explicit_order: None,
                ..explicit
            };
            let ranked = order_profiles(&round_robin);
            assert_eq!(ranked.len(), count, "each id once");
            // Least recently used first, and available: the second did not count.
            assert_eq!(
                (ranked[0].id.as_str(), ranked[0].available),
                ("openai:00", true)
            );
            assert_eq!(ranked[count - 1].id, format!("openai:{:02}", count - 1));
        }
    }

    #[test]
    fn configured_profiles_come_before_stored_ones() {
        let request = OrderRequest {
            provider: "openai".into(),
            configured: vec![ConfiguredProfile {
                id: "openai:b".into(),
                provider: "openai".into(),
                mode: None,
            }],
            stored: vec![
                profile("openai:a", CredentialKind::ApiKey, None),
                profile("openai:b", CredentialKind::ApiKey, None),
            ],
            now_ms: 100,
            ..OrderRequest::default()
        };
        assert_eq!(ids(&order_profiles(&request)), ["openai:b"]);
    }
}
