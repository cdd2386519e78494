//! How the view is ordered and grouped: sort keys and case groups.
//!
//! The view is a list of row indices (filtered pairs). [`sort_rows`] orders
//! it by any column without comparing strings per row: interned strings are
//! ranked once, then rows are sorted by small integers. [`build_items`] turns
//! the view into what the list shows: pairs, or case headers with their
//! variants beneath (folded cases hide their variants).

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use crate::core::annotations::{AnnotationStore, Name};
use crate::core::derive::Status;
use crate::core::index::RunIndex;
use crate::core::index::strings::Strings;
use crate::core::row::{NO_SYM, Sym};

/// A column the list can be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    /// The order of the run file.
    #[default]
    File,
    Status,
    Case,
    Variant,
    Transformation,
    Route,
    /// Probability drift, by magnitude.
    Drift,
    Margin,
    Category,
}

impl SortKey {
    /// Every key, in the order `o` cycles through them.
    pub const ALL: [SortKey; 9] = [
        SortKey::File,
        SortKey::Status,
        SortKey::Case,
        SortKey::Variant,
        SortKey::Transformation,
        SortKey::Route,
        SortKey::Drift,
        SortKey::Margin,
        SortKey::Category,
    ];

    /// The column name shown in the list title.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::File => "file order",
            SortKey::Status => "status",
            SortKey::Case => "case",
            SortKey::Variant => "variant",
            SortKey::Transformation => "transformation",
            SortKey::Route => "route",
            SortKey::Drift => "|Δp|",
            SortKey::Margin => "margin",
            SortKey::Category => "category",
        }
    }

    /// The next key in the cycle.
    pub fn next(self) -> SortKey {
        let i = SortKey::ALL.iter().position(|k| *k == self).unwrap_or(0);
        SortKey::ALL[(i + 1) % SortKey::ALL.len()]
    }
}

/// The sort in effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sort {
    pub key: SortKey,
    pub descending: bool,
}

/// One line of the list.
///
/// (Counts in `u32`, as row numbers are: the list is rebuilt on every
/// keystroke of a query, and at ten million pairs each byte of an item is
/// ten megabytes written.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// A case header; its pairs are `view[start..start + len]`.
    Case {
        case: Sym,
        start: u32,
        len: u32,
        failures: u32,
        folded: bool,
    },
    Pair(u32),
}

impl Item {
    /// A case header's pairs, as a range of the view.
    pub fn case_rows(&self) -> Option<std::ops::Range<usize>> {
        match *self {
            Item::Case { start, len, .. } => {
                let start = start as usize;
                Some(start..start + len as usize)
            }
            Item::Pair(_) => None,
        }
    }
}

/// The byte-order rank of every interned string, so rows sort by integers.
///
/// Interned strings only ever grow, so the ranks are kept and computed again
/// only when the index has new strings: a sort on a string column costs one
/// ranking per new batch of strings, then integer sorts.
#[derive(Debug, Clone, Default)]
struct Ranks {
    /// How many strings the ranks cover.
    len: usize,
    rank: Vec<u32>,
}

impl Ranks {
    /// The ranks for every string of `index` (computed again if it has new ones).
    fn of(&mut self, index: &RunIndex) -> &[u32] {
        let strings = index.strings();
        if self.len != strings.len() || self.rank.len() != strings.len() {
            self.rank = strings.ranks();
            self.len = strings.len();
        }
        &self.rank
    }
}

/// What sorting keeps from one sort to the next: the string ranks, and the
/// two buffers of keys the radix sort moves between.
///
/// The buffers are 8 bytes a row each. Allocated afresh for every sort of
/// ten million rows, their pages were mapped and zeroed by the kernel each
/// time, which took as long as a pass of the sort; kept, a sort after the
/// first touches only memory it already has. They stay as large as the
/// largest view sorted (16 bytes a pair at most, a tenth of a second of
/// sorting at ten million pairs saved each time).
#[derive(Debug, Clone, Default)]
pub struct SortCache {
    ranks: Ranks,
    keys: Vec<u64>,
    spare: Vec<u64>,
}

impl SortCache {
    /// Whether the interned strings have been ranked yet (by a sort on a
    /// string column, or a warm-up).
    pub fn is_ranked(&self) -> bool {
        !self.ranks.rank.is_empty()
    }

    /// Forget the ranks: they are of another index's strings (a run read
    /// again, whose strings may be as many and interned in another order).
    pub fn forget_ranks(&mut self) {
        self.ranks = Ranks::default();
    }

    /// Take what a [`SortWarmup`] made, where a sort has not made it
    /// already: the ranks if none are kept, the buffers if larger.
    pub fn warm(&mut self, warmup: SortWarmup) {
        let SortWarmup { ranks, keys, spare } = warmup;
        if !self.is_ranked() {
            self.ranks = ranks;
        }
        if keys.capacity() > self.keys.capacity() {
            (self.keys, self.spare) = (keys, spare);
        }
    }
}

