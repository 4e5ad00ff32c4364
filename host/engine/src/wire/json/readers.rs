//! Small serde readers over JSON text, for reading what the gateway needs
//! of a request or a reply without building a tree: names and strings
//! borrowed from the text where they can be, and a value of another shape
//! than the one wanted read as absent (as `Value::as_*` has it), an array
//! or object in its place consumed unread.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// An object member's name, borrowed from the text unless it was written
/// with escapes. (`Cow<str>` itself always deserializes owned.)
pub(crate) struct Key<'a>(pub Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(text.to_owned())))
            }
            fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Visitor methods for the values a reader does not want: each reads as
/// `$none`, an array or object consumed unread.
macro_rules! other_values_are {
    ($none:expr, [$($skip:ident),*]) => {
        $(other_values_are!(@one $skip, $none);)*
    };
    (@one bool, $none:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> { Ok($none) }
    };
    (@one i64, $none:expr) => {
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> { Ok($none) }
    };
    (@one u64, $none:expr) => {
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> { Ok($none) }
    };
    (@one f64, $none:expr) => {
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> { Ok($none) }
    };
    (@one str, $none:expr) => {
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> { Ok($none) }
    };
    (@one unit, $none:expr) => {
        fn visit_unit<E>(self) -> Result<Self::Value, E> { Ok($none) }
    };
    (@one seq, $none:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($none)
        }
    };
    (@one map, $none:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($none)
        }
    };
}

/// A count: a non-negative integer that fits in 64 bits (`as_u64`).
pub(crate) struct Count(pub Option<u64>);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CountVisitor;
        impl<'de> Visitor<'de> for CountVisitor {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_u64<E>(self, count: u64) -> Result<Count, E> {
                Ok(Count(Some(count)))
            }
            other_values_are!(Count(None), [bool, i64, f64, str, unit, seq, map]);
        }
        deserializer.deserialize_any(CountVisitor)
    }
}

/// A string, borrowed unless it was written with escapes (`as_str`).
pub(crate) struct Text<'a>(pub Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Some(Cow::Borrowed(text))))
            }
            fn visit_str<E>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(Some(Cow::Owned(text.to_owned()))))
            }
            fn visit_string<E>(self, text: String) -> Result<Text<'de>, E> {
                Ok(Text(Some(Cow::Owned(text))))
            }
            other_values_are!(Text(None), [bool, i64, u64, f64, unit, seq, map]);
        }
        deserializer.deserialize_any(TextVisitor)
    }
}

pub(crate) use other_values_are;
