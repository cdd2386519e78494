//! What a reader keeps from line to line: the scratch a scan records into,
//! the state and small objects of earlier lines ([`StateMemo`],
//! [`SmallMemo`]) and the keys they were written with ([`Key`]).

use crate::core::model::{Expectation, PairRecord};

use super::span::{Member, Span, Val};
use crate::core::schema::{N_EXP, N_POLICY, N_RESPONSE, N_SIDE, N_TOP};

/// Which small object's slots a member goes to.
#[derive(Clone, Copy)]
pub(super) enum Target {
    Policy,
    Expectation,
    Response(usize),
}

/// The objects whose keys name slots: the top level, each side, each
/// side's response, the policy and the expectation.
pub(super) const SH_TOP: usize = 0;
pub(super) const SH_SIDE: usize = 1;
pub(super) const SH_RESPONSE: usize = 3;
pub(super) const SH_POLICY: usize = 5;
pub(super) const SH_EXPECTATION: usize = 6;
const N_SHAPES: usize = 7;

/// A key as the reader last wrote it after a given key in one kind of
/// object (see `Scratch::shapes`): the text from its opening quote through
/// the colon after its closing one (at most 32 bytes, zeros after), and the
/// slot it names.
#[derive(Clone, Copy)]
pub(super) struct Key {
    text: [u128; 2],
    mask: [u128; 2],
    pub(super) len: u8,
    pub(super) slot: Option<u8>,
}

impl Key {
    /// The key written at `b[i..i + len]`, `"name":` with nothing between
    /// its closing quote and the colon; `None` when it is longer than 32
    /// bytes.
    #[inline]
    pub(super) fn new(b: &[u8], i: usize, len: usize, slot: Option<usize>) -> Option<Key> {
        if len > 32 {
            return None;
        }
        let mut text = [0u8; 32];
        text[..len].copy_from_slice(&b[i..i + len]);
        let ones = |n: usize| match n {
            0 => 0,
            16.. => u128::MAX,
            n => (1u128 << (8 * n)) - 1,
        };
        let half = |h: usize| {
            u128::from_le_bytes(text[16 * h..16 * h + 16].try_into().unwrap_or_default())
        };
        Some(Key {
            text: [half(0), half(1)],
            mask: [ones(len), ones(len.saturating_sub(16))],
            len: len as u8,
            slot: slot.and_then(|s| u8::try_from(s).ok()),
        })
    }

    /// Whether `b[i..]` begins with this key's text; compared sixteen bytes
    /// at a time where they are there.
    #[inline(always)]
    pub(super) fn at(&self, b: &[u8], i: usize) -> bool {
        let word = |at: usize| {
            b.get(at..at + 16)
                .map(|w| u128::from_le_bytes(w.try_into().unwrap_or_default()))
        };
        let Some(first) = word(i) else {
            // Near the line's end: byte by byte.
            let n = usize::from(self.len);
            let text = self.text[0].to_le_bytes();
            return n <= 16 && b.get(i..i + n) == Some(&text[..n]);
        };
        if (first ^ self.text[0]) & self.mask[0] != 0 {
            return false;
        }
        self.len <= 16 || word(i + 16).is_some_and(|w| (w ^ self.text[1]) & self.mask[1] == 0)
    }
}

