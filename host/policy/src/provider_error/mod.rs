//! A failed provider call as the host captured it, and its JSON form.
//!
//! The JSON form is what `failover classify` reads, one object per line:
//!
//! ```json
//! {"provider": "openrouter", "status": 429, "code": "ETIMEDOUT",
//!  "errorType": "rate_limit_error", "param": "max_tokens",
//!  "message": "...", "details": [{"reason": "RATE_LIMIT_EXCEEDED"}],
//!  "headers": {"retry-after": "30"},
//!  "cause": {"message": "..."}, "error": {"message": "..."}}
//! ```
//!
//! `errorType`, `param` and `details` are what a provider's SDK reports
//! beside the code (`details` any JSON value, kept as JSON text; a string
//! is taken as that text). Every field is optional and unknown fields are
//! ignored. `message` may be a
//! provider's raw JSON error body as a string; an object or array there is
//! taken as such a body and re-serialised. `error` and `cause` nest the same
//! shape (a bare string is shorthand for `{"message": ...}`). A field of the
//! wrong type is an [`InputError`] that names the field's path.

mod flat;

use serde_json::{Map, Value};

/// One level of a provider error, with its nested `error` and `cause`.
///
/// The tree is owned, so it cannot contain a cycle; its depth is bounded when
/// it is flattened for the policy (see [`crate::Limits::max_levels`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ProviderError {
    /// The provider that was called (`openai`, `openrouter`, ...).
    pub provider: Option<String>,
    /// HTTP status, 100–599.
    pub status: Option<u16>,
    /// Symbolic code: `ETIMEDOUT`, `rate_limit_exceeded`, `ThrottlingException`, ...
    pub code: Option<String>,
    /// What the provider's SDK reports beside the code. Boxed behind one
    /// pointer: most errors have none, and the error travels in every
    /// failed call's `Result`.
    pub structured: Option<Box<Structured>>,
    /// Message text, possibly a raw JSON error body.
    pub message: String,
    /// Response headers as received, names in any case.
    /// A boxed slice (16 bytes, not a `Vec`'s 24): captured once, never
    /// grown, and the error travels in every failed call's `Result`.
    pub headers: Box<[(String, String)]>,
    /// A wrapped error (`error` field), read before `cause`.
    pub error: Option<Box<ProviderError>>,
    /// The underlying cause.
    pub cause: Option<Box<ProviderError>>,
}

/// What a provider's SDK reports beside an error's code and message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Structured {
    /// The error type (`invalid_request_error`).
    pub error_type: Option<String>,
    /// The request parameter the provider blames (`max_tokens`).
    pub param: Option<String>,
    /// Structured details, as JSON text (Google's `ErrorInfo`).
    pub details: Option<String>,
}

impl Structured {
    /// `None` when it holds nothing.
    pub(crate) fn boxed(self) -> Option<Box<Structured>> {
        (self != Structured::default()).then(|| Box::new(self))
    }
}

impl ProviderError {
    /// The provider's error type, if its SDK reported one.
    pub fn error_type(&self) -> Option<&str> {
        self.structured.as_ref()?.error_type.as_deref()
    }

    /// The request parameter the provider blames, if it named one.
    pub fn param(&self) -> Option<&str> {
        self.structured.as_ref()?.param.as_deref()
    }

    /// The provider's structured details (JSON text), if it attached any.
    pub fn details(&self) -> Option<&str> {
        self.structured.as_ref()?.details.as_deref()
    }

    /// An error with only a message.
    pub fn message(message: impl Into<String>) -> Self {
        ProviderError {
            message: message.into(),
            ..Default::default()
        }
    }

