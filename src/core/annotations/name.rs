//! [`Name`]: a short string that many decisions share (a reviewer, the
//! time of a save, a category), held once for the whole process.
//!
//! A step of `Y y` on a large run makes millions of decisions that name one
//! reviewer, one time and a handful of categories. Held as `String`s, each
//! decision paid three heap blocks for them, and a save on several threads
//! copied each. A `Name` is one word: copying it copies a pointer, and its
//! text lives in a process-wide table ([`ustr`]) that is never freed, which
//! suits strings of which there are few (the times of saves are one a
//! second at most).

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use ustr::Ustr;

/// A shared, immutable string: one word, copied freely. It compares,
/// orders and hashes as its text does (so a map keyed by names is looked up
/// by `&str`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Name(Ustr);

impl Name {
    /// The name of `text`, adding it to the table if it is new.
    pub fn new(text: &str) -> Name {
        Name(Ustr::from(text))
    }

    /// The text.
    pub fn as_str(&self) -> &'static str {
        self.0.as_str()
    }
}

impl Default for Name {
    fn default() -> Self {
        Name::new("")
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl Hash for Name {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As a `str` hashes, which `Borrow<str>` requires.
        self.as_str().hash(state);
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Self) -> Ordering {
        if self == other {
            Ordering::Equal
        } else {
            self.as_str().cmp(other.as_str())
        }
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for Name {
    fn from(text: &str) -> Self {
        Name::new(text)
    }
}

impl From<&String> for Name {
    fn from(text: &String) -> Self {
        Name::new(text)
    }
}

impl From<String> for Name {
    fn from(text: String) -> Self {
        Name::new(&text)
    }
}

impl From<Name> for String {
    fn from(name: Name) -> Self {
        name.as_str().to_owned()
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        self == other.as_str()
    }
}

impl Serialize for Name {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Name;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Name, E> {
                Ok(Name::new(v))
            }
        }
        d.deserialize_str(Visit)
    }
}

#[cfg(test)]
mod tests {
    use super::Name;
    use std::collections::{BTreeSet, HashMap};

    #[test]
    fn a_name_is_one_word_and_an_absent_one_costs_nothing_more() {
        assert_eq!(std::mem::size_of::<Name>(), 8);
        assert_eq!(std::mem::size_of::<Option<Name>>(), 8);
    }

    #[test]
    fn equal_texts_make_equal_names_and_compare_as_text() {
        let a = Name::new("ana");
        let b = Name::new(&String::from("ana"));
        assert_eq!(a, b);
        assert_eq!(a, "ana");
        assert_ne!(a, Name::new("bo"));
        let set: BTreeSet<Name> = ["zed", "ana", "bo"].into_iter().map(Name::new).collect();
        let order: Vec<&str> = set.iter().map(Name::as_str).collect();
        assert_eq!(order, ["ana", "bo", "zed"]);
    }

    #[test]
    fn a_map_keyed_by_names_is_looked_up_by_text() {
        let mut m = HashMap::new();
        m.insert(Name::new("ana"), 1);
        assert_eq!(m.get("ana"), Some(&1));
        assert_eq!(m.get("bo"), None);
    }

    #[test]
    fn names_read_and_write_as_json_strings() {
        let n: Name = serde_json::from_str(r#""ana \"the\" reviewer""#).unwrap();
        assert_eq!(n, "ana \"the\" reviewer");
        assert_eq!(
            serde_json::to_string(&n).unwrap(),
            r#""ana \"the\" reviewer""#
        );
        assert!(serde_json::from_str::<Name>("3").is_err());
    }
}
