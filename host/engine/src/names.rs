//! The names the engine reads everywhere: a provider's canonical name, a
//! `provider/model` reference, a `provider:name` profile id.

/// Aliases of provider names: a profile stored as `openai-codex` serves
/// `openai` (spec §0, F-4.7).
pub fn canonical_provider(provider: &str) -> &str {
    match provider {
        "openai-codex" => "openai",
        other => other,
    }
}

/// Splits `provider/model`.
pub fn split_model(model: &str) -> (&str, &str) {
    model.split_once('/').unwrap_or(("", model))
}

/// Profile ids are `provider:name` (spec F-2.3).
pub fn check_id(id: &str) -> Result<(), String> {
    let Some((provider, name)) = id.split_once(':') else {
        return Err(format!("profile id {id:?} must be `provider:name`"));
    };
    let good_provider = !provider.is_empty()
        && provider
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !good_provider || name.is_empty() || id.len() > 256 || id.chars().any(char::is_control) {
        return Err(format!(
            "profile id {id:?} must be `provider:name` with a provider of letters, digits, '-', '_' or '.'"
        ));
    }
    Ok(())
}