    /// Sets the provider.
    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Sets the symbolic code.
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// Adds a response header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let mut headers = std::mem::take(&mut self.headers).into_vec();
        headers.push((name.into(), value.into()));
        self.headers = headers.into_boxed_slice();
        self
    }

    /// Sets the underlying cause.
    pub fn with_cause(mut self, cause: ProviderError) -> Self {
        self.cause = Some(Box::new(cause));
        self
    }

    /// Reads the JSON form (see the module docs).
    pub fn from_json(value: &Value) -> Result<Self, InputError> {
        match value {
            Value::Object(object) => from_object(object, ""),
            other => Err(InputError::new(
                "",
                format!("expected a JSON object, got {}", kind(other)),
            )),
        }
    }

    /// The JSON form (see the module docs); `from_json` reads it back.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        if let Some(provider) = &self.provider {
            object.insert("provider".into(), provider.clone().into());
        }
        if let Some(status) = self.status {
            object.insert("status".into(), status.into());
        }
        if let Some(code) = &self.code {
            object.insert("code".into(), code.clone().into());
        }
        if let Some(error_type) = self.error_type() {
            object.insert("errorType".into(), error_type.into());
        }
        if let Some(param) = self.param() {
            object.insert("param".into(), param.into());
        }
        if !self.message.is_empty() {
            object.insert("message".into(), self.message.clone().into());
        }
        if let Some(details) = self.details() {
            // Written back as the JSON it was, or as the text it was given.
            let value = serde_json::from_str(details).unwrap_or_else(|_| details.into());
            object.insert("details".into(), value);
        }
        if !self.headers.is_empty() {
            let headers: Map<String, Value> = self
                .headers
                .iter()
                .map(|(name, value)| (name.clone(), value.clone().into()))
                .collect();
            object.insert("headers".into(), Value::Object(headers));
        }
        if let Some(error) = &self.error {
            object.insert("error".into(), error.to_json());
        }
        if let Some(cause) = &self.cause {
            object.insert("cause".into(), cause.to_json());
        }
        Value::Object(object)
    }

    /// Parses one line of JSON text.
    pub fn from_json_str(text: &str) -> Result<Self, InputError> {
        // Most lines are one flat object: read without a JSON tree.
        if let Some(error) = flat::read(text) {
            return Ok(error);
        }
        let value: Value = serde_json::from_str(text).map_err(|e| {
            // The position inside a one-line document is its column; saying
            // "line 1" would be confused with the input's own line numbers.
            let message = e.to_string();
            let message = message
                .strip_suffix(&format!(" at line {} column {}", e.line(), e.column()))
                .unwrap_or(&message);
            InputError::new(
                "",
                format!("invalid JSON at column {}: {message}", e.column()),
            )
        })?;
        Self::from_json(&value)
    }
}

/// A field of the JSON form had the wrong type or an impossible value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if path.is_empty() { String::new() } else { format!("field `{path}`: ") })]
pub struct InputError {
    /// Dotted path of the offending field (`cause.status`); empty for the
    /// whole value.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl InputError {
    fn new(path: &str, message: impl Into<String>) -> Self {
        InputError {
            path: path.to_owned(),
            message: message.into(),
        }
    }
}

fn from_object(object: &Map<String, Value>, path: &str) -> Result<ProviderError, InputError> {
    let field = |name: &str| join(path, name);
    Ok(ProviderError {
        provider: optional_string(object.get("provider"), &field("provider"))?
            .filter(|p| !p.trim().is_empty()),
        status: status(object.get("status"), &field("status"))?,
        code: code(object.get("code"), &field("code"))?,
        structured: Structured {
            error_type: optional_text(object.get("errorType"), &field("errorType"))?,
            param: optional_text(object.get("param"), &field("param"))?,
            details: details(object.get("details")),
        }
        .boxed(),
        message: message(object.get("message"), &field("message"))?,
        headers: headers(object.get("headers"), &field("headers"))?.into(),
        error: nested(object.get("error"), &field("error"))?,
        cause: nested(object.get("cause"), &field("cause"))?,
    })
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A string that says something, or none.
fn optional_text(value: Option<&Value>, path: &str) -> Result<Option<String>, InputError> {
    Ok(optional_string(value, path)?.filter(|text| !text.trim().is_empty()))
}

/// `details` as JSON text: a string is taken as that text, `null` as none.
fn details(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::Null => None,
        Value::String(text) => Some(text.clone()).filter(|t| !t.trim().is_empty()),
        other => Some(other.to_string()),
    }
}

fn optional_string(value: Option<&Value>, path: &str) -> Result<Option<String>, InputError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(InputError::new(
            path,
            format!("expected a string or null, got {}", kind(other)),
        )),
    }
}

fn status(value: Option<&Value>, path: &str) -> Result<Option<u16>, InputError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(number)) => number
            .as_u64()
            .filter(|n| (100..=599).contains(n))
            .and_then(|n| u16::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                InputError::new(
                    path,
                    format!("expected an HTTP status from 100 to 599, got {number}"),
                )
            }),
        Some(other) => Err(InputError::new(
            path,
            format!(
                "expected an HTTP status number or null, got {}",
                kind(other)
            ),
        )),
    }
}

