//! The reply reader held to a JSON tree of the same text: what the unit
//! tests and the `openai_reply` fuzz target both check.

use serde_json::{Map, Value};

use super::super::fields::{finish_named, usage};
use super::{one_pass, read, two_passes, Found, Unread};
use crate::faces::openai::completion_json;
use crate::model::TokenUsage;

/// Checks the reader on `text` against a tree of it (nothing to check when
/// no tree can be built: the reader takes a few texts a tree refuses, a
/// number out of range where nothing reads it). The reply must be read
/// exactly when the tree is a completion (an object whose `error` is
/// absent or null, whose first choice is an object with a `message`), with
/// what the tree says; and its relay must be JSON with the tree's members,
/// the gateway's `id`, `model` and `object`, and `created` the upstream's
/// when it sent one. Panics, naming the text, on any difference.
pub(crate) fn check_against_tree(text: &str) {
    check_one_pass(text);
    let Ok(tree) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let first = tree.get("choices").and_then(|c| c.get(0));
    let completion = tree.is_object()
        && tree.get("error").is_none_or(Value::is_null)
        && first.is_some_and(|c| c.is_object() && c.get("message").is_some());
    let read = match read(text.to_owned()) {
        Ok(read) => read,
        Err((unread, _)) => {
            let in_band = matches!(unread, Unread::InBandError);
            assert!(!completion, "a completion not read: {text}");
            assert_eq!(
                in_band,
                tree.get("error").is_some_and(|e| !e.is_null()),
                "{text}"
            );
            return;
        }
    };
    assert!(completion, "read, but not a completion: {text}");
    let message = &tree["choices"][0]["message"];
    let content = message["content"].as_str();
    assert_eq!(read.content.as_deref(), content, "{text}");
    let mut extra = message.as_object().cloned().unwrap_or_default();
    extra.remove("role");
    extra.remove("content");
    extra.retain(|_, value| !value.is_null());
    assert_eq!(read.message_extra, extra, "{text}");
    let finish = tree["choices"][0]["finish_reason"].as_str();
    assert_eq!(read.finish, finish.map(finish_named), "{text}");
    assert_eq!(read.usage, usage(tree.get("usage")), "{text}");
    let relayed = completion_json("gw-1", "p/m", 7, read.into_completion());
    let relayed: Value = serde_json::from_str(&relayed).expect("the relay is not JSON");
    let (Some(relayed), Some(tree)) = (relayed.as_object(), tree.as_object()) else {
        panic!("the relay is not an object: {text}");
    };
    for (name, value) in tree {
        if !matches!(name.as_str(), "id" | "model" | "object") {
            assert_eq!(relayed.get(name), Some(value), "member {name:?} of {text}");
        }
    }
    assert_eq!(
        (&relayed["id"], &relayed["model"], &relayed["object"]),
        (
            &Value::from("gw-1"),
            &Value::from("p/m"),
            &Value::from("chat.completion")
        ),
        "{text}"
    );
    if !tree.contains_key("created") {
        assert_eq!(relayed["created"], 7, "{text}");
    }
    let added = ["id", "model", "object", "created"]
        .iter()
        .filter(|name| !tree.contains_key(**name))
        .count();
    assert_eq!(relayed.len(), tree.len() + added, "{text}");
}

/// Wherever the one-pass reader answers, it reads what the two-pass one
/// reads: the same member spans, the same members found.
pub(crate) fn check_one_pass(text: &str) {
    let Some((members, found)) = one_pass::read(text) else {
        return;
    };
    let Ok((two_members, two_found)) = two_passes(text) else {
        panic!("read in one pass, refused in two: {text}");
    };
    assert_eq!(members, two_members, "{text}");
    assert_eq!(seen(&found), seen(&two_found), "{text}");
}

/// What a [`Found`] holds, in a form to compare.
type Seen = (
    bool,
    Option<(Option<(Option<String>, Map<String, Value>)>, Option<String>)>,
    Option<String>,
    Option<TokenUsage>,
);

fn seen(found: &Found) -> Seen {
    let choice = found.choice.as_ref().map(|choice| {
        (
            (choice.message.as_ref()).map(|m| (m.content.clone(), m.extra.clone())),
            choice.finish_reason.as_deref().map(str::to_owned),
        )
    });
    let id = found.id.as_deref().map(str::to_owned);
    (found.error, choice, id, found.usage)
}
