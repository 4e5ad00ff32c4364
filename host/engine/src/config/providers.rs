//! Where a provider lives and which API shape it speaks: the config's
//! `models.providers.<provider>`, with built-in defaults for well-known
//! providers so a config can name them without a `baseUrl`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::timeouts::{Deadlines, Timeouts};
use super::Config;

/// `models.providers.<provider>`: how to reach a provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProviderEndpoint {
    /// The API root (`https://api.openai.com/v1`); well-known providers
    /// have a built-in default (see this module).
    pub base_url: Option<String>,
    /// `openai-chat` or `anthropic-messages`.
    pub api: Option<String>,
    /// Where an expired OAuth profile of this provider is refreshed.
    pub oauth: Option<OAuthEndpoint>,
    /// The models this provider serves. When given, a request for another
    /// model of this provider is refused as unknown; when absent, any model
    /// name is passed through.
    pub models: Option<Vec<ModelEntry>>,
    /// Per-attempt deadline in seconds: `timeouts.attemptSeconds`, kept
    /// under the reference's name (default
    /// `DEFAULT_ATTEMPT_TIMEOUT_SECONDS`).
    pub timeout_seconds: Option<f64>,
    /// This provider's deadlines (`models.timeouts` fills what it leaves
    /// out).
    pub timeouts: Timeouts,
}

impl ProviderEndpoint {
    /// The entries of its `models` that carry settings, with their index.
    pub(crate) fn model_settings(&self) -> impl Iterator<Item = (usize, &ModelSettings)> {
        (self.models.iter().flatten().enumerate())
            .filter_map(|(index, entry)| Some((index, entry.settings()?)))
    }

    /// Its deadlines as written, `timeoutSeconds` as the attempt's when
    /// `timeouts` does not set one.
    fn own_timeouts(&self) -> Timeouts {
        Timeouts {
            attempt_seconds: self.timeouts.attempt_seconds.or(self.timeout_seconds),
            ..self.timeouts
        }
    }
}

/// `models.providers.<provider>.oauth`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OAuthEndpoint {
    /// `tokenUrl`: where refresh tokens are exchanged; no refresh without it.
    pub token_url: Option<String>,
    /// `clientId`: the OAuth client id sent with a refresh (empty when
    /// absent).
    pub client_id: Option<String>,
}

/// A `models.providers.<provider>.models[]` entry: a name, or an object
/// naming the model by `id` with its own settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "a model name, or an object with a string `id` (and optional `overflowTo`: \"provider/model\", `timeouts`: {connectSeconds, firstTokenSeconds, idleSeconds, attemptSeconds} in seconds)"
)]
pub enum ModelEntry {
    /// The model's name.
    Name(String),
    /// The model's name and settings.
    Described(ModelSettings),
}

/// A model's own settings, beside its `id`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelSettings {
    /// The model's name at the provider.
    pub id: String,
    /// `overflowTo`: the larger `provider/model` a run moves to when this
    /// model's context overflows; absent, an overflow ends the run (F-5.9).
    #[serde(default)]
    pub overflow_to: Option<String>,
    /// This model's deadlines (its provider's fill what it leaves out).
    #[serde(default)]
    pub timeouts: Timeouts,
}

impl ModelEntry {
    /// The model's name at the provider.
    pub fn id(&self) -> &str {
        match self {
            ModelEntry::Name(id) => id,
            ModelEntry::Described(settings) => &settings.id,
        }
    }

    /// Its settings, when it has any.
    pub fn settings(&self) -> Option<&ModelSettings> {
        match self {
            ModelEntry::Name(_) => None,
            ModelEntry::Described(settings) => Some(settings),
        }
    }
}

/// The wire shape of a provider's API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `POST {baseUrl}/chat/completions` (OpenAI and every compatible server).
    OpenAiChat,
    /// `POST {baseUrl}/v1/messages` (Anthropic Messages).
    AnthropicMessages,
}

impl Api {
    /// The config's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::OpenAiChat => "openai-chat",
            Api::AnthropicMessages => "anthropic-messages",
        }
    }

    fn parse(text: &str) -> Option<Api> {
        match text {
            "openai-chat" => Some(Api::OpenAiChat),
            "anthropic-messages" => Some(Api::AnthropicMessages),
            _ => None,
        }
    }
}

/// Well-known providers: base URL and API, used when the config does not
/// say. Anything else must be configured.
const BUILT_IN: &[(&str, &str, Api)] = &[
    ("openai", "https://api.openai.com/v1", Api::OpenAiChat),
    (
        "anthropic",
        "https://api.anthropic.com",
        Api::AnthropicMessages,
    ),
    (
        "openrouter",
        "https://openrouter.ai/api/v1",
        Api::OpenAiChat,
    ),
    ("groq", "https://api.groq.com/openai/v1", Api::OpenAiChat),
    ("deepseek", "https://api.deepseek.com/v1", Api::OpenAiChat),
    ("mistral", "https://api.mistral.ai/v1", Api::OpenAiChat),
    ("together", "https://api.together.xyz/v1", Api::OpenAiChat),
    ("ollama", "http://127.0.0.1:11434/v1", Api::OpenAiChat),
];