/// What the first sort of a large run would otherwise make, made ahead:
/// the rank of every interned string, and the two key buffers sized for
/// every row, their pages touched. At ten million pairs the ranking takes
/// about a sixth of a second and the buffers' 160 MB of fresh pages a
/// third; made on a thread of its own once the run is indexed
/// ([`crate::tui::effects::warm_sorting`]), while the reviewer reads the
/// first screen, the first sort costs what the later ones do. The ranks
/// hold for the strings they were made from: interned strings only grow,
/// and [`Ranks::of`] ranks again when there are more.
#[derive(Debug, Default)]
pub struct SortWarmup {
    ranks: Ranks,
    keys: Vec<u64>,
    spare: Vec<u64>,
}

impl SortWarmup {
    /// Rank `strings` and make the buffers for a view of `rows` rows.
    pub fn make(strings: &Strings, rows: usize) -> SortWarmup {
        let rank = strings.ranks();
        // Room written once, so that the kernel maps every page now (a
        // zeroed allocation would leave them to the first sort).
        let touched = |n: usize| {
            let mut v: Vec<u64> = Vec::with_capacity(n);
            v.spare_capacity_mut().fill(std::mem::MaybeUninit::new(0));
            v
        };
        SortWarmup {
            ranks: Ranks {
                len: strings.len(),
                rank,
            },
            keys: touched(rows),
            spare: touched(rows),
        }
    }

    /// [`SortWarmup::make`] as work set aside for the screen: on one
    /// thread of a pool of its own at a lower priority than the screen's,
    /// so that a reviewer reading the first screen keeps the other core.
    /// Without that pool, made on the calling thread, whose priority is
    /// then lowered for good: call it on a thread made for it.
    pub fn make_aside(strings: &Strings, rows: usize) -> SortWarmup {
        let make = || SortWarmup::make(strings, rows);
        match rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .start_handler(|_| lower_priority())
            .build()
        {
            Ok(pool) => pool.install(make),
            Err(_) => {
                lower_priority();
                make()
            }
        }
    }
}

/// Lower the calling thread's priority (Linux keeps a nice value per thread).
fn lower_priority() {
    // SAFETY: no pointers; who = 0 is the calling thread on Linux.
    #[cfg(target_os = "linux")]
    let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 10) };
}

/// Order `view` by `sort`; ties keep file order.
///
/// Ranks the interned strings afresh; [`sort_rows_with`] keeps them between sorts.
pub fn sort_rows(index: &RunIndex, store: &AnnotationStore, view: &mut [u32], sort: Sort) {
    sort_rows_with(&mut SortCache::default(), index, store, view, sort);
}

/// Below this many rows a sort stays on the calling thread.
const PAR_MIN: usize = 50_000;

/// Order `view` by `sort`; ties keep file order, so the result is the same
/// on any number of threads.
///
/// Each row gets one `u64`: its primary key (an integer: a rank, a code, or
/// a float's bits) in the high half and its row number in the low half.
/// The keys are computed once (in parallel on large views) and
/// radix-sorted as plain integers (linear time), the last pass writing the
/// row numbers to the view.
pub fn sort_rows_with(
    cache: &mut SortCache,
    index: &RunIndex,
    store: &AnnotationStore,
    view: &mut [u32],
    sort: Sort,
) {
    if sort.key == SortKey::File {
        // (A rebuild gives its rows in file order already: one read of
        // them says so, where even a sort of sorted rows writes them.)
        if view.is_sorted() {
            // Nothing to move.
        } else if view.len() >= PAR_MIN {
            view.par_sort_unstable();
        } else {
            view.sort_unstable();
        }
        if sort.descending {
            view.reverse();
        }
        return;
    }
    let rows = &index.rows;
    let SortCache { ranks, keys, spare } = cache;
    keys.clear();
    let desc = sort.descending;
    // A descending sort sorts its keys ascending too: each recorded value
    // is turned over (`top - 1 - value`) and so is the row number, while
    // "not recorded" stays `top`, last. The keys are made from the view
    // read backwards, so that a sort on the primary half alone keeps ties
    // in the reverse of the view's order, as the full sort does.
    let key_of = move |primary: Option<u32>, top: u32, r: u32| -> u64 {
        let p = match primary {
            None => top,
            Some(p) if desc => top - 1 - p,
            Some(p) => p,
        };
        (u64::from(p) << 32) | u64::from(if desc { !r } else { r })
    };
    // Each "not recorded" value is one past the largest recorded one (not
    // `u32::MAX`), so that a key's high digits do not all vary only because
    // some rows lack the value: a digit the same in every key costs no pass.
    if sort.key == SortKey::Category {
        // Categories live in the store, not the index: rank their ids once.
        let mut ids: Vec<Name> = view
            .iter()
            .filter_map(|&r| {
                rows.get(r as usize)
                    .and_then(|row| index.annotation(Some(store), row))
                    .and_then(|a| a.category)
            })
            .collect();
        ids.sort();
        ids.dedup();
        let pos: HashMap<&str, u32> = ids
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), i as u32))
            .collect();
        let top = ids.len() as u32;
        let key = |&r: &u32| {
            let c = rows
                .get(r as usize)
                .and_then(|row| index.annotation(Some(store), row))
                .and_then(|a| a.category.as_deref())
                .and_then(|c| pos.get(c).copied());
            key_of(c, top, r)
        };
        if desc {
            keys.extend(view.iter().rev().map(key));
        } else {
            keys.extend(view.iter().map(key));
        }
    } else {
        let needs_ranks = matches!(
            sort.key,
            SortKey::Case | SortKey::Variant | SortKey::Transformation
        );
        let rank: &[u32] = if needs_ranks { ranks.of(index) } else { &[] };
        let sym_rank = |s: Sym| {
            if s == NO_SYM {
                None
            } else {
                rank.get(s as usize).copied()
            }
        };
        let top = match sort.key {
            SortKey::File | SortKey::Category => 1,
            SortKey::Status => Status::ALL.len() as u32,
            SortKey::Case | SortKey::Variant | SortKey::Transformation => rank.len() as u32,
            // Nine pairs of routes (3 × 3).
            SortKey::Route => 9,
            SortKey::Drift | SortKey::Margin => u32::MAX,
        };
        let statuses = index.statuses();
        let key = |&r: &u32| -> u64 {
            let Some(row) = rows.get(r as usize) else {
                return key_of(None, top, r);
            };
            let primary: Option<u32> = match sort.key {
                SortKey::File | SortKey::Category => Some(0),
                // A column of one byte a row, not the row: at ten million
                // pairs the rows do not fit the CPU's caches.
                SortKey::Status => Some(match statuses {
                    Some(col) => col[r as usize] as u32,
                    None => row.status() as u32,
                }),
                SortKey::Case => sym_rank(row.case),
                SortKey::Variant => sym_rank(row.variant),
                SortKey::Transformation => sym_rank(index.transformation(r as usize)),
                SortKey::Route => match (row.source_route(), row.variant_route()) {
                    (Some(a), Some(b)) => Some(u32::from(a.rank()) * 3 + u32::from(b.rank())),
                    _ => None,
                },
                SortKey::Drift => float_key(row.dp.abs()),
                SortKey::Margin => float_key(row.margin),
            };
            key_of(primary, top, r)
        };
        match (view.len() >= PAR_MIN, desc) {
            (true, false) => {
                keys.par_extend(view.par_iter().with_min_len(PAR_MIN / 4).map(key));
            }
            (true, true) => {
                keys.par_extend(view.par_iter().rev().with_min_len(PAR_MIN / 4).map(key));
            }
            (false, false) => keys.extend(view.iter().map(key)),
            (false, true) => keys.extend(view.iter().rev().map(key)),
        }
    }
    // The row number in the low half makes every key distinct, so there is
    // one order only. A view already in file order (as rebuilt from a
    // query) needs only the primary half sorted, stably.
    let in_file_order = view.is_sorted();
    let mask = if desc { u32::MAX } else { 0 };
    if !radix_sort(
        keys,
        spare,
        if in_file_order { 32 } else { 0 },
        Some((view, mask)),
    ) {
        for (v, k) in view.iter_mut().zip(keys.iter()) {
            *v = (*k as u32) ^ mask;
        }
    }
}

