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
