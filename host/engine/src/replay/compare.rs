//! Comparing replays: one policy against another (`--against`), or a replay
//! against a golden output (`--expect`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::result::Replay;

/// Where two JSON-Lines outputs first differ (1-based line), with both
/// lines in full (`None` past the end of one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstDifference {
    /// The line (1-based).
    pub line: usize,
    /// The left output's line; `None` past its end.
    pub left: Option<String>,
    /// The right output's line; `None` past its end.
    pub right: Option<String>,
}

/// The first differing line of two outputs, if any.
pub fn first_difference(left: &[String], right: &[String]) -> Option<FirstDifference> {
    (0..left.len().max(right.len()))
        .find(|&i| left.get(i) != right.get(i))
        .map(|i| FirstDifference {
            line: i + 1,
            left: left.get(i).cloned(),
            right: right.get(i).cloned(),
        })
}

/// How two replays of one trace differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The first differing line of their JSON Lines forms, if any.
    pub first: Option<FirstDifference>,
    /// Per kind of decision (`attempt`, `served`, `profile` …): how many of
    /// that kind differ.
    pub counts: BTreeMap<String, usize>,
}

/// Compares two replays of the same trace, request by request and kind by
/// kind (so one extra attempt does not count every later line as changed).
pub fn diverge(left: &Replay, right: &Replay) -> Divergence {
    let first = first_difference(&left.json_lines(), &right.json_lines());
    let mut counts = BTreeMap::new();
    let group = |replay: &Replay| {
        let mut groups: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
        for decision in &replay.decisions {
            let value = serde_json::to_value(decision).unwrap_or_default();
            let request = value["request"].to_string();
            groups
                .entry((decision.kind().to_owned(), request))
                .or_default()
                .push(value);
        }
        for line in replay.profiles.iter().chain(&replay.sessions) {
            let kind = line["kind"].as_str().unwrap_or("state").to_owned();
            groups
                .entry((kind, line["id"].to_string()))
                .or_default()
                .push(line.clone());
        }
        groups
    };
    let (a, b) = (group(left), group(right));
    let keys: std::collections::BTreeSet<_> = a.keys().chain(b.keys()).cloned().collect();
    let empty = Vec::new();
    for key in keys {
        let (x, y) = (a.get(&key).unwrap_or(&empty), b.get(&key).unwrap_or(&empty));
        let differing = (0..x.len().max(y.len()))
            .filter(|&i| x.get(i) != y.get(i))
            .count();
        if differing > 0 {
            *counts.entry(key.0).or_default() += differing;
        }
    }
    Divergence { first, counts }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_difference_is_found_and_past_the_end_is_none() {
        let a = vec!["1".to_owned(), "2".to_owned()];
        let b = vec!["1".to_owned(), "x".to_owned(), "3".to_owned()];
        let d = first_difference(&a, &b).unwrap();
        assert_eq!(
            (d.line, d.left.as_deref(), d.right.as_deref()),
            (2, Some("2"), Some("x"))
        );
        let shorter = first_difference(&a, &a[..1]).unwrap();
        assert_eq!((shorter.line, shorter.right), (2, None));
        assert_eq!(first_difference(&a, &a), None);
    }
}
