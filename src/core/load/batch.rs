//! The last step of a line's path: its row or problems go into a [`Batch`].
//!
//! `IndexState` is what the loader thread keeps between lines. `push`
//! takes what one line gave (`LineOut`, from [`super::line`]), interns the row's
//! strings ([`super::intern`]) and its version triple, packs its codes
//! ([`crate::core::row`]), and adds the row, or the problems, to the batch.
//! Batches go to the index over a channel, in line order; the index merges
//! them ([`RunIndex::apply`](crate::core::index::RunIndex::apply)).

use std::sync::mpsc::Sender;
use std::time::Duration;

use rustc_hash::FxHashMap;

use super::intern::{Field, Strings};
use super::line::{Line, LineOut};
use crate::core::index::strings::Shared;
use crate::core::model::Policy;
use crate::core::problem::{KEPT_PER_KIND, Problem, ProblemCounts, ProblemKind};
use crate::core::row::{InputsDigest, Loc, PackedCodes, PairRow, RowCodes, RowLabels, Sym};

/// A versions id's key: the (contract, schema, model) triple and the
/// policy's thresholds as bits (equal thresholds, equal bits).
type Versions = ([Sym; 3], Option<[u64; 2]>);

/// A policy's thresholds as bits, to key a map.
fn policy_bits(p: Policy) -> [u64; 2] {
    [p.review_threshold.to_bits(), p.action_threshold.to_bits()]
}

/// A slice of indexing work, sent from the loader thread.
#[derive(Debug, Default)]
pub struct Batch {
    /// Strings interned since the last batch, in id order.
    pub strings: Vec<Box<str>>,
    /// The chunks of strings the loader filled since the last batch: the
    /// index keeps them instead of its copies
    /// ([`Strings::share`](crate::core::index::strings::Strings::share)).
    pub shared: Vec<Shared>,
    /// (contract, schema, model) triples first seen since the last batch, in id order.
    pub versions: Vec<[Sym; 3]>,
    /// The policy of each of those versions ids, in the same order: a
    /// versions id stands for a triple and the thresholds its rows were
    /// routed by.
    pub policies: Vec<Option<Policy>>,
    pub rows: Vec<PairRow>,
    /// Each row's line number and length, beside `rows` (the position is
    /// the row's; a batch built by hand may leave it empty: line 0, length
    /// 0). The index keeps them sparsely ([`crate::core::index::locs`]).
    pub locs: Vec<Loc>,
    /// Each row's transformation, family, versions id and repetition,
    /// beside `rows` (a batch built by hand may leave it empty: none
    /// recorded).
    pub labels: Vec<RowLabels>,
    /// The digest of each row's inputs, beside `rows` (a batch built by
    /// hand may leave it empty: none recorded).
    pub inputs: Vec<InputsDigest>,
    pub problems: Vec<Problem>,
    /// Problems past the first [`KEPT_PER_KIND`] of their kind: counted only.
    pub unlisted: ProblemCounts,
    /// Bytes read so far over all files.
    pub bytes_read: u64,
    /// Set on the last batch, with the time the whole load took.
    pub finished: Option<Duration>,
}

/// What the loader thread keeps from line to line: the interned strings,
/// the ids of the version triples, and the batch being filled for the index.
pub(crate) struct IndexState {
    strings: Strings,
    /// The id of each (contract, schema, model) triple and policy seen.
    triples: FxHashMap<Versions, u32>,
    /// The triple and policy of the row before, and its id.
    last_triple: Option<(Versions, u32)>,
    batch: Batch,
    bytes_read: u64,
    tx: Sender<Batch>,
    sent_any: bool,
    /// Problems kept so far, per kind, over the whole load.
    kept: ProblemCounts,
}

impl IndexState {
    /// A state whose batches go to `tx`.
    pub(super) fn new(tx: Sender<Batch>) -> IndexState {
        IndexState {
            strings: Strings::default(),
            triples: FxHashMap::default(),
            last_triple: None,
            batch: Batch::default(),
            bytes_read: 0,
            tx,
            sent_any: false,
            kept: ProblemCounts::default(),
        }
    }

    /// The id of `s` for `field` (see [`Strings::intern`]); a new string
    /// goes out with the batch.
    #[inline]
    fn intern(&mut self, field: Field, s: Option<&[u8]>) -> Sym {
        self.strings
            .intern(field, s, &mut self.batch.strings, &mut self.batch.shared)
    }

    fn versions(&mut self, triple: [Sym; 3], policy: Option<Policy>) -> u32 {
        let key = (triple, policy.map(policy_bits));
        if let Some((last, id)) = self.last_triple
            && last == key
        {
            return id;
        }
        let id = self.versions_of(key, policy);
        self.last_triple = Some((key, id));
        id
    }

