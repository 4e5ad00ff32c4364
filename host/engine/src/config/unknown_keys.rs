//! Keys of a config file that nothing reads: a typo is an error that
//! names the key, its line and the nearest known key (`fallback` — did you
//! mean `fallbacks`?); a key of another program sharing the file (the
//! agent runtime's config has many sections this one does not read) is
//! left alone.
//!
//! The rule: in the sections only this program owns (`policy`,
//! `auth.cooldowns`, `agents.defaults.model`) every unknown key is an
//! error. Elsewhere an unknown key is an error when it
//! is within [`TYPO_DISTANCE`] edits of a known key of its level, and
//! ignored otherwise. Known keys are read off the config types themselves
//! (their defaults, serialised), so the list cannot drift from them.

use serde::Serialize;
use serde_json::Value;

use super::providers::{OAuthEndpoint, ProviderEndpoint};
use super::{AgentDefaults, AgentEntry, AgentsConfig, AuthConfig, Config, Cooldowns};
use super::{GatewayConfig, ModelChoice, ModelsConfig, PolicyConfig, ProfileMeta};

/// Edits between a key and a known one that make it a typo rather than
/// someone else's key: `fallback`/`fallbacks` is 1, `baseURL`/`baseUrl` 2.
const TYPO_DISTANCE: usize = 2;

/// Sections whose every key is this program's. (`gateway` and `models`
/// are shared with the agent runtime's config: its `gateway.port`, its
/// providers' `apiKey`.)
const OWNED: &[&str] = &["policy", "auth.cooldowns", "agents.defaults.model", "state"];

/// Keys of the agent runtime's config that sit one typo away from one of
/// ours and are not typos (`*` is any one segment): its model allow-list
/// `agents.defaults.models` beside our `model`.
const FOREIGN: &[&str] = &["agents.defaults.models", "agents.list.*.models"];

/// An unknown key that is an error: its dotted path and what to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnknownKey {
    /// `agents.defaults.model.fallback`.
    pub path: String,
    /// The nearest known key of its level, if one is near.
    pub suggestion: Option<String>,
}

impl UnknownKey {
    /// "unknown key `agents.defaults.model.fallback` (did you mean `fallbacks`?)".
    pub fn message(&self) -> String {
        match &self.suggestion {
            Some(known) => format!("unknown key `{}` (did you mean `{known}`?)", self.path),
            None => format!("unknown key `{}`", self.path),
        }
    }
}

/// Which of `ignored` (dotted paths serde did not read) are errors.
pub fn errors(ignored: &[String]) -> Vec<UnknownKey> {
    ignored
        .iter()
        // serde_ignored writes `?` for the inside of an optional value.
        .map(|path| {
            path.split('.')
                .filter(|segment| *segment != "?")
                .collect::<Vec<_>>()
                .join(".")
        })
        .filter(|path| !is_foreign(path))
        .filter_map(|path| {
            let (parent, key) = path.rsplit_once('.').unwrap_or(("", path.as_str()));
            let known = known_keys(parent);
            let suggestion = nearest(key, &known);
            let owned = OWNED
                .iter()
                .any(|s| parent == *s || parent.starts_with(&format!("{s}.")));
            (owned || suggestion.is_some()).then_some(UnknownKey { path, suggestion })
        })
        .collect()
}

fn is_foreign(path: &str) -> bool {
    FOREIGN.iter().any(|pattern| {
        let (mut p, mut k) = (pattern.split('.'), path.split('.'));
        loop {
            match (p.next(), k.next()) {
                (None, None) => return true,
                (Some(a), Some(b)) if a == "*" || a == b => {}
                _ => return false,
            }
        }
    })
}