/// A provider's endpoint, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// The provider's name.
    pub provider: String,
    /// Without a trailing slash.
    pub base_url: String,
    /// The API shape it speaks.
    pub api: Api,
    /// The provider's deadlines.
    pub deadlines: Deadlines,
    /// The deadlines of models whose entries set their own.
    pub model_deadlines: Vec<(String, Deadlines)>,
    /// `(tokenUrl, clientId)` when OAuth refresh is configured.
    pub oauth: Option<(String, String)>,
    /// The configured model list, when there is one.
    pub models: Option<Vec<String>>,
    /// The URL chat calls go to, parsed once here rather than on every
    /// call (parsing, with its IDNA pass, costs a sixth of the gateway's
    /// instructions per request); `None` when it does not parse (the call
    /// then reports why).
    pub call_url: Option<reqwest::Url>,
}

impl Endpoint {
    /// The deadlines of an attempt on `model` (the part after
    /// `provider/`).
    pub(crate) fn deadlines_for(&self, model: &str) -> Deadlines {
        (self.model_deadlines.iter())
            .find(|(name, _)| name == model)
            .map_or(self.deadlines, |(_, deadlines)| *deadlines)
    }

    /// Whether this endpoint serves `model` (the part after `provider/`).
    pub fn serves(&self, model: &str) -> bool {
        self.models
            .as_ref()
            .is_none_or(|models| models.iter().any(|m| m == model))
    }
}

impl Config {
    /// `provider`'s endpoint (aliases resolved), from the config or the
    /// built-ins; `None` when neither knows it. Configured ones were resolved
    /// once, when the config was read.
    /// A configured one is lent, not copied: a copy cost three strings
    /// allocated and freed on every attempt.
    pub fn endpoint(&self, provider: &str) -> Option<Cow<'_, Endpoint>> {
        match self.endpoints.get(provider) {
            Some(endpoint) => Some(Cow::Borrowed(endpoint)),
            None => resolve(self, provider).map(Cow::Owned),
        }
    }

    /// The API `provider` speaks, without copying its endpoint (a lookup
    /// on every candidate of every run).
    pub(crate) fn api_of(&self, provider: &str) -> Option<Api> {
        match self.endpoints.get(provider) {
            Some(endpoint) => Some(endpoint.api),
            None => resolve(self, provider).map(|e| e.api),
        }
    }

    /// The endpoint serving `provider/model`, or why no provider serves it
    /// (the message says what to configure).
    pub fn known_model(&self, model: &str) -> Result<Endpoint, String> {
        known_model(self, model)
    }

    /// Every configured provider's endpoint, resolved (a config is
    /// validated first, so each resolves).
    pub(super) fn resolve_endpoints(&mut self) {
        let endpoints = self
            .models
            .providers
            .keys()
            .map(|key| crate::names::canonical_provider(key).to_owned())
            .filter_map(|provider| Some((provider.clone(), resolve(self, &provider)?)))
            .collect();
        self.endpoints = endpoints;
        self.overflows = (self.models.providers.iter())
            .flat_map(|(provider, endpoint)| {
                let provider = crate::names::canonical_provider(provider);
                endpoint.model_settings().filter_map(move |(_, m)| {
                    let to = canonical_model(m.overflow_to.as_deref()?);
                    Some((format!("{provider}/{}", m.id), to))
                })
            })
            .collect();
    }

    /// Each model with a larger model for its context overflows
    /// (`overflowTo`), as `(provider/model, provider/model)`.
    pub fn overflows(&self) -> &[(String, String)] {
        &self.overflows
    }

    /// The larger model `model`'s context overflows move to, if any.
    pub(crate) fn overflow_of(&self, model: &str) -> Option<&str> {
        if self.overflows.is_empty() {
            return None;
        }
        let model = canonical_model(model);
        (self.overflows.iter())
            .find(|(from, _)| *from == model)
            .map(|(_, to)| to.as_str())
    }
}

/// `provider/model` with the provider's alias resolved (`openai-codex/x`
/// is `openai/x`).
fn canonical_model(model: &str) -> String {
    let (provider, name) = crate::names::split_model(model);
    format!("{}/{name}", crate::names::canonical_provider(provider))
}

/// Where `api`'s chat calls go under `base_url`: OpenAI's
/// `…/chat/completions`, Anthropic's `…/v1/messages` (a base given with
/// or without its `/v1`).
pub(crate) fn call_address(base_url: &str, api: Api) -> String {
    match api {
        Api::OpenAiChat => format!("{base_url}/chat/completions"),
        Api::AnthropicMessages => {
            format!("{}/v1/messages", base_url.trim_end_matches("/v1"))
        }
    }
}