/// What a scan records; kept by the reader so that a line allocates
/// nothing for it once the buffers have grown.
#[derive(Default)]
pub(super) struct Scratch {
    /// The keys of the objects being scanned, innermost last.
    pub(super) keys: Vec<SeenKey>,
    pub(super) top: [Option<Val>; N_TOP],
    pub(super) side: [[Option<Val>; N_SIDE]; 2],
    pub(super) response: [[Option<Val>; N_RESPONSE]; 2],
    pub(super) policy: [Option<Val>; N_POLICY],
    pub(super) expectation: [Option<Val>; N_EXP],
    /// The members of each side's state, when it is an object scanned here.
    pub(super) members: [Vec<Member>; 2],
    /// For each of those members, the index of the other side's member with
    /// the same key and text ([`NONE`](super::span::NONE) if there is none, or it was not
    /// looked for): the diff need not compare them again.
    pub(super) twins: [Vec<u32>; 2],
    pub(super) state_is_object: [bool; 2],
    /// Whether the line names the tool it was converted from
    /// ([`CONVERTED_FROM`](crate::core::schema::CONVERTED_FROM), not `null`).
    pub(super) converted: bool,
    /// The state object each side last scanned, kept from line to line.
    pub(super) memo: [StateMemo; 2],
    /// The policy and expectation objects the reader last scanned, which
    /// most lines repeat word for word (see [`SmallMemo`]).
    pub(super) small: [SmallMemo; 2],
    /// The entry of each small memo this line's object is in (recalled or
    /// just kept), if any.
    pub(super) small_at: [Option<usize>; 2],
    /// The last record, given back by [`Parsed::recycle`](super::Parsed::recycle): the next one is written
    /// over it in place, into the strings it holds, so that a line neither
    /// allocates a record nor moves one about.
    pub(super) spare: Option<Box<PairRecord>>,
    /// Spare strings for the record's lists (reasons, allowed changes),
    /// whose lengths vary from line to line; at most [`POOL_MAX`](super::read::POOL_MAX).
    pub(super) pool: Vec<String>,
    /// For each kind of keyed object, the key that last followed each key
    /// (by its [`after`] code) on this reader (see [`Key`]): a key written
    /// as the one that came after the same key last time is taken whole,
    /// neither scanned nor looked up. Keyed on what came before rather than
    /// on the place, so that lines with and without an optional field
    /// share all the other keys.
    pub(super) shapes: [[Option<Key>; AFTER]; N_SHAPES],
}

/// A key of an object being scanned: its first eight bytes (zeros past its
/// end), for quick inequality, and where it lies (unquoted).
#[derive(Clone, Copy)]
pub(super) struct SeenKey {
    pub(super) prefix: u64,
    pub(super) span: Span,
}

/// The codes of what a key follows: the object's opening brace (0), a key
/// naming slot `s` (`s + 1`), or a key naming none.
const AFTER: usize = N_TOP + 2;

/// The [`AFTER`] code of a key naming `slot`.
#[inline]
pub(super) fn after(slot: Option<usize>) -> usize {
    slot.map_or(AFTER - 1, |s| (s + 1).min(AFTER - 1))
}

/// The largest state object kept from line to line.
const MEMO_MAX: usize = 64 * 1024;

/// A state object scanned on an earlier line: its text, the depth it was
/// read at, and its members' spans counted from its start. The lines of a
/// case repeat its source state, one line per variant; a state whose text
/// begins the same way at the same depth is the same valid object (it ends
/// with its closing brace), with the same members, and is not scanned again.
///
/// A side whose states keep changing (the variant's, in most runs) would
/// pay a copy and a failed comparison on every line: after
/// [`MEMO_MISSES`] misses in a row the memo rests for [`MEMO_REST`] lines,
/// neither compared nor kept, then tries again.
#[derive(Default)]
pub(super) struct StateMemo {
    text: Vec<u8>,
    depth: usize,
    members: Vec<Member>,
    /// Misses in a row, and lines left to rest.
    misses: u32,
    resting: u32,
}

/// Small keyed objects (policies, expectations) scanned on earlier lines,
/// which later lines mostly repeat word for word: a few dozen kinds and
/// drifts in a run. Each is kept in the slot its text hashes to, with the
/// depth it was read at and its slots counted from its start. The same text
/// at the same depth is the same valid object (it ends with its closing
/// brace), with the same slots.
#[derive(Default)]
pub(super) struct SmallMemo {
    pub(super) entries: Vec<SmallEntry>,
}

