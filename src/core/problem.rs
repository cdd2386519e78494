//! Problems: a line that could not be read, or a field of a pair that was
//! unusable.
//!
//! The loader ([`super::load`]) reports them as it reads, the index
//! ([`super::index`]) keeps them beside the rows, and the problems panel,
//! the report and `triage check` show them. They live here, below all three,
//! because each of those reads them.

/// What kind of trouble a line gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProblemKind {
    Malformed,
    NotAnObject,
    MissingField,
    WrongType,
    InvalidUtf8,
    TooLong,
    TooDeep,
    Truncated,
    /// The pair opened, but one of its fields was unusable.
    FieldWarning,
    Io,
    /// Pairs of one case that cannot be compared: two policies mixed, or a
    /// repetition sent with regenerated inputs (seed 000, section 7). Every
    /// pair opened.
    Inconsistent,
}

impl ProblemKind {
    /// Every kind, in declaration order.
    pub const ALL: [ProblemKind; 11] = [
        ProblemKind::Malformed,
        ProblemKind::NotAnObject,
        ProblemKind::MissingField,
        ProblemKind::WrongType,
        ProblemKind::InvalidUtf8,
        ProblemKind::TooLong,
        ProblemKind::TooDeep,
        ProblemKind::Truncated,
        ProblemKind::FieldWarning,
        ProblemKind::Io,
        ProblemKind::Inconsistent,
    ];

    /// A short label for the problems panel.
    pub fn label(self) -> &'static str {
        match self {
            ProblemKind::Malformed => "malformed JSON",
            ProblemKind::NotAnObject => "not an object",
            ProblemKind::MissingField => "missing field",
            ProblemKind::WrongType => "wrong type",
            ProblemKind::InvalidUtf8 => "invalid UTF-8",
            ProblemKind::TooLong => "line too long",
            ProblemKind::TooDeep => "nesting too deep",
            ProblemKind::Truncated => "cut off",
            ProblemKind::FieldWarning => "field warning",
            ProblemKind::Io => "read error",
            ProblemKind::Inconsistent => "case warning",
        }
    }

    /// Whether the line was skipped (as opposed to opened with a warning).
    pub fn skips_line(self) -> bool {
        !matches!(self, ProblemKind::FieldWarning | ProblemKind::Inconsistent)
    }
}

/// One bad line, or one unusable field of a line that opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub line: u64,
    pub kind: ProblemKind,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.file,
            self.line,
            self.kind.label(),
            self.message
        )
    }
}

/// How many problems of each kind the loader keeps with their line and
/// message; past that it only counts them, so that a file of junk costs
/// memory for its count, not for every line (`docs/reliability.md`).
pub const KEPT_PER_KIND: usize = 1000;

/// A count per problem kind: the problems past [`KEPT_PER_KIND`] that were
/// counted but not kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProblemCounts([u64; ProblemKind::ALL.len()]);

impl ProblemCounts {
    /// Count `n` more of `kind`.
    pub fn add(&mut self, kind: ProblemKind, n: u64) {
        self.0[kind as usize] += n;
    }

    /// Forget the count of `kind` (its problems are being found again).
    pub fn clear(&mut self, kind: ProblemKind) {
        self.0[kind as usize] = 0;
    }

    /// How many of `kind`.
    pub fn get(&self, kind: ProblemKind) -> u64 {
        self.0[kind as usize]
    }

    /// Add every count of `other`.
    pub fn merge(&mut self, other: &ProblemCounts) {
        for k in ProblemKind::ALL {
            self.add(k, other.get(k));
        }
    }

    /// All kinds together.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The kinds that skip their line.
    pub fn skipped(&self) -> u64 {
        ProblemKind::ALL
            .iter()
            .filter(|k| k.skips_line())
            .map(|&k| self.get(k))
            .sum()
    }

    /// The kinds with a count, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (ProblemKind, u64)> + '_ {
        ProblemKind::ALL
            .into_iter()
            .map(|k| (k, self.get(k)))
            .filter(|&(_, n)| n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_every_kind_at_its_own_slot() {
        for (i, k) in ProblemKind::ALL.into_iter().enumerate() {
            assert_eq!(k as usize, i);
        }
        let mut c = ProblemCounts::default();
        c.add(ProblemKind::Malformed, 3);
        c.add(ProblemKind::FieldWarning, 2);
        let mut d = ProblemCounts::default();
        d.add(ProblemKind::Malformed, 1);
        c.merge(&d);
        assert_eq!(c.get(ProblemKind::Malformed), 4);
        assert_eq!((c.total(), c.skipped()), (6, 4));
        assert_eq!(
            c.iter().collect::<Vec<_>>(),
            vec![(ProblemKind::Malformed, 4), (ProblemKind::FieldWarning, 2)]
        );
    }
}
