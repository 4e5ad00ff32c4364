//! `auth-profiles.json`: the credentials (spec F-2.1).
//!
//! ```json
//! {"version": 1, "profiles": {
//!   "openai:work": {"type": "api_key", "provider": "openai", "key": "sk-…"},
//!   "anthropic:me@example.com": {"type": "oauth", "provider": "anthropic",
//!     "access": "…", "refresh": "…", "expires": 1767225600000, "email": "me@example.com"},
//!   "acme:ci": {"type": "token", "provider": "acme", "token": "…", "expires": 1767225600000}}}
//! ```
//!
//! The document is kept as parsed JSON so that fields this version does not
//! know (`projectId`, `enterpriseUrl`, other tools' keys) survive every
//! rewrite. Secrets leave this module only inside [`Secret`], whose `Debug`
//! hides them; nothing here prints or logs one.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::error::StateError;
use crate::auth::{CredentialKind, Usage};
use crate::names::{canonical_provider, check_id};

/// The file format version this build writes.
pub(crate) const PROFILES_VERSION: u64 = 1;

/// The typed view of one credential, for validation and summaries: its
/// strings borrowed from the file's tree, not copied (a copy was four
/// strings allocated and freed on every credential read).
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(rename = "type")]
    kind: CredentialKind,
    #[serde(borrow)]
    provider: Cow<'a, str>,
    #[serde(default, borrow)]
    key: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    access: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    refresh: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    token: Option<Cow<'a, str>>,
    #[serde(default)]
    expires: Option<u64>,
    #[serde(default, borrow)]
    email: Option<Cow<'a, str>>,
}

/// What may be shown about a profile: never its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileSummary {
    /// The profile id (`provider:name`).
    pub id: String,
    /// As stored.
    pub stored_provider: String,
    /// Aliases resolved.
    pub provider: String,
    /// The credential kind (`api_key`, `oauth`, `token`).
    pub kind: CredentialKind,
    /// When the access token or token expires (ms since the epoch), if it
    /// does.
    pub expires: Option<u64>,
    /// OAuth with a refresh token.
    pub refreshable: bool,
    /// The account's email, when stored.
    pub email: Option<String>,
    /// `sha256:` and the first 8 hex digits of the secret's hash.
    pub fingerprint: String,
}

/// A secret: printed as `Secret(…)`, so no `{:?}` of a credential leaks it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The secret itself, for the one place that sends it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// One profile's credential, with its secret, for calling the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    /// The credential kind (`api_key`, `oauth`, `token`).
    pub kind: CredentialKind,
    /// Aliases resolved.
    pub provider: String,
    /// The API key, OAuth access token or bearer token.
    pub secret: Secret,
    /// The OAuth refresh token.
    pub refresh: Option<Secret>,
    /// When the access token or token expires (ms since the epoch).
    pub expires: Option<u64>,
}

/// The parsed `auth-profiles.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfilesFile {
    document: Map<String, Value>,
}

impl Default for ProfilesFile {
    fn default() -> Self {
        let mut document = Map::new();
        document.insert("version".into(), PROFILES_VERSION.into());
        document.insert("profiles".into(), Value::Object(Map::new()));
        ProfilesFile { document }
    }
}