#[derive(Default)]
pub(super) struct SmallEntry {
    pub(super) text: Vec<u8>,
    pub(super) depth: usize,
    pub(super) slots: [Option<Val>; N_EXP],
    /// What the object read as (kept for expectations): the same text
    /// reads the same.
    pub(super) reading: Reading,
}

/// What an expectation kept in a [`SmallMemo`] read as, once read.
#[derive(Default)]
pub(super) enum Reading {
    #[default]
    Unread,
    /// The line was declined for it.
    Declined,
    Read(Option<Expectation>),
}

/// Entries per [`SmallMemo`] (a power of two), and the longest object kept.
pub(super) const SMALL_ENTRIES: usize = 128;
pub(super) const SMALL_MAX: usize = 512;

/// The entry of [`SmallMemo`] that the object text `t` goes to: a hash of
/// all of it (the objects of a run differ in a digit here and there).
#[inline]
pub(super) fn small_entry(t: &[u8]) -> usize {
    let mut h = t.len() as u64;
    let mut words = t.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
        h = (h.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    for &c in words.remainder() {
        h = (h.rotate_left(5) ^ u64::from(c)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    (h >> (64 - SMALL_ENTRIES.trailing_zeros())) as usize
}

const MEMO_MISSES: u32 = 8;
const MEMO_REST: u32 = 64;

impl StateMemo {
    /// If the object at `b[start..]` is this one, its members, placed at
    /// `start`, are added to `out`, and its length is returned.
    #[inline]
    pub(super) fn recall(
        &mut self,
        b: &[u8],
        start: usize,
        depth: usize,
        out: &mut Vec<Member>,
    ) -> Option<usize> {
        if self.resting > 0 {
            self.resting -= 1;
            return None;
        }
        if self.text.is_empty() {
            return None;
        }
        if self.depth != depth || !b[start..].starts_with(&self.text) {
            self.misses += 1;
            if self.misses >= MEMO_MISSES {
                self.misses = 0;
                self.resting = MEMO_REST;
                self.text.clear();
            }
            return None;
        }
        self.misses = 0;
        let at = u32::try_from(start).ok()?;
        out.extend(self.members.iter().map(|m| m.moved(0, at)));
        Some(self.text.len())
    }

    /// Keep the object `b[start..end]`, read at `depth`, with its members;
    /// one over [`MEMO_MAX`] bytes is not kept (nor is the one before), so
    /// that a run of huge states does not leave a copy on every thread.
    #[inline]
    pub(super) fn keep(
        &mut self,
        b: &[u8],
        (start, end): (usize, usize),
        depth: usize,
        members: &[Member],
    ) {
        if self.resting > 0 {
            return;
        }
        if end - start > MEMO_MAX {
            *self = StateMemo::default();
            return;
        }
        let at = start as u32;
        self.text.clear();
        self.text.extend_from_slice(&b[start..end]);
        self.depth = depth;
        self.members.clear();
        self.members.extend(members.iter().map(|m| m.moved(at, 0)));
    }
}

impl Scratch {
    #[inline]
    pub(super) fn reset(&mut self) {
        self.keys.clear();
        self.top = [None; N_TOP];
        self.side = [[None; N_SIDE]; 2];
        self.response = [[None; 2]; 2];
        self.policy = [None; 2];
        self.expectation = [None; N_EXP];
        self.members[0].clear();
        self.members[1].clear();
        self.twins[0].clear();
        self.twins[1].clear();
        self.state_is_object = [false; 2];
        self.converted = false;
        self.small_at = [None; 2];
    }

    #[inline]
    pub(super) fn slots(&mut self, t: Target) -> &mut [Option<Val>] {
        match t {
            Target::Policy => &mut self.policy,
            Target::Expectation => &mut self.expectation,
            Target::Response(w) => &mut self.response[w],
        }
    }
}

#[cfg(test)]
#[path = "memo_tests.rs"]
mod tests;
