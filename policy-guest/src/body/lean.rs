//! A JSON value that keeps only what the body rules read.
//!
//! A `serde_json::Value` tree allocates a string and a map entry for every
//! key and value of a body, and the rules look at a dozen keys. [`Node`]
//! keeps the values of those keys ([`KEYS`]) and the first items of arrays;
//! everything else is still read and checked as JSON, but skipped. Where a
//! key repeats, its last value wins, as in a parsed map.

use std::fmt;
use std::mem::ManuallyDrop;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// The keys any rule reads, in any object of a body; [`CODE_KEYS`] first.
const KEYS: [&str; 13] = [
    "type",
    "code",
    "status",
    "__type",
    "error_code",
    "errorCode",
    "error",
    "message",
    "details",
    "metadata",
    "raw",
    "reason",
    "retryDelay",
];

/// The keys whose value is read as a code or a status, in the order they
/// are read: the first six of [`KEYS`].
pub(super) const CODE_KEYS: &[&str] = KEYS.split_at(6).0;

/// Items of an array that are kept: `details` is read up to its first
/// [`MAX_CODES`](super::MAX_CODES) items, a body wrapped in an array by its
/// first.
pub(super) const KEPT_ITEMS: usize = super::MAX_CODES;

/// A JSON value, as far as the rules read it.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Node {
    Object(Box<Object>),
    /// The first [`KEPT_ITEMS`] items.
    Array(Vec<Node>),
    Text(String),
    /// A number: its value when it is a whole number that fits a `u64`.
    Number(Option<u64>),
    /// `null`, `true` or `false`.
    Other,
}

/// An object's values for [`KEYS`].
///
/// Dropped by the keys it has: the slots of absent keys are `None`, and
/// walking all of them, a call of the drop glue each in the sandbox, cost
/// more than the rest of freeing a body's tree.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Object {
    values: ManuallyDrop<[Option<Node>; KEYS.len()]>,
    /// Bit `i` is set when `values[i]` is `Some`.
    present: u16,
}

// `present` has a bit for every key.
const _: () = assert!(KEYS.len() <= u16::BITS as usize);

impl Drop for Object {
    fn drop(&mut self) {
        debug_assert!(
            (0..KEYS.len()).all(|i| self.values[i].is_some() == (self.present >> i & 1 == 1)),
            "a value without its bit would not be dropped"
        );
        let mut present = self.present;
        while present != 0 {
            self.values[present.trailing_zeros() as usize] = None;
            present &= present - 1;
        }
    }
}

impl Object {
    /// The value of `key` (one of [`KEYS`]), if the object has it. Inlined,
    /// a constant key's place is found at build time.
    #[inline]
    pub(super) fn get(&self, key: &str) -> Option<&Node> {
        debug_assert!(key_index(key).is_some(), "{key:?} is not kept");
        self.values[key_index(key)?].as_ref()
    }

    /// Sets the value of the key at `index` in [`KEYS`] (see [`key_index`]).
    pub(super) fn set(&mut self, index: usize, value: Node) {
        self.values[index] = Some(value);
        self.present |= 1 << index;
    }

    /// Whether the object has `key` (one of [`KEYS`]), whatever its value.
    pub(super) fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

impl Node {
    /// What reading `text` as a whole `serde_json::Value` and then keeping
    /// what the rules read gives: the reference [`Node`]'s own reader must
    /// agree with (tests and the fuzz target check it).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn through_value(value: &serde_json::Value) -> Node {
        use serde_json::Value;
        match value {
            Value::Object(map) => {
                let mut object = Object::default();
                for (key, value) in map {
                    if let Some(index) = key_index(key) {
                        object.set(index, Node::through_value(value));
                    }
                }
                Node::Object(Box::new(object))
            }
            Value::Array(items) => Node::Array(
                items
                    .iter()
                    .take(KEPT_ITEMS)
                    .map(Node::through_value)
                    .collect(),
            ),
            Value::String(text) => Node::Text(text.clone()),
            Value::Number(number) => Node::Number(number.as_u64()),
            Value::Null | Value::Bool(_) => Node::Other,
        }
    }
}

/// Where a key sits in [`KEYS`]; `None` for a key no rule reads.
///
/// Compared a word at a time: a `match` on the strings compiles to a call
/// of `memcmp` per candidate, which in the sandbox costs a call each, and
/// a body's every key is looked up.
pub(super) fn key_index(key: &str) -> Option<usize> {
    let key = key.as_bytes();
    let is = |index: usize| same_short(key, KEYS[index].as_bytes());
    // By length first: at most three kept keys share one.
    match key.len() {
        3 => is(10).then_some(10),
        4 => [0, 1].into_iter().find(|&i| is(i)),
        5 => is(6).then_some(6),
        6 => [2, 3, 11].into_iter().find(|&i| is(i)),
        7 => [7, 8].into_iter().find(|&i| is(i)),
        8 => is(9).then_some(9),
        9 => is(5).then_some(5),
        10 => [4, 12].into_iter().find(|&i| is(i)),
        _ => None,
    }
}