/// `provider`'s endpoint, worked out from the raw config and the built-ins.
fn resolve(config: &Config, provider: &str) -> Option<Endpoint> {
    let configured = config.provider_endpoint(provider);
    let built_in = BUILT_IN.iter().find(|(name, _, _)| *name == provider);
    let base_url = configured
        .and_then(|e| e.base_url.clone())
        .or_else(|| built_in.map(|(_, url, _)| (*url).to_owned()))?;
    let api = configured
        .and_then(|e| e.api.as_deref())
        .and_then(Api::parse)
        .or_else(|| built_in.map(|(_, _, api)| *api))
        .unwrap_or(Api::OpenAiChat);
    let oauth = configured.and_then(|e| e.oauth.as_ref()).and_then(|o| {
        Some((
            o.token_url.clone()?,
            o.client_id.clone().unwrap_or_default(),
        ))
    });
    let provider_timeouts = configured
        .map_or(Timeouts::default(), ProviderEndpoint::own_timeouts)
        .within(config.models.timeouts);
    let model_deadlines = (configured
        .into_iter()
        .flat_map(ProviderEndpoint::model_settings))
    .map(|(_, m)| m)
    .filter(|m| m.timeouts != Timeouts::default())
    .map(|m| (m.id.clone(), m.timeouts.within(provider_timeouts).resolve()))
    .collect();
    let base_url = base_url.trim_end_matches('/').to_owned();
    let call_url = reqwest::Url::parse(&call_address(&base_url, api)).ok();
    Some(Endpoint {
        provider: provider.to_owned(),
        base_url,
        call_url,
        api,
        deadlines: provider_timeouts.resolve(),
        model_deadlines,
        oauth,
        models: configured
            .and_then(|e| e.models.as_ref())
            .map(|models| models.iter().map(|m| m.id().to_owned()).collect()),
    })
}

fn known_model(config: &Config, model: &str) -> Result<Endpoint, String> {
    let (provider, name) = crate::names::split_model(model);
    if provider.is_empty() || name.is_empty() {
        return Err(format!(
            "unknown model {model:?}: models are named `provider/model`"
        ));
    }
    let provider = crate::names::canonical_provider(provider);
    let endpoint = config.endpoint(provider).ok_or_else(|| {
        format!("unknown model {model:?}: no provider {provider:?} in models.providers")
    })?;
    if !endpoint.serves(name) {
        return Err(format!(
            "unknown model {model:?}: not in models.providers.{provider}.models"
        ));
    }
    Ok(endpoint.into_owned())
}

/// Checks one `models.providers` entry; the message names the field.
pub fn check(provider: &str, endpoint: &ProviderEndpoint) -> Result<(), String> {
    let field = |name: &str| format!("models.providers.{provider}.{name}");
    if let Some(api) = &endpoint.api {
        if Api::parse(api).is_none() {
            return Err(format!(
                "{} must be \"openai-chat\" or \"anthropic-messages\", not {api:?}",
                field("api")
            ));
        }
    }
    let known = BUILT_IN
        .iter()
        .any(|(name, _, _)| *name == crate::names::canonical_provider(provider));
    match &endpoint.base_url {
        Some(url) => check_url(url).map_err(|e| format!("{}: {e}", field("baseUrl")))?,
        None if !known => {
            return Err(format!(
                "{} is required: {provider} is not a provider this build knows the address of",
                field("baseUrl")
            ))
        }
        None => {}
    }
    if let Some(oauth) = &endpoint.oauth {
        match &oauth.token_url {
            Some(url) => check_url(url).map_err(|e| format!("{}: {e}", field("oauth.tokenUrl")))?,
            None => {
                return Err(format!(
                    "{} is required with `oauth`",
                    field("oauth.tokenUrl")
                ))
            }
        }
    }
    Ok(())
}

fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL ({e})"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("{url:?} must be an http:// or https:// URL"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_fill_what_the_config_leaves_out() {
        let config = Config::default();
        let openai = config.endpoint("openai").unwrap();
        assert_eq!(openai.api, Api::OpenAiChat);
        assert_eq!(openai.deadlines.attempt_ms, 120_000);
        assert!(config.endpoint("acme").is_none());
    }

    #[test]
    fn checks_name_the_field() {
        let bad_api = ProviderEndpoint {
            api: Some("soap".into()),
            ..Default::default()
        };
        assert!(check("openai", &bad_api)
            .unwrap_err()
            .contains("models.providers.openai.api"));
        let missing = ProviderEndpoint::default();
        assert!(check("acme", &missing)
            .unwrap_err()
            .contains("baseUrl is required"));
        let bad_url = ProviderEndpoint {
            base_url: Some("ftp://x".into()),
            ..Default::default()
        };
        assert!(check("acme", &bad_url).unwrap_err().contains("http://"));
    }
}