/// Keys inside a model choice written as an object where the config reads
/// either a name or `{primary, fallbacks}` (`agents.list[].model`,
/// `agents.defaults.imageModel`): serde cannot see into those, so they are
/// checked on the parsed file. Every unknown key there is an error.
pub(crate) fn model_choice_errors(raw: &Value) -> Vec<UnknownKey> {
    let known = keys_of(&ModelChoice::default());
    let mut places: Vec<(String, &Value)> = Vec::new();
    if let Some(image) = raw.pointer("/agents/defaults/imageModel") {
        places.push(("agents.defaults.imageModel".into(), image));
    }
    let agents = raw.pointer("/agents/list").and_then(Value::as_array);
    for (i, agent) in agents.into_iter().flatten().enumerate() {
        if let Some(model) = agent.get("model") {
            places.push((format!("agents.list.{i}.model"), model));
        }
    }
    places
        .into_iter()
        .filter_map(|(place, value)| Some((place, value.as_object()?)))
        .flat_map(|(place, object)| {
            let known = &known;
            object
                .keys()
                .filter(move |key| !known.contains(key))
                .map(move |key| UnknownKey {
                    path: format!("{place}.{key}"),
                    suggestion: nearest(key, known),
                })
        })
        .collect()
}

/// Typos in `models.providers.<p>.models[]` objects, which serde reads
/// untagged and so does not report: a key near one of a model's settings
/// (`overflowTo`, `timeouts` and theirs) is an error; others are the agent
/// runtime's (`contextWindow`, `cost`) and left alone.
pub(crate) fn model_entry_errors(raw: &Value) -> Vec<UnknownKey> {
    let entry_keys = keys_of(&super::ModelSettings::default());
    let timeout_keys = keys_of(&super::Timeouts::default());
    let providers = raw.pointer("/models/providers").and_then(Value::as_object);
    let mut errors = Vec::new();
    for (provider, endpoint) in providers.into_iter().flatten() {
        let entries = endpoint.get("models").and_then(Value::as_array);
        for (i, entry) in entries.into_iter().flatten().enumerate() {
            let place = format!("models.providers.{provider}.models.{i}");
            errors.extend(typos(&place, entry, &entry_keys));
            if let Some(timeouts) = entry.get("timeouts") {
                errors.extend(typos(&format!("{place}.timeouts"), timeouts, &timeout_keys));
            }
        }
    }
    errors
}

/// The keys of `value` (an object) near but not among `known`.
fn typos(place: &str, value: &Value, known: &[String]) -> Vec<UnknownKey> {
    let keys = value.as_object().into_iter().flat_map(|o| o.keys());
    keys.filter(|key| !known.contains(key))
        .filter_map(|key| {
            let suggestion = nearest(key, known)?;
            Some(UnknownKey {
                path: format!("{place}.{key}"),
                suggestion: Some(suggestion),
            })
        })
        .collect()
}

/// The known key nearest to `key`, if within [`TYPO_DISTANCE`] (case
/// ignored).
fn nearest(key: &str, known: &[String]) -> Option<String> {
    let lower = key.to_ascii_lowercase();
    known
        .iter()
        .map(|k| (strsim::levenshtein(&lower, &k.to_ascii_lowercase()), k))
        .filter(|(distance, _)| *distance <= TYPO_DISTANCE)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| k.clone())
}

/// The keys a level of the config reads, from its type's defaults.
fn known_keys(parent: &str) -> Vec<String> {
    let segments: Vec<&str> = parent.split('.').filter(|s| !s.is_empty()).collect();
    let shape = match segments.as_slice() {
        [] => keys_of(&Config::default()),
        ["auth"] => keys_of(&AuthConfig::default()),
        ["auth", "cooldowns"] => keys_of(&Cooldowns::default()),
        ["auth", "profiles", _] => keys_of(&ProfileMeta::default()),
        ["agents"] => keys_of(&AgentsConfig::default()),
        ["agents", "defaults"] => keys_of(&AgentDefaults::default()),
        ["agents", "defaults", "model"] => keys_of(&ModelChoice::default()),
        ["agents", "list", _] => keys_of(&AgentEntry {
            id: String::new(),
            model: None,
        }),
        ["models"] => keys_of(&ModelsConfig::default()),
        ["models", "providers", _] => keys_of(&ProviderEndpoint::default()),
        ["models", "providers", _, "oauth"] => keys_of(&OAuthEndpoint::default()),
        ["models", "timeouts"] | ["models", "providers", _, "timeouts"] => {
            keys_of(&super::Timeouts::default())
        }
        ["gateway"] => keys_of(&GatewayConfig::default()),
        ["policy"] => keys_of(&PolicyConfig::default()),
        ["state"] => keys_of(&super::StateConfig::default()),
        ["state", "redis"] => keys_of(&super::RedisConfig::default()),
        _ => Vec::new(),
    };
    shape
}