/// Bits of the key each pass of the radix sort sorts on: 2,048 places a
/// pass. A 32-bit primary key takes three passes, not the four of bytes;
/// a part's counts for a pass (16 KB) stay in the core's first cache.
const DIGIT_BITS: u32 = 11;
const PLACES: usize = 1 << DIGIT_BITS;

/// One count per place of a digit (on the heap: rayon's jobs pass what
/// they return along their stack frames, and a debug build's frames hold
/// a table several times).
type Counts = Box<[usize; PLACES]>;

fn no_counts() -> Counts {
    Box::new([0; PLACES])
}

/// Below this many keys a sort is least-significant-digit first
/// throughout; from it, the most significant digit that varies goes first
/// ([`radix_sort_in`]). (About where the keys and their spare, 16 bytes a
/// key, stop fitting a core's second-level cache; measured with
/// `OPS=sort examples/ops_time` at one and ten million pairs, the split
/// is the faster from a quarter of a million keys at either size.)
const SPLIT_MIN: usize = 1 << 18;

/// Sort `keys` on their bits `from_bit..64`, stably: a radix sort, one
/// pass per digit that is not the same in every key. With `from_bit = 0`
/// this is a full sort of the integers; with `from_bit = 32`, keys equal
/// in their high half keep their order. A large input is sorted on every
/// core: each pass, each core moves its own part.
///
/// `spare` is the buffer the keys move to and back; it is reused, and
/// whichever of the two holds the sorted keys at the end is left in `keys`.
fn radix_sort(
    keys: &mut Vec<u64>,
    spare: &mut Vec<u64>,
    from_bit: u32,
    rows: Option<(&mut [u32], u32)>,
) -> bool {
    let parts = if keys.len() >= PAR_MIN {
        rayon::current_num_threads().max(1)
    } else {
        1
    };
    radix_sort_in(keys, spare, from_bit, parts, rows, SPLIT_MIN)
}