impl ProfilesFile {
    /// Checks a parsed document; errors name `path` and the offending field.
    pub fn from_value(path: &Path, value: Value) -> Result<ProfilesFile, StateError> {
        let invalid = |message: String| StateError::Invalid {
            path: path.to_owned(),
            message,
        };
        let Value::Object(mut document) = value else {
            return Err(invalid("expected a JSON object at the top".into()));
        };
        match document.get("version") {
            None => {}
            Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v <= PROFILES_VERSION) => {}
            Some(other) => {
                return Err(invalid(format!(
                    "version {other} is newer than this build understands ({PROFILES_VERSION})"
                )))
            }
        }
        let profiles = document
            .entry("profiles")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(profiles) = profiles else {
            return Err(invalid(
                "field `profiles` must be an object of profile id to credential".into(),
            ));
        };
        for (id, credential) in profiles.iter() {
            check_id(id).map_err(|e| invalid(format!("profile {id:?}: {e}")))?;
            let fields = Fields::deserialize(credential)
                .map_err(|e| invalid(format!("profile {id:?}: {e}")))?;
            let secret = secret_of(&fields);
            if secret.is_none_or(str::is_empty) {
                return Err(invalid(format!(
                    "profile {id:?}: a {} credential needs its `{}`",
                    fields.kind.as_str(),
                    secret_field(fields.kind)
                )));
            }
        }
        Ok(ProfilesFile { document })
    }

    /// Reads the file; `None` when it does not exist.
    pub fn read(path: &Path) -> Result<Option<ProfilesFile>, StateError> {
        match super::files::read_json::<Value>(path)? {
            None => Ok(None),
            Some(value) => ProfilesFile::from_value(path, value).map(Some),
        }
    }

    /// The whole document, for writing.
    pub fn document(&self) -> &Map<String, Value> {
        &self.document
    }

    fn profiles(&self) -> &Map<String, Value> {
        self.document
            .get("profiles")
            .and_then(Value::as_object)
            .expect("checked by from_value")
    }

    fn profiles_mut(&mut self) -> &mut Map<String, Value> {
        self.document
            .get_mut("profiles")
            .and_then(Value::as_object_mut)
            .expect("checked by from_value")
    }

    /// Every profile's id, in order.
    pub fn ids(&self) -> Vec<String> {
        self.profiles().keys().cloned().collect()
    }

    /// Every profile, without secrets, in id order.
    pub fn summaries(&self) -> Vec<ProfileSummary> {
        self.profiles()
            .iter()
            .filter_map(|(id, credential)| {
                let fields = Fields::deserialize(credential).ok()?;
                Some(summary(id, &fields))
            })
            .collect()
    }

    /// A profile's credential, secret included; `None` when there is no
    /// such profile.
    pub fn credential(&self, id: &str) -> Option<Credential> {
        // Read in place: no copy of the credential (and its secret) is made.
        let fields = Fields::deserialize(self.profiles().get(id)?).ok()?;
        Some(Credential {
            kind: fields.kind,
            provider: canonical_provider(&fields.provider).to_owned(),
            secret: Secret(secret_of(&fields)?.to_owned()),
            refresh: (fields.refresh.as_deref())
                .filter(|r| !r.is_empty())
                .map(|r| Secret(r.to_owned())),
            expires: fields.expires,
        })
    }

    /// Stores refreshed OAuth tokens on a profile, keeping its other
    /// fields (F-2.1).
    pub(crate) fn set_oauth_tokens(
        &mut self,
        id: &str,
        access: &str,
        refresh: Option<&str>,
        expires: u64,
    ) -> Result<(), StateError> {
        let Some(Value::Object(credential)) = self.profiles_mut().get_mut(id) else {
            return Err(StateError::Refused(format!("no profile {id:?}")));
        };
        credential.insert("access".into(), access.into());
        if let Some(refresh) = refresh {
            credential.insert("refresh".into(), refresh.into());
        }
        credential.insert("expires".into(), expires.into());
        Ok(())
    }

    /// Whether a profile with this id exists.
    pub fn contains(&self, id: &str) -> bool {
        self.profiles().contains_key(id)
    }

    /// Adds or replaces a static credential (`api_key` or `token`).
    pub fn put_static(
        &mut self,
        id: &str,
        provider: &str,
        kind: CredentialKind,
        secret: &str,
    ) -> Result<(), StateError> {
        check_id(id).map_err(StateError::Refused)?;
        if kind == CredentialKind::OAuth {
            return Err(StateError::Refused(
                "OAuth profiles come from a login (or credentials/oauth.json), not from a pasted key".into(),
            ));
        }
        if secret.is_empty() {
            return Err(StateError::Refused("the key is empty".into()));
        }
        let mut credential = Map::new();
        credential.insert("type".into(), kind.as_str().into());
        credential.insert("provider".into(), provider.into());
        credential.insert(secret_field(kind).into(), secret.into());
        self.profiles_mut()
            .insert(id.to_owned(), Value::Object(credential));
        Ok(())
    }

    /// Adds an OAuth credential as imported from a legacy file.
    pub(crate) fn put_oauth(&mut self, id: &str, credential: Map<String, Value>) {
        self.profiles_mut()
            .insert(id.to_owned(), Value::Object(credential));
    }

    /// Removes a profile; whether it existed.
    pub fn remove(&mut self, id: &str) -> bool {
        self.profiles_mut().remove(id).is_some()
    }

    /// `usageStats` kept inside this file by older versions, if any.
    pub(crate) fn legacy_usage(&self) -> Option<BTreeMap<String, Usage>> {
        let stats = self.document.get("usageStats")?;
        BTreeMap::deserialize(stats).ok()
    }
}

