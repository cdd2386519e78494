//! What the scan records of a value: its JSON type and where its text lies
//! in the line.

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
    pub(super) start: u32,
    pub(super) end: u32,
}

impl Val {
    /// The same value in text moved from offset `from` to offset `to`.
    #[inline]
    pub(super) fn moved(self, from: u32, to: u32) -> Val {
        Val {
            kind: self.kind,
            start: self.start - from + to,
            end: self.end - from + to,
        }
    }
}

/// One member of a `state` object: the spans of its key (unquoted) and value.
pub(super) type MemberSpan = (u32, u32, u32, u32);

/// No node (of a laid-out value), and no twin (of a state member).
pub(super) const NONE: u32 = u32::MAX;