    fn versions_of(&mut self, key: Versions, policy: Option<Policy>) -> u32 {
        let next = self.triples.len() as u32;
        let id = *self.triples.entry(key).or_insert(next);
        if id == next {
            self.batch.versions.push(key.0);
            self.batch.policies.push(policy);
        }
        id
    }

    /// Send what was pushed since the last send; false once nobody listens.
    pub(crate) fn send(&mut self) -> bool {
        self.batch.bytes_read = self.bytes_read;
        let b = std::mem::take(&mut self.batch);
        self.tx.send(b).is_ok()
    }

    /// Count bytes read outside the first pass.
    pub(crate) fn add_bytes(&mut self, n: u64) {
        self.bytes_read += n;
    }

    fn flush(&mut self) {
        self.batch.bytes_read = self.bytes_read;
        let b = std::mem::take(&mut self.batch);
        // The receiver may be gone (the user quit): stop quietly.
        let _ = self.tx.send(b);
        self.sent_any = true;
    }

    /// Whether a batch went out yet.
    pub(super) fn sent_any(&self) -> bool {
        self.sent_any
    }

    /// Report a problem outside any line (a read that failed).
    pub(super) fn push_problem(&mut self, p: Problem) {
        self.keep(p.kind, || p);
    }

    /// Keep a problem while fewer than [`KEPT_PER_KIND`] of its kind were
    /// kept; past that only count it (and never build it).
    fn keep(&mut self, kind: ProblemKind, make: impl FnOnce() -> Problem) {
        if self.kept.get(kind) < KEPT_PER_KIND as u64 {
            self.kept.add(kind, 1);
            self.batch.problems.push(make());
        } else {
            self.batch.unlisted.add(kind, 1);
        }
    }

    /// Send the last batch, with the time the whole first pass took.
    pub(super) fn finish(&mut self, elapsed: Duration) {
        self.batch.finished = Some(elapsed);
        self.flush();
    }

    /// Intern and send a parsed chunk: `outs` are what its `lines` of `buf` gave.
    pub(super) fn push_all(
        &mut self,
        file_idx: u16,
        display: &str,
        lines: &[Line],
        outs: Vec<LineOut>,
        buf: &[u8],
    ) {
        for (l, out) in lines.iter().zip(outs) {
            self.push(file_idx, display, l, out, buf);
        }
        if !self.batch.rows.is_empty()
            || !self.batch.problems.is_empty()
            || self.batch.unlisted.total() > 0
            || !self.sent_any
        {
            self.flush();
        }
    }

    /// Turn one parsed line into a row or problems, in line order.
    pub(crate) fn push(
        &mut self,
        file_idx: u16,
        display: &str,
        line: &Line,
        out: LineOut,
        buf: &[u8],
    ) {
        let problem = |kind: ProblemKind, message: String| Problem {
            file: display.to_string(),
            line: line.no,
            kind,
            message,
        };
        match out {
            LineOut::Blank => {}
            LineOut::Problem(kind, message) => self.keep(kind, || problem(kind, message)),
            LineOut::Row(d) => {
                for w in d.warnings {
                    self.keep(ProblemKind::FieldWarning, || {
                        problem(ProblemKind::FieldWarning, w)
                    });
                }
                let s = &d.summary;
                let versions = [
                    self.intern(Field::Contract, d.contract.as_ref().map(|t| t.bytes(buf))),
                    self.intern(Field::Schema, d.schema.as_ref().map(|t| t.bytes(buf))),
                    self.intern(Field::Model, d.model.as_ref().map(|t| t.bytes(buf))),
                ];
                let loc = Loc::new(
                    file_idx,
                    u32::try_from(line.no).unwrap_or(u32::MAX),
                    line.offset + d.trim_start as u64,
                    u32::try_from(d.body_len).unwrap_or(u32::MAX),
                );
                let row = PairRow {
                    pos: loc.pos,
                    case: self.intern(Field::Case, Some(d.case.bytes(buf))),
                    variant: self.intern(Field::Variant, Some(d.variant.bytes(buf))),
                    dp: s.dp,
                    dc: s.dc,
                    margin: s.margin,
                    variant_margin: s.variant_margin,
                    latency: s.latency,
                    codes: PackedCodes::pack(RowCodes {
                        suggestion: d.suggestion,
                        ..s.codes
                    }),
                };
                let labels = RowLabels {
                    transformation: self
                        .intern(Field::Transformation, Some(d.transformation.bytes(buf))),
                    family: self.intern(Field::Family, d.family.as_ref().map(|t| t.bytes(buf))),
                    versions: self.versions(versions, d.policy),
                    repetition: s.repetition,
                };
                self.batch.rows.push(row);
                self.batch.locs.push(loc);
                self.batch.labels.push(labels);
                self.batch.inputs.push(d.inputs);
            }
        }
    }
}