fn secret_field(kind: CredentialKind) -> &'static str {
    match kind {
        CredentialKind::ApiKey => "key",
        CredentialKind::OAuth => "access",
        CredentialKind::Token => "token",
    }
}

fn secret_of<'a>(fields: &'a Fields<'_>) -> Option<&'a str> {
    match fields.kind {
        CredentialKind::ApiKey => fields.key.as_deref(),
        CredentialKind::OAuth => fields.access.as_deref(),
        CredentialKind::Token => fields.token.as_deref(),
    }
}

fn summary(id: &str, fields: &Fields<'_>) -> ProfileSummary {
    let digest = Sha256::digest(secret_of(fields).unwrap_or_default().as_bytes());
    let fingerprint: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    ProfileSummary {
        id: id.to_owned(),
        stored_provider: fields.provider.clone().into_owned(),
        provider: canonical_provider(&fields.provider).to_owned(),
        kind: fields.kind,
        expires: fields.expires,
        refreshable: fields.kind == CredentialKind::OAuth
            && fields.refresh.as_deref().is_some_and(|r| !r.is_empty()),
        email: fields.email.clone().map(Cow::into_owned),
        fingerprint: format!("sha256:{fingerprint}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ProfilesFile, StateError> {
        ProfilesFile::from_value(
            Path::new("auth-profiles.json"),
            serde_json::from_str(text).unwrap(),
        )
    }

    #[test]
    fn unknown_fields_survive_a_rewrite() {
        let mut file = parse(
            r#"{"version":1,"lastGood":{"x":1},"profiles":{"google:me@x.com":
               {"type":"oauth","provider":"google","access":"a","refresh":"r","expires":5,"projectId":"p-1"}}}"#,
        )
        .unwrap();
        file.put_static("openai:work", "openai", CredentialKind::ApiKey, "sk-1")
            .unwrap();
        let text = serde_json::to_string(file.document()).unwrap();
        assert!(text.contains("\"projectId\":\"p-1\""), "{text}");
        assert!(text.contains("\"lastGood\""), "{text}");
    }

    #[test]
    fn summaries_never_carry_the_secret() {
        let file = parse(r#"{"profiles":{"openai-codex:me":{"type":"oauth","provider":"openai-codex","access":"SECRET-A","refresh":"SECRET-R"}}}"#).unwrap();
        let summary = &file.summaries()[0];
        assert_eq!(summary.provider, "openai");
        assert!(summary.refreshable);
        assert!(summary.fingerprint.starts_with("sha256:"));
        assert!(!format!("{summary:?}").contains("SECRET"));
    }

    #[test]
    fn bad_credentials_name_the_profile_and_field() {
        let error = parse(r#"{"profiles":{"openai:a":{"type":"api_key","provider":"openai","expires":"soon","key":"k"}}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("openai:a") && error.contains("invalid type"),
            "{error}"
        );
        let error = parse(r#"{"profiles":{"openai:a":{"type":"api_key","provider":"openai"}}}"#)
            .unwrap_err()
            .to_string();
        assert!(error.contains("needs its `key`"), "{error}");
        let error = parse(r#"{"version":7}"#).unwrap_err().to_string();
        assert!(error.contains("newer"), "{error}");
        assert!(
            parse(r#"{"profiles":{"nocolon":{"type":"api_key","provider":"x","key":"k"}}}"#)
                .is_err()
        );
    }
}
