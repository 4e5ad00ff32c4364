//! A JSON object's members, each handed over with its name and its value
//! as they lie in the text.

use std::borrow::Cow;
use std::fmt;

use crate::wire::json::readers::Key;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

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
pub(crate) fn each_member<'a>(
    text: &'a str,
    each: impl FnMut(Cow<'a, str>, &'a RawValue),
) -> serde_json::Result<()> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    EachMember(each).deserialize(&mut deserializer)?;
    deserializer.end()
}