/// [`radix_sort`] in `parts` parts. Each pass counts the digit's values in
/// each part, then each part's keys go to their own stretch of each
/// value's place, after the stretches of the parts before it: the order of
/// equal digits stays the order of the keys, and no two parts write to the
/// same place.
///
/// From `split_min` keys, when more than one digit varies, the most
/// significant one is sorted on first, which splits the keys into up to
/// 2,048 runs, one per value of that digit. Each run is then sorted on
/// the other digits by itself (the runs shared among the cores), least
/// significant first, or split again if it holds `split_min / 2` keys or
/// more: a run is small enough to stay in the CPU's caches while it is
/// sorted, where the whole would go to memory and back each pass.
///
/// With `rows`, the last pass that moves keys writes each key's low half
/// (exclusive-or the mask given) to `rows` instead, in the sorted order,
/// and `keys` is left in no particular order: the view is written
/// once, and the keys not read again. Returns whether it did (not when
/// no digit varies: the keys are then already in order).
fn radix_sort_in(
    keys: &mut Vec<u64>,
    spare: &mut Vec<u64>,
    from_bit: u32,
    parts: usize,
    rows: Option<(&mut [u32], u32)>,
    split_min: usize,
) -> bool {
    let n = keys.len();
    if n < 2 {
        return false;
    }
    // Every place of `spare` is written in each pass before it is read:
    // its old contents do not matter, only its length.
    spare.resize(n, 0);
    let shifts: Vec<u32> = (from_bit..64).step_by(DIGIT_BITS as usize).collect();
    let counted = count_digits(keys, &shifts, parts);
    let passes = varying(&shifts, &counted, n);
    let (written, in_spare) = sort_on(
        keys,
        spare,
        &passes,
        parts,
        rows,
        (split_min, split_min / 2),
    );
    if in_spare {
        std::mem::swap(keys, spare);
    }
    written
}

/// The digits at `shifts` that are not the same in all `n` keys (whose
/// counts are `counts`), with their counts: a digit the same in every key
/// needs no pass.
fn varying<'c>(shifts: &[u32], counts: &'c [DigitCounts], n: usize) -> Vec<(u32, &'c DigitCounts)> {
    shifts
        .iter()
        .copied()
        .zip(counts)
        .filter(|(_, c)| !c.all.contains(&n))
        .collect()
}

/// The counts of one digit's values in some keys, as they lay when
/// counted: in each of their parts, and over all of them.
struct DigitCounts {
    /// Each part's, in order; empty when the keys are one part (`all`).
    each: Vec<Counts>,
    all: Counts,
}

impl DigitCounts {
    /// Each part's counts: what a pass that moves the keys as they lay
    /// when counted needs, so that it need not read them to count again.
    fn each(&self) -> &[Counts] {
        if self.each.is_empty() {
            std::slice::from_ref(&self.all)
        } else {
            &self.each
        }
    }
}

/// Sort `a` (through `b`) on the digits of `passes` (counted in `a` as it
/// lies, in `parts`): split on the top one first if more than one varies
/// and there are `split_min` keys or more (the runs split again from
/// `run_split_min`), else least significant first. Returns whether it wrote `rows`, and whether the keys ended in `b`.
fn sort_on(
    a: &mut [u64],
    b: &mut [u64],
    passes: &[(u32, &DigitCounts)],
    parts: usize,
    rows: Option<(&mut [u32], u32)>,
    (split_min, run_split_min): (usize, usize),
) -> (bool, bool) {
    match passes.split_last() {
        Some((&top, lower)) if !lower.is_empty() && a.len() >= split_min => {
            let lower: Vec<u32> = lower.iter().map(|&(shift, _)| shift).collect();
            split_then_sort(a, b, top, &lower, parts, rows, run_split_min)
        }
        _ => lsd(a, b, passes, parts, rows),
    }
}

/// The counts of each digit at `shifts` in `keys`, in each of `parts`
/// (as [`scatter`] cuts them) and over all.
fn count_digits(keys: &[u64], shifts: &[u32], parts: usize) -> Vec<DigitCounts> {
    let count_all = |part: &[u64]| -> Vec<Counts> {
        let mut counts: Vec<Counts> = shifts.iter().map(|_| no_counts()).collect();
        for &k in part {
            for (c, &shift) in counts.iter_mut().zip(shifts) {
                c[digit(k, shift)] += 1;
            }
        }
        counts
    };
    if parts <= 1 {
        return count_all(keys)
            .into_iter()
            .map(|all| DigitCounts {
                each: Vec::new(),
                all,
            })
            .collect();
    }
    // Each part's counts of every digit, turned into every digit's counts
    // in each part.
    let mut by_part: Vec<std::vec::IntoIter<Counts>> = keys
        .par_chunks(keys.len().div_ceil(parts))
        .map(count_all)
        .collect::<Vec<_>>()
        .into_iter()
        .map(Vec::into_iter)
        .collect();
    shifts
        .iter()
        .map(|_| {
            let each: Vec<Counts> = by_part.iter_mut().filter_map(Iterator::next).collect();
            let mut all = no_counts();
            for part in &each {
                for (x, y) in all.iter_mut().zip(part.iter()) {
                    *x += y;
                }
            }
            DigitCounts { each, all }
        })
        .collect()
}

/// The counts of the digit at `shift` in each part of `keys`, counted
/// afresh (after a pass has moved them).
fn part_counts(keys: &[u64], shift: u32, parts: usize) -> Vec<Counts> {
    keys.par_chunks(keys.len().div_ceil(parts))
        .map(|part| {
            let mut c = no_counts();
            for &k in part {
                c[digit(k, shift)] += 1;
            }
            c
        })
        .collect()
}

