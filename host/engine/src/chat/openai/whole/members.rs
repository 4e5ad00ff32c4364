//! A JSON object's members, each handed over with its name and its value
//! as they lie in the text.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

/// An object member's name, borrowed from the text unless it was written
/// with escapes. (`Cow<str>` itself always deserializes owned.)
pub(super) struct Key<'a>(pub Cow<'a, str>);

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

/// Hands each member of a JSON object, in order, to a closure: its name
/// and its value, both borrowed from the text where they can be.
struct EachMember<F>(F);

impl<'de, F: FnMut(Cow<'de, str>, &'de RawValue)> Visitor<'de> for EachMember<F> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        while let Some((Key(name), value)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
            (self.0)(name, value);
        }
        Ok(())
    }
}

impl<'de, F: FnMut(Cow<'de, str>, &'de RawValue)> DeserializeSeed<'de> for EachMember<F> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

/// Calls `each` on every member of the JSON object `text`; an error when
/// `text` is not one.
pub(super) fn each_member<'a>(
    text: &'a str,
    each: impl FnMut(Cow<'a, str>, &'a RawValue),
) -> serde_json::Result<()> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    EachMember(each).deserialize(&mut deserializer)?;
    deserializer.end()
}
