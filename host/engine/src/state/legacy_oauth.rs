//! The legacy `credentials/oauth.json`, imported once into an agent's
//! profiles (spec F-2.3). The file is only read, never written.

use std::path::Path;

use serde_json::{Map, Value};

use super::error::StateError;
use super::files;
use super::secrets::ProfilesFile;

/// Reads `credentials/oauth.json` (`{"provider": {access, refresh,
/// expires, email?}, …}`) as profiles `provider:<email>` or
/// `provider:default` (spec F-2.3).
pub(super) fn import(path: &Path) -> Result<ProfilesFile, StateError> {
    let Some(Value::Object(entries)) = files::read_json::<Value>(path)? else {
        return Err(StateError::Invalid {
            path: path.to_owned(),
            message: "expected an object of provider to OAuth credentials".into(),
        });
    };
    let mut file = ProfilesFile::default();
    for (provider, entry) in entries {
        let Value::Object(entry) = entry else {
            return Err(StateError::Invalid {
                path: path.to_owned(),
                message: format!("entry {provider:?} must be an object"),
            });
        };
        let email = entry
            .get("email")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = format!("{provider}:{}", email.as_deref().unwrap_or("default"));
        let mut credential = Map::new();
        credential.insert("type".into(), "oauth".into());
        credential.insert("provider".into(), provider.clone().into());
        credential.extend(entry);
        file.put_oauth(&id, credential);
    }
    // Validate what was built, with the legacy file named in errors.
    ProfilesFile::from_value(path, Value::Object(file.document().clone()))
}