/// Least significant digit first: one pass per `passes` (each digit's
/// shift and counts in `a` as it lies, in `parts`), from `a` to `b` and
/// back, the last one to `rows` if given. Returns whether it wrote the
/// rows, and whether the keys ended in `b`.
fn lsd(
    a: &mut [u64],
    b: &mut [u64],
    passes: &[(u32, &DigitCounts)],
    parts: usize,
    rows: Option<(&mut [u32], u32)>,
) -> (bool, bool) {
    let size = a.len().div_ceil(parts.max(1));
    let (mut src, mut dst) = (a, b);
    let mut in_b = false;
    let mut rows = rows;
    for (p, &(shift, counted)) in passes.iter().enumerate() {
        // The first pass moves the keys as they were counted, and one part's
        // counts are all the keys' however they lie; other parts' counts
        // change with each pass.
        let recounted;
        let counts = if p == 0 || parts <= 1 {
            counted.each()
        } else {
            recounted = part_counts(src, shift, parts);
            &recounted
        };
        if p + 1 == passes.len()
            && let Some((rows, mask)) = rows.take()
        {
            scatter(src, size, counts, shift, rows, |k| (k as u32) ^ mask);
            return (true, in_b);
        }
        scatter(src, size, counts, shift, dst, |k| k);
        std::mem::swap(&mut src, &mut dst);
        in_b = !in_b;
    }
    (false, in_b)
}

/// Most significant digit first: `a` to `b` on the digit at `top` (whose
/// counts in `a` as it lies, in `parts`, are `counted`), then each run of
/// one value of it sorted on the `lower` digits by itself, and left in
/// `b`, or written to `rows`. A run of `run_split_min` keys or more is split the same way
/// again. Returns (whether it wrote the rows, `true`: the keys are in `b`).
fn split_then_sort(
    a: &mut [u64],
    b: &mut [u64],
    (top, counted): (u32, &DigitCounts),
    lower: &[u32],
    parts: usize,
    rows: Option<(&mut [u32], u32)>,
    run_split_min: usize,
) -> (bool, bool) {
    let size = a.len().div_ceil(parts.max(1));
    scatter(a, size, counted.each(), top, b, |k| k);
    // One run per value of the top digit: its keys (now in `b`), the same
    // stretch of `a` to move them through, and of the rows.
    let written = rows.is_some();
    let mask = rows.as_ref().map_or(0, |(_, mask)| *mask);
    let mut runs: Vec<Run<'_>> = Vec::new();
    let (mut rest_b, mut rest_a) = (b, a);
    let mut rest_rows = rows.map(|(rows, _)| rows);
    for &len in counted.all.iter().filter(|&&len| len > 0) {
        let (run_b, tail_b) = std::mem::take(&mut rest_b).split_at_mut(len);
        let (run_a, tail_a) = std::mem::take(&mut rest_a).split_at_mut(len);
        let run_rows = rest_rows.take().map(|r| {
            let (run, tail) = r.split_at_mut(len);
            rest_rows = Some(tail);
            run
        });
        runs.push((run_b, run_a, run_rows));
        rest_b = tail_b;
        rest_a = tail_a;
    }
    let sort_run = |(run_b, run_a, run_rows): Run<'_>| {
        let counts = count_digits(run_b, lower, 1);
        let passes = varying(lower, &counts, run_b.len());
        if passes.is_empty() {
            // A run no pass moves is in order already.
            if let Some(run_rows) = run_rows {
                for (r, &k) in run_rows.iter_mut().zip(run_b.iter()) {
                    *r = (k as u32) ^ mask;
                }
            }
            return;
        }
        let rows = run_rows.map(|r| (r, mask));
        // (A run still too large for the caches is split again.)
        let splits = (run_split_min, run_split_min);
        let (_, in_a) = sort_on(run_b, run_a, &passes, 1, rows, splits);
        if !written && in_a {
            run_b.copy_from_slice(run_a);
        }
    };
    if parts > 1 {
        runs.into_par_iter().for_each(sort_run);
    } else {
        runs.into_iter().for_each(sort_run);
    }
    (written, true)
}

/// One run of [`split_then_sort`]: its keys, the stretch to move them
/// through, and its rows.
type Run<'a> = (&'a mut [u64], &'a mut [u64], Option<&'a mut [u32]>);

/// The value of the digit of `k` at bit `shift`.
fn digit(k: u64, shift: u32) -> usize {
    ((k >> shift) as usize) & (PLACES - 1)
}

/// One pass of the radix sort: `keys` (in parts of `size`, whose counts
/// of each value of the digit at `shift` are `counts`) to their places in
/// `dst`, as `f` makes them. Each part's keys go to their own stretch of
/// each value's place, after the stretches of the parts before it.
fn scatter<T: Send>(
    keys: &[u64],
    size: usize,
    counts: &[Counts],
    shift: u32,
    dst: &mut [T],
    f: impl Fn(u64) -> T + Sync,
) {
    // Each part's stretch of each value's place, in the order of the output.
    let mut outs: Vec<Vec<&mut [T]>> = counts.iter().map(|_| Vec::with_capacity(PLACES)).collect();
    let mut rest: &mut [T] = dst;
    for d in 0..PLACES {
        for (out, c) in outs.iter_mut().zip(counts) {
            let (stretch, tail) = std::mem::take(&mut rest).split_at_mut(c[d]);
            out.push(stretch);
            rest = tail;
        }
    }
    let one = |(part, mut out): (&[u64], Vec<&mut [T]>)| {
        let mut at = vec![0usize; PLACES];
        for &k in part {
            let d = digit(k, shift);
            out[d][at[d]] = f(k);
            at[d] += 1;
        }
    };
    if counts.len() == 1 {
        keys.chunks(size).zip(outs).for_each(one);
    } else {
        keys.par_chunks(size).zip(outs).for_each(one);
    }
}

