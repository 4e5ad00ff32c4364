//! `models.aliases`: names clients may ask for instead of `provider/model`
//! (`"gpt-4o": "openai/gpt-4o"`), or for a whole chain
//! (`"smart": ["openai/gpt-4o", "anthropic/claude-sonnet-4-5"]`).

use serde::{Deserialize, Serialize};

use super::Config;

/// One alias's target: a model, or a chain tried in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AliasTarget {
    /// One `provider/model`: asking for the alias is asking for it (strict).
    Model(String),
    /// A chain: the first model, then the others in order.
    Chain(Vec<String>),
}

impl AliasTarget {
    /// The models it names, in order.
    pub fn models(&self) -> &[String] {
        match self {
            AliasTarget::Model(model) => std::slice::from_ref(model),
            AliasTarget::Chain(models) => models,
        }
    }
}

impl Config {
    /// The models `name` stands for, when it is an alias.
    pub fn alias(&self, name: &str) -> Option<&[String]> {
        self.models.aliases.get(name).map(AliasTarget::models)
    }

    /// Expands aliases in a list of requested models (an alias naming a
    /// chain contributes its models in order), dropping repeats.
    pub fn expand_aliases<'a>(&'a self, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for name in names {
            let models = match self.alias(name) {
                Some(models) => models.to_vec(),
                None => vec![name.to_owned()],
            };
            for model in models {
                if !out.contains(&model) {
                    out.push(model);
                }
            }
        }
        out
    }

    /// Checks that each of `models` (aliases expanded) is a `provider/model`
    /// the config serves; the error says what to use instead.
    pub fn check_models(&self, models: &[String]) -> Result<(), String> {
        for model in models {
            if !model.contains('/') {
                return Err(format!(
                    "unknown model {model:?}: use `auto`, `agent:<id>`, `provider/model` or an alias of models.aliases"
                ));
            }
            self.known_model(model)?;
        }
        Ok(())
    }

    /// Checks `models.aliases`: names that cannot be mistaken for a model
    /// or a keyword, targets that are known `provider/model`s.
    pub(super) fn check_aliases(&self) -> Result<(), String> {
        for (name, target) in &self.models.aliases {
            let key = format!("models.aliases.{name}");
            if name.trim().is_empty()
                || name.contains('/')
                || name == "auto"
                || name.starts_with("agent:")
            {
                return Err(format!(
                    "{key}: an alias name must not be empty, `auto`, start with `agent:` or contain `/`"
                ));
            }
            if target.models().is_empty() {
                return Err(format!("{key} must name at least one model"));
            }
            for model in target.models() {
                self.known_model(model).map_err(|e| format!("{key}: {e}"))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(aliases: &str) -> Config {
        let mut config: Config = json5::from_str(&format!(
            r#"{{ models: {{ providers: {{ openai: {{ baseUrl: "http://x/v1" }},
                  anthropic: {{ baseUrl: "http://y", api: "anthropic-messages" }} }},
                  aliases: {aliases} }} }}"#
        ))
        .unwrap();
        config.resolve_endpoints();
        config
    }

    #[test]
    fn aliases_expand_to_models_and_chains() {
        let config =
            config(r#"{ "gpt-4o": "openai/gpt-4o", smart: ["openai/o3", "anthropic/claude-x"] }"#);
        assert_eq!(config.check_aliases(), Ok(()));
        assert_eq!(
            config.alias("gpt-4o"),
            Some(&["openai/gpt-4o".to_owned()][..])
        );
        assert_eq!(
            config.expand_aliases(["smart", "openai/o3", "gpt-4o"]),
            ["openai/o3", "anthropic/claude-x", "openai/gpt-4o"]
        );
    }

    #[test]
    fn bad_aliases_are_named() {
        for (aliases, expected) in [
            (r#"{ "a/b": "openai/x" }"#, "models.aliases.a/b"),
            (r#"{ auto: "openai/x" }"#, "models.aliases.auto"),
            (r#"{ x: [] }"#, "at least one model"),
            (r#"{ x: "nope/m" }"#, "models.aliases.x: unknown model"),
        ] {
            let error = config(aliases).check_aliases().unwrap_err();
            assert!(error.contains(expected), "{aliases}: {error}");
        }
    }
}
