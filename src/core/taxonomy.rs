//! The failure categories a reviewer assigns, and their keys.
//!
//! The default taxonomy follows the failure classes of sensitivity testing:
//! an ambiguous question contract, an irrelevant distractor, missing evidence
//! semantics, conflicting evidence, threshold-boundary sensitivity, a service
//! failure, and an invalid test pair. Teams may replace or extend it in their
//! config; an annotation whose category is no longer listed is kept and shown
//! as unknown.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One failure category.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Category {
    pub id: String,
    pub name: String,
    /// The single key that assigns it.
    #[serde(default)]
    pub key: Option<char>,
    #[serde(default)]
    pub description: String,
}

/// The ordered list of categories in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taxonomy {
    pub categories: Vec<Category>,
}

const DEFAULTS: [(&str, &str, char, &str); 7] = [
    (
        "ambiguous-contract",
        "Ambiguous question contract",
        '1',
        "the question's wording, not the evidence, moved the decision",
    ),
    (
        "distractor",
        "Irrelevant state distractor",
        '2',
        "a field that should not matter changed the decision",
    ),
    (
        "missing-evidence",
        "Missing evidence semantics",
        '3',
        "absent evidence was read as evidence of absence (or the reverse)",
    ),
    (
        "conflicting-evidence",
        "Conflicting evidence",
        '4',
        "the variant's facts disagree and the model resolved them badly",
    ),
    (
        "boundary",
        "Threshold-boundary sensitivity",
        '5',
        "the source sits so near a threshold that a small drift flips the route",
    ),
    (
        "service-error",
        "Request or service failure",
        '6',
        "a timeout, error or invalid response, not a model judgment",
    ),
    (
        "invalid-pair",
        "Invalid test pair",
        '7',
        "the variant changed undeclared facts: fix the test, not the model",
    ),
];

impl Default for Taxonomy {
    fn default() -> Self {
        Taxonomy {
            categories: DEFAULTS
                .iter()
                .map(|(id, name, key, description)| Category {
                    id: id.to_string(),
                    name: name.to_string(),
                    key: Some(*key),
                    description: description.to_string(),
                })
                .collect(),
        }
    }
}

impl Taxonomy {
    /// Build a taxonomy, rejecting empty or duplicate ids and duplicate keys.
    pub fn new(categories: Vec<Category>) -> Result<Taxonomy, TaxonomyError> {
        for (i, c) in categories.iter().enumerate() {
            if c.id.trim().is_empty() {
                return Err(TaxonomyError::EmptyId { position: i + 1 });
            }
            for d in &categories[..i] {
                if d.id == c.id {
                    return Err(TaxonomyError::DuplicateId { id: c.id.clone() });
                }
                if let Some(key) = c.key
                    && d.key == c.key
                {
                    return Err(TaxonomyError::DuplicateKey {
                        key,
                        first: d.id.clone(),
                        second: c.id.clone(),
                    });
                }
            }
        }
        Ok(Taxonomy { categories })
    }

    /// The category with this id.
    pub fn by_id(&self, id: &str) -> Option<&Category> {
        self.categories.iter().find(|c| c.id == id)
    }

    /// The position of the category with this id.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.categories.iter().position(|c| c.id == id)
    }

    /// The category a key assigns.
    pub fn by_key(&self, key: char) -> Option<&Category> {
        self.categories.iter().find(|c| c.key == Some(key))
    }
}

/// Why [`Taxonomy::new`] refused a list of categories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaxonomyError {
    /// The category at this 1-based position has an empty (or blank) id.
    EmptyId { position: usize },
    /// Two categories have this id.
    DuplicateId { id: String },
    /// Two categories, `first` listed before `second`, have this key.
    DuplicateKey {
        key: char,
        first: String,
        second: String,
    },
}

impl fmt::Display for TaxonomyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaxonomyError::EmptyId { position } => {
                write!(f, "category {position} has an empty id")
            }
            TaxonomyError::DuplicateId { id } => write!(f, "category id `{id}` is listed twice"),
            TaxonomyError::DuplicateKey { key, first, second } => {
                write!(f, "key `{key}` is given to both `{first}` and `{second}`")
            }
        }
    }
}

impl std::error::Error for TaxonomyError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_has_seven_keyed_categories() {
        let t = Taxonomy::default();
        assert_eq!(t.categories.len(), 7);
        assert_eq!(t.by_key('5').map(|c| c.id.as_str()), Some("boundary"));
        assert_eq!(t.position("invalid-pair"), Some(6));
        assert!(Taxonomy::new(t.categories.clone()).is_ok());
    }

    #[test]
    fn duplicates_are_rejected() {
        let mut cats = Taxonomy::default().categories;
        cats[1].key = Some('1');
        assert!(
            Taxonomy::new(cats)
                .unwrap_err()
                .to_string()
                .contains("key `1`")
        );
    }

    #[test]
    fn errors_read_as_before() {
        let cat = |id: &str, key: Option<char>| Category {
            id: id.to_string(),
            name: id.to_string(),
            key,
            description: String::new(),
        };
        let msg = |cats| Taxonomy::new(cats).unwrap_err().to_string();
        assert_eq!(
            msg(vec![cat("a", None), cat(" ", None)]),
            "category 2 has an empty id"
        );
        assert_eq!(
            msg(vec![cat("a", None), cat("a", None)]),
            "category id `a` is listed twice"
        );
        assert_eq!(
            msg(vec![cat("a", Some('x')), cat("b", Some('x'))]),
            "key `x` is given to both `a` and `b`"
        );
    }
}