/// An order-preserving integer for a non-negative float, below
/// `u32::MAX`; `None` for NaN (not recorded).
fn float_key(x: f32) -> Option<u32> {
    // Non-negative floats order like their bit patterns.
    (!x.is_nan()).then(|| x.max(0.0).to_bits().min(u32::MAX - 1))
}

/// The lines of the list (into `items`, whose allocation is reused): pairs,
/// or case headers with their pairs.
pub fn build_items(
    index: &RunIndex,
    view: &mut Vec<u32>,
    grouped: bool,
    folded: &HashSet<Sym>,
    items: &mut Vec<Item>,
) {
    items.clear();
    if !grouped {
        items.extend(view.iter().map(|&r| Item::Pair(r)));
        return;
    }
    // Cases in the order they first appear in the sorted view.
    let mut order: Vec<Sym> = Vec::new();
    let mut members: HashMap<Sym, Vec<u32>> = HashMap::new();
    for &r in view.iter() {
        let case = index.rows[r as usize].case;
        members
            .entry(case)
            .or_insert_with(|| {
                order.push(case);
                Vec::new()
            })
            .push(r);
    }
    let mut new_view = Vec::with_capacity(view.len());
    items.reserve(view.len() + order.len());
    for case in order {
        let rows = members.remove(&case).unwrap_or_default();
        let failures = rows
            .iter()
            .filter(|&&r| index.rows[r as usize].status().is_failure())
            .count();
        let is_folded = folded.contains(&case);
        // (A view holds at most one of each of the u32 row numbers.)
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        items.push(Item::Case {
            case,
            start: count(new_view.len()),
            len: count(rows.len()),
            failures: count(failures),
            folded: is_folded,
        });
        if !is_folded {
            items.extend(rows.iter().map(|&r| Item::Pair(r)));
        }
        new_view.extend(rows);
    }
    *view = new_view;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::annotations::AnnotationStore;
    use crate::core::load::batch::Batch;
    use crate::core::row::{PairRow, Pos, RowLabels};
    use std::cmp::Ordering;

    use crate::core::index::sample::sample;

    /// `n` rows cloned from the sample with shuffled case names, repeated
    /// and missing numbers, so every key has ties and "not recorded" values.
    /// An empty store in a temporary folder (kept while the folder is).
    fn scratch_store() -> (tempfile::TempDir, AnnotationStore) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store =
            AnnotationStore::open(&dir.path().join("j.triage.jsonl"), "tester").expect("journal");
        (dir, store)
    }

    fn synthetic(n: usize) -> RunIndex {
        let base = sample();
        let mut strings: Vec<Box<str>> = base.strings().to_vec();
        let first_case = strings.len() as Sym;
        let cases = n.div_ceil(7);
        // Interned out of byte order: id order is not name order.
        strings.extend((0..cases).map(|i| format!("case-{:07}", (i * 7919) % cases).into()));
        let (rows, labels): (Vec<PairRow>, Vec<RowLabels>) = (0..n)
            .map(|i| {
                let mut r = base.rows[i % base.rows.len()];
                let mut l = base.labels(i % base.rows.len());
                r.case = first_case + (i / 7) as Sym;
                // A place of its own, for a key of its own.
                r.pos = Pos::new(0, i as u64 * 4096);
                r.dp = match i % 11 {
                    0 => f32::NAN,
                    k => (k as f32 - 5.0) / 20.0,
                };
                r.margin = if i % 13 == 0 {
                    f32::NAN
                } else {
                    ((i * 31) % 17) as f32 / 100.0
                };
                if i % 17 == 0 {
                    l.transformation = NO_SYM;
                }
                (r, l)
            })
            .unzip();
        let mut index = RunIndex::default();
        index.apply(Batch {
            strings,
            rows,
            labels,
            ..Batch::default()
        });
        index
    }

    /// The order the list must show, by comparing the values themselves.
    fn reference(index: &RunIndex, view: &[u32], sort: Sort) -> Vec<u32> {
        let missing = |i: u32| {
            let r = &index.rows[i as usize];
            match sort.key {
                SortKey::Drift => r.dp.is_nan(),
                SortKey::Margin => r.margin.is_nan(),
                SortKey::Route => r.source_route().is_none() || r.variant_route().is_none(),
                SortKey::Transformation => index.transformation(i as usize) == NO_SYM,
                _ => false,
            }
        };
        let cmp = |a: &u32, b: &u32| -> Ordering {
            let (x, y) = (&index.rows[*a as usize], &index.rows[*b as usize]);
            let by = match (missing(*a), missing(*b)) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => match sort.key {
                    SortKey::File | SortKey::Category => Ordering::Equal,
                    SortKey::Status => (x.status() as u8).cmp(&(y.status() as u8)),
                    SortKey::Case => index.str(x.case).cmp(index.str(y.case)),
                    SortKey::Variant => index.str(x.variant).cmp(index.str(y.variant)),
                    SortKey::Transformation => {
                        let t = |i: u32| index.str(index.transformation(i as usize));
                        t(*a).cmp(t(*b))
                    }
                    SortKey::Route => {
                        let ranks = |r: &PairRow| {
                            (
                                r.source_route().map(|s| s.rank()),
                                r.variant_route().map(|v| v.rank()),
                            )
                        };
                        ranks(x).cmp(&ranks(y))
                    }
                    SortKey::Drift => x.dp.abs().total_cmp(&y.dp.abs()),
                    SortKey::Margin => x.margin.total_cmp(&y.margin),
                },
            };
            by.then(a.cmp(b))
        };
        let mut out = view.to_vec();
        out.sort_by(cmp);
        if sort.descending {
            out.reverse();
            let m = out.iter().take_while(|&&r| missing(r)).count();
            out.rotate_left(m);
        }
        out
    }

    #[test]
    fn sorts_match_comparing_the_values_on_small_and_parallel_views() {
        let (_dir, store) = scratch_store();
        // Above PAR_MIN the keys are built and sorted on every core; from
        // SPLIT_MIN, the most significant digit first.
        for n in [500, PAR_MIN * 2 + 3, SPLIT_MIN * 2 + 5] {
            let index = synthetic(n);
            let mut ranks = SortCache::default();
            // Every other row, out of order (a view sorted before) and in file order.
            let shuffled: Vec<u32> = (0..n as u32).rev().step_by(2).collect();
            let mut in_order = shuffled.clone();
            in_order.reverse();
            // (At the largest size, the keys of more than one digit.)
            let keys: &[SortKey] = if n > SPLIT_MIN {
                &[SortKey::Case, SortKey::Drift]
            } else {
                &SortKey::ALL
            };
            for (view, &key) in [&shuffled, &in_order]
                .into_iter()
                .flat_map(|v| keys.iter().map(move |k| (v, k)))
            {
                if key == SortKey::Category {
                    continue;
                }
                for descending in [false, true] {
                    let sort = Sort { key, descending };
                    let mut got = view.clone();
                    sort_rows_with(&mut ranks, &index, &store, &mut got, sort);
                    assert_eq!(got, reference(&index, view, sort), "{n} rows, {sort:?}");
                }
            }
        }
    }

    #[test]
    fn a_cache_kept_between_sorts_of_views_of_any_size_sorts_each_alike() {
        let (_dir, store) = scratch_store();
        let n = PAR_MIN * 2 + 3;
        let index = synthetic(n);
        let all: Vec<u32> = (0..n as u32).collect();
        let few: Vec<u32> = (0..n as u32).rev().step_by(997).collect();
        let most: Vec<u32> = (0..n as u32).filter(|r| r % 3 != 0).collect();
        // The buffers grow, shrink and grow again, holding the last sort's keys.
        let mut cache = SortCache::default();
        for (view, key, descending) in [
            (&all, SortKey::Drift, false),
            (&few, SortKey::Route, true),
            (&most, SortKey::Case, false),
            (&few, SortKey::Margin, false),
            (&all, SortKey::Transformation, true),
            (&most, SortKey::Status, true),
        ] {
            let sort = Sort { key, descending };
            let mut got = view.clone();
            sort_rows_with(&mut cache, &index, &store, &mut got, sort);
            assert_eq!(
                got,
                reference(&index, view, sort),
                "{} rows, {sort:?}",
                view.len()
            );
        }
    }

    #[test]
    fn a_warmed_cache_sorts_as_a_cold_one_with_the_buffers_the_warmup_made() {
        let (_dir, store) = scratch_store();
        let n = PAR_MIN * 2 + 3;
        let index = synthetic(n);
        let all: Vec<u32> = (0..n as u32).collect();
        let strings = index.strings().clone();
        let warmup = std::thread::spawn(move || SortWarmup::make_aside(&strings, n))
            .join()
            .expect("the warm-up");
        assert_eq!(warmup.ranks.rank, index.strings().ranks());
        assert!(warmup.keys.capacity() >= n && warmup.spare.capacity() >= n);
        let mut cache = SortCache::default();
        cache.warm(warmup);
        assert!(cache.is_ranked());
        let (keys, spare) = (cache.keys.as_ptr(), cache.spare.as_ptr());
        for key in [SortKey::Case, SortKey::Variant, SortKey::Drift] {
            for descending in [false, true] {
                let sort = Sort { key, descending };
                let mut got = all.clone();
                sort_rows_with(&mut cache, &index, &store, &mut got, sort);
                assert_eq!(got, reference(&index, &all, sort), "{sort:?}");
            }
        }
        // (The buffers may have swapped roles, never been made again.)
        let now = [cache.keys.as_ptr(), cache.spare.as_ptr()];
        assert!(now.contains(&keys) && now.contains(&spare));

        // A cache that a sort ranked already keeps its own ranks, and
        // larger buffers than a warm-up's.
        let mut sorted = SortCache::default();
        sort_rows_with(
            &mut sorted,
            &index,
            &store,
            &mut all.clone(),
            Sort {
                key: SortKey::Case,
                descending: false,
            },
        );
        let ranks = sorted.ranks.rank.as_ptr();
        sorted.warm(SortWarmup::make(index.strings(), 10));
        assert_eq!(sorted.ranks.rank.as_ptr(), ranks);
        assert!(sorted.keys.capacity() >= n);
    }

    /// The rows (low halves, turned over) of `keys` sorted from `from_bit`
    /// in `parts`, as a descending sort reads them back.
    fn rows_of(mut keys: Vec<u64>, from_bit: u32, parts: usize, split_min: usize) -> Vec<u32> {
        let mut rows = vec![7u32; keys.len()];
        let written = radix_sort_in(
            &mut keys,
            &mut Vec::new(),
            from_bit,
            parts,
            Some((&mut rows, u32::MAX)),
            split_min,
        );
        if !written {
            // No pass moved a key: the keys are in their order already.
            rows = keys.iter().map(|&k| !(k as u32)).collect();
        }
        rows
    }

    /// The two lowest bits of each digit sorted from `from_bit`.
    fn two_bits_a_digit(from_bit: u32) -> u64 {
        (from_bit..64)
            .step_by(DIGIT_BITS as usize)
            .map(|shift| 3u64 << shift)
            .sum()
    }

    /// `keys` sorted from `from_bit` give `want`, and their rows its rows
    /// turned over: in one part and in parts as on several cores, least
    /// significant digit first throughout or split on the most
    /// significant first (from two keys on, or a few hundred).
    fn sorts_in_every_way(
        keys: &[u64],
        from_bit: u32,
        want: &[u64],
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let splits = |p| [(p, usize::MAX), (p, 2), (p, 300)];
        for (parts, split_min) in [1, 2, 3, 7].into_iter().flat_map(splits) {
            let mut got = keys.to_vec();
            proptest::prop_assert!(!radix_sort_in(
                &mut got,
                &mut Vec::new(),
                from_bit,
                parts,
                None,
                split_min
            ));
            proptest::prop_assert_eq!(&got, want, "{} parts, split from {}", parts, split_min);
            // The last pass writes the rows out instead, turned over.
            proptest::prop_assert_eq!(
                rows_of(keys.to_vec(), from_bit, parts, split_min),
                want.iter().map(|&k| !(k as u32)).collect::<Vec<_>>(),
                "{} parts, split from {}, rows",
                parts,
                split_min
            );
        }
        Ok(())
    }

    proptest::proptest! {
        #[test]
        fn radix_sort_sorts_like_the_standard_sort(
            mut keys in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..600),
            shape in 0..3u8,
        ) {
            match shape {
                // Few distinct bytes: most passes are skipped.
                1 => keys.iter_mut().for_each(|k| *k &= 0x0300_0000_0000_00ff),
                // Every digit varies a little: long runs, split again and again.
                2 => keys.iter_mut().for_each(|k| *k &= two_bits_a_digit(0)),
                _ => {}
            }
            let mut want = keys.clone();
            want.sort_unstable();
            sorts_in_every_way(&keys, 0, &want)?;
            radix_sort(&mut keys, &mut vec![7; 3], 0, None);
            proptest::prop_assert_eq!(keys, want);
        }

        #[test]
        fn radix_sort_on_the_high_half_is_stable(
            mut keys in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..600),
            shape in 0..3u8,
        ) {
            match shape {
                // Many keys equal in their high half.
                1 => keys.iter_mut().for_each(|k| *k &= 0x0000_0301_ffff_ffff),
                // Every digit of the high half varies a little.
                2 => keys.iter_mut().for_each(|k| *k &= two_bits_a_digit(32) | 0xffff_ffff),
                _ => {}
            }
            let mut want = keys.clone();
            want.sort_by_key(|k| k >> 32);
            sorts_in_every_way(&keys, 32, &want)?;
            radix_sort(&mut keys, &mut vec![7; 900], 32, None);
            proptest::prop_assert_eq!(keys, want);
        }
    }

    #[test]
    fn ranks_follow_new_strings() {
        let (_dir, store) = scratch_store();
        let mut index = synthetic(50);
        let mut ranks = SortCache::default();
        let mut view: Vec<u32> = (0..50).collect();
        let by_case = Sort {
            key: SortKey::Case,
            descending: false,
        };
        sort_rows_with(&mut ranks, &index, &store, &mut view, by_case);
        // A later batch brings a case name that sorts before every other.
        let first = index.rows[0];
        let sym = index.strings().len() as Sym;
        index.apply(Batch {
            strings: vec!["a-first-case".into()],
            rows: vec![PairRow { case: sym, ..first }],
            labels: vec![index.labels(0)],
            ..Batch::default()
        });
        view.push(50);
        sort_rows_with(&mut ranks, &index, &store, &mut view, by_case);
        assert_eq!(view[0], 50);
        assert_eq!(view, reference(&index, &view, by_case));
    }

    #[test]
    fn float_keys_order_below_the_top_and_nan_is_not_recorded() {
        let mut v = [0.3f32, f32::INFINITY, 0.0, 0.12, 1.5];
        v.sort_by_key(|x| float_key(*x));
        assert_eq!(v, [0.0, 0.12, 0.3, 1.5, f32::INFINITY]);
        assert!(
            v.iter()
                .all(|x| float_key(*x).is_some_and(|k| k < u32::MAX))
        );
        assert_eq!(float_key(f32::NAN), None);
    }

    #[test]
    fn cycle_visits_every_key() {
        let mut k = SortKey::File;
        for _ in 0..SortKey::ALL.len() {
            k = k.next();
        }
        assert_eq!(k, SortKey::File);
    }
}