fn code(value: Option<&Value>, path: &str) -> Result<Option<String>, InputError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        // Some SDKs put a numeric code there (`"code": 429`).
        Some(Value::Number(number)) if number.is_i64() || number.is_u64() => {
            Ok(Some(number.to_string()))
        }
        Some(other) => Err(InputError::new(
            path,
            format!("expected a string, an integer or null, got {}", kind(other)),
        )),
    }
}

fn message(value: Option<&Value>, path: &str) -> Result<String, InputError> {
    match value {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        // A provider's error body given as JSON rather than as its text.
        Some(body @ (Value::Object(_) | Value::Array(_))) => Ok(body.to_string()),
        Some(other) => Err(InputError::new(
            path,
            format!("expected a string or null, got {}", kind(other)),
        )),
    }
}

fn headers(value: Option<&Value>, path: &str) -> Result<Vec<(String, String)>, InputError> {
    let object = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(object)) => object,
        Some(other) => {
            return Err(InputError::new(
                path,
                format!(
                    "expected an object of header names to values, got {}",
                    kind(other)
                ),
            ))
        }
    };
    object
        .iter()
        .map(|(name, value)| match value {
            Value::String(text) => Ok((name.clone(), text.clone())),
            Value::Number(number) => Ok((name.clone(), number.to_string())),
            other => Err(InputError::new(
                &join(path, name),
                format!("expected a string or a number, got {}", kind(other)),
            )),
        })
        .collect()
}

fn nested(value: Option<&Value>, path: &str) -> Result<Option<Box<ProviderError>>, InputError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(object)) => Ok(Some(Box::new(from_object(object, path)?))),
        Some(Value::String(text)) => Ok(Some(Box::new(ProviderError::message(text.clone())))),
        Some(other) => Err(InputError::new(
            path,
            format!(
                "expected an error object, a string or null, got {}",
                kind(other)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_field() {
        let error = ProviderError::from_json_str(
            r#"{"provider":"openrouter","status":429,"code":"ETIMEDOUT","message":"slow",
                "headers":{"Retry-After":"30","retry-after-ms":250},
                "error":"inner text","cause":{"message":"root","status":503},"extra":true}"#,
        )
        .unwrap();
        assert_eq!(error.provider.as_deref(), Some("openrouter"));
        assert_eq!(error.status, Some(429));
        assert_eq!(error.code.as_deref(), Some("ETIMEDOUT"));
        assert_eq!(error.headers.len(), 2);
        assert_eq!(error.error.unwrap().message, "inner text");
        assert_eq!(error.cause.unwrap().status, Some(503));
    }

    #[test]
    fn missing_message_is_empty_and_body_objects_are_text() {
        assert_eq!(ProviderError::from_json_str("{}").unwrap().message, "");
        let error = ProviderError::from_json_str(r#"{"message":{"error":{"type":"x"}}}"#).unwrap();
        assert_eq!(error.message, r#"{"error":{"type":"x"}}"#);
    }

    #[test]
    fn the_json_form_round_trips() {
        let error = ProviderError::message("slow down")
            .with_provider("openai")
            .with_status(429)
            .with_code("rate_limit_exceeded")
            .with_header("retry-after", "5")
            .with_cause(ProviderError::message("root").with_status(503));
        assert_eq!(ProviderError::from_json(&error.to_json()).unwrap(), error);
        assert_eq!(
            ProviderError::from_json(&ProviderError::default().to_json()).unwrap(),
            ProviderError::default()
        );
    }

    #[test]
    fn wrong_types_name_the_field() {
        let err = ProviderError::from_json_str(r#"{"cause":{"status":"429"}}"#).unwrap_err();
        assert_eq!(err.path, "cause.status");
        assert!(err.to_string().contains("field `cause.status`"), "{err}");
        let err = ProviderError::from_json_str(r#"{"status":42}"#).unwrap_err();
        assert!(err.to_string().contains("100 to 599"), "{err}");
        let err = ProviderError::from_json_str(r#"{"headers":{"retry-after":[1]}}"#).unwrap_err();
        assert_eq!(err.path, "headers.retry-after");
        let err = ProviderError::from_json_str("[1,2]").unwrap_err();
        assert!(err.to_string().contains("expected a JSON object"), "{err}");
        let err = ProviderError::from_json_str("{\"message\": ").unwrap_err();
        assert!(err.to_string().starts_with("invalid JSON"), "{err}");
    }
}
