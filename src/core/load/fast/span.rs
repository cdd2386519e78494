//! Where the scan found things in the line, and what: [`Span`], the
//! members of a state ([`Member`]) and scanned values ([`Val`]). The line is
//! sliced by a recorded span here, and only here.

/// Where a text lies in the line: its bytes `start..end`. Offsets are
/// `u32`, as the reader takes no line of 4 GiB or more; a span is recorded
/// at the boundaries of what the scan read (quotes, brackets, ASCII
/// punctuation), so it always slices the line it was recorded in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Span {
    pub(super) start: u32,
    pub(super) end: u32,
}

impl Span {
    /// `start..end`, in a line the reader took (shorter than 4 GiB).
    #[inline]
    pub(super) fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// `start..end`; `None` when an offset does not fit in a `u32`.
    #[inline]
    pub(super) fn checked(start: usize, end: usize) -> Option<Span> {
        Some(Span {
            start: u32::try_from(start).ok()?,
            end: u32::try_from(end).ok()?,
        })
    }

    /// The text the span covers in `text`.
    #[inline]
    pub(super) fn of(self, text: &str) -> &str {
        &text[self.start as usize..self.end as usize]
    }

    /// The bytes the span covers in `b`.
    #[inline]
    pub(super) fn bytes(self, b: &[u8]) -> &[u8] {
        &b[self.start as usize..self.end as usize]
    }

    /// The same span in text moved from offset `from` to offset `to`.
    #[inline]
    pub(super) fn moved(self, from: u32, to: u32) -> Span {
        Span {
            start: self.start - from + to,
            end: self.end - from + to,
        }
    }
}

/// The JSON type of a scanned value (`Esc` is a string with escapes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Str,
    Esc,
    Num,
    True,
    False,
    Null,
    Obj,
    Arr,
}

/// A scanned value: its type and where its text lies in the line (strings
/// with their quotes).
#[derive(Debug, Clone, Copy)]
pub(super) struct Val {
    pub(super) kind: Kind,
    pub(super) span: Span,
}

impl Val {
    /// The same value in text moved from offset `from` to offset `to`.
    #[inline]
    pub(super) fn moved(self, from: u32, to: u32) -> Val {
        Val {
            kind: self.kind,
            span: self.span.moved(from, to),
        }
    }
}

/// One member of a `state` object: where its key (unquoted) and its value
/// lie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Member {
    pub(super) key: Span,
    pub(super) value: Span,
}

impl Member {
    /// The same member in text moved from offset `from` to offset `to`.
    #[inline]
    pub(super) fn moved(self, from: u32, to: u32) -> Member {
        Member {
            key: self.key.moved(from, to),
            value: self.value.moved(from, to),
        }
    }
}

/// A member as its four offsets, for the tests: key start and end, value
/// start and end.
#[cfg(test)]
impl From<(u32, u32, u32, u32)> for Member {
    fn from((ks, ke, vs, ve): (u32, u32, u32, u32)) -> Member {
        Member {
            key: Span { start: ks, end: ke },
            value: Span { start: vs, end: ve },
        }
    }
}

#[cfg(test)]
impl PartialEq<(u32, u32, u32, u32)> for Member {
    fn eq(&self, other: &(u32, u32, u32, u32)) -> bool {
        *self == Member::from(*other)
    }
}

/// No node (of a laid-out value), and no twin (of a state member).
pub(super) const NONE: u32 = u32::MAX;