fn keys_of(value: &impl Serialize) -> Vec<String> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map.into_iter().map(|(k, _)| k).collect(),
        _ => Vec::new(),
    }
}

/// The 1-based line where `path`'s last key is first written in `text`
/// (quoted or bare), for the error's position.
pub fn line_of(text: &str, path: &str) -> Option<usize> {
    let key = path.rsplit('.').next()?;
    let candidates = [
        format!("\"{key}\""),
        format!("'{key}'"),
        format!("{key}:"),
        format!("{key} :"),
    ];
    text.lines()
        .position(|line| {
            let line = line.trim_start();
            candidates.iter().any(|c| {
                line.find(c.as_str()).is_some_and(|at| {
                    let before = line[..at].chars().last();
                    before.is_none_or(|b| !b.is_alphanumeric() && b != '_')
                })
            })
        })
        .map(|index| index + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(ps: &[&str]) -> Vec<String> {
        ps.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn typos_are_errors_and_foreign_keys_are_not() {
        let found = errors(&paths(&[
            "agents.defaults.model.fallback",
            "agents.defaults.workspace",
            "agnets",
            "channels",
            "models.providers.openai.baseURL",
            "models.providers.openai.apiKey",
            "gateway.maxConnection",
            "gateway.port",
            "policy.fule",
            "auth.cooldowns.billingBackoffHour",
            "agents.defaults.models",
            "agents.list.0.models",
            "models.providers.acme.oauth.?.tokenURL",
        ]));
        let said: Vec<String> = found.iter().map(UnknownKey::message).collect();
        assert_eq!(
            said,
            [
                "unknown key `agents.defaults.model.fallback` (did you mean `fallbacks`?)",
                "unknown key `agnets` (did you mean `agents`?)",
                "unknown key `models.providers.openai.baseURL` (did you mean `baseUrl`?)",
                "unknown key `gateway.maxConnection` (did you mean `maxConnections`?)",
                "unknown key `policy.fule`",
                "unknown key `auth.cooldowns.billingBackoffHour` (did you mean `billingBackoffHours`?)",
                "unknown key `models.providers.acme.oauth.tokenURL` (did you mean `tokenUrl`?)",
            ]
        );
    }

    #[test]
    fn model_choices_written_as_objects_are_checked_too() {
        let raw: Value = serde_json::json!({"agents": {
            "defaults": {"imageModel": {"primary": "openai/gpt-image-1", "fallback": []}},
            "list": [{"id": "ops", "model": "openai/gpt-4o"},
                     {"id": "x", "model": {"primary": "a/b", "fallbacks": [], "primay": "c/d"}}]}});
        let said: Vec<String> = model_choice_errors(&raw)
            .iter()
            .map(UnknownKey::message)
            .collect();
        assert_eq!(
            said,
            [
                "unknown key `agents.defaults.imageModel.fallback` (did you mean `fallbacks`?)",
                "unknown key `agents.list.1.model.primay` (did you mean `primary`?)",
            ]
        );
    }

    #[test]
    fn the_line_is_where_the_key_is_written() {
        let text = "{\n  agents: {\n    defaults: { model: {\n      fallback: [] } } } }";
        assert_eq!(line_of(text, "agents.defaults.model.fallback"), Some(4));
        assert_eq!(
            line_of("{ \"x\": { \"fallback\": 1 } }", "x.fallback"),
            Some(1)
        );
        assert_eq!(line_of("{ fallbacks: [] }", "a.fallback"), None);
    }
}