/// `a == b` for a `b` of at most 16 bytes, in at most two compares of
/// overlapping words.
#[inline(always)]
fn same_short(a: &[u8], b: &[u8]) -> bool {
    let n = b.len();
    if a.len() != n {
        return false;
    }
    let u32_at = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("4"));
    let u64_at = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8"));
    match n {
        0..=3 => a == b,
        4..=8 => u32_at(a, 0) == u32_at(b, 0) && u32_at(a, n - 4) == u32_at(b, n - 4),
        9..=16 => u64_at(a, 0) == u64_at(b, 0) && u64_at(a, n - 8) == u64_at(b, n - 8),
        _ => a == b,
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
        Ok(Node::Other)
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Other)
    }

    fn visit_u64<E>(self, value: u64) -> Result<Node, E> {
        Ok(Node::Number(Some(value)))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Node, E> {
        Ok(Node::Number(u64::try_from(value).ok()))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
        Ok(Node::Number(None))
    }

    fn visit_str<E>(self, value: &str) -> Result<Node, E> {
        Ok(Node::Text(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Node, E> {
        Ok(Node::Text(value))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while items.len() < KEPT_ITEMS {
            match seq.next_element::<Node>()? {
                Some(item) => items.push(item),
                None => return Ok(Node::Array(items)),
            }
        }
        while seq.next_element::<Skipped>()?.is_some() {}
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut object = Object::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key.0 {
                Some(index) => object.set(index, map.next_value::<Node>()?),
                None => {
                    map.next_value::<Skipped>()?;
                }
            }
        }
        Ok(Node::Object(Box::new(object)))
    }
}

/// A value no rule reads, read as a whole `Value` would be and dropped.
/// Not `serde::de::IgnoredAny`: serde_json skips that without reading its
/// numbers, so a body with `1e999` in a field no rule reads would become
/// readable, where a whole `Value` (and every verdict before this reader)
/// refuses it.
struct Skipped;

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SkippedVisitor)
    }
}

struct SkippedVisitor;

impl<'de> Visitor<'de> for SkippedVisitor {
    type Value = Skipped;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_unit<E>(self) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_str<E>(self, _: &str) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skipped, A::Error> {
        while seq.next_element::<Skipped>()?.is_some() {}
        Ok(Skipped)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skipped, A::Error> {
        while map.next_entry::<Skipped, Skipped>()?.is_some() {}
        Ok(Skipped)
    }
}

/// An object key: its place in [`KEYS`], if a rule reads it.
struct Key(Option<usize>);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, key: &str) -> Result<Key, E> {
        Ok(Key(key_index(key)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_found_where_it_is_listed() {
        for (index, key) in KEYS.iter().enumerate() {
            assert_eq!(key_index(key), Some(index), "{key}");
        }
        assert_eq!(key_index("Type"), None);
        for near in [
            "typ",
            "types",
            "error_codes",
            "errorcode",
            "retrydelay",
            "",
            "r",
            "ra",
            "rax",
        ] {
            assert_eq!(key_index(near), None, "{near}");
        }
        assert!(same_short(b"0123456789abcdefX", b"0123456789abcdefX"));
        assert!(!same_short(b"0123456789abcdefX", b"0123456789abcdefY"));
    }

    #[test]
    fn the_last_of_a_repeated_key_wins_and_other_keys_are_skipped() {
        let node: Node =
            serde_json::from_str(r#"{"code":"a","pad":{"x":[1,2,{"y":null}]},"code":429}"#)
                .unwrap();
        let Node::Object(object) = node else {
            panic!("an object: {node:?}");
        };
        assert!(matches!(object.get("code"), Some(Node::Number(Some(429)))));
        assert!(object.get("type").is_none());
    }

    #[test]
    fn arrays_keep_their_first_items_and_still_check_the_rest() {
        let node: Node = serde_json::from_str("[0,1,2,3,4,5,6,7,8,9]").unwrap();
        assert!(matches!(&node, Node::Array(items) if items.len() == KEPT_ITEMS));
        assert!(serde_json::from_str::<Node>("[0,1,2,3,4,5,6,7,8,}").is_err());
    }

    #[test]
    fn numbers_are_whole_and_unsigned_or_nothing() {
        let number = |text: &str| match serde_json::from_str::<Node>(text).unwrap() {
            Node::Number(value) => value,
            other => panic!("{other:?}"),
        };
        assert_eq!(number("429"), Some(429));
        // serde_json reads `-0` as a float, as a whole `Value` does.
        assert_eq!(number("-0"), None);
        assert_eq!(number("-1"), None);
        assert_eq!(number("429.0"), None);
    }
}
