//! The values a group keeps for its medians, maxima and percentiles.
//!
//! A summary counts its rows in chunks on every core, each thread into its
//! own groups, then adds the groups up. The values kept for the medians
//! (|Δp|, |Δc|, latencies; four bytes each) are a multiset: their order
//! means nothing. Adding two groups up therefore moves the other's parts
//! in rather than copying them into one vector, and a rank is selected
//! across the parts by the values' bits, a digit at a time (a radix
//! select: a few reads of the values, no writes), rather than by
//! partitioning one vector in place. At ten million pairs the summary
//! screen's count took fresh memory for 255,000 pages (a gigabyte) with
//! the copies and for 121,000 without them. A small group is still copied
//! and partitioned, which is quicker for a few values.
//!
//! The whole run's values are not kept a second time: every pair is in
//! one group of each grouping, so the whole's medians are selected from
//! one grouping's groups' values read together ([`Values::union`]).

/// Values kept as bits that order as the values do (see
/// [`magnitude`](super::magnitude) and [`latency_bits`](super::latency_bits)),
/// in the parts they were counted into.
#[derive(Debug, Default)]
pub(super) struct Kept {
    parts: Vec<Vec<u32>>,
}

/// Sets of fewer values are copied and partitioned to select a rank (in
/// tests a few, so that the digits' path is tested on small sets too).
const COPIED_BELOW: usize = if cfg!(test) { 8 } else { 1 << 14 };

/// The digits of a select, most significant first: (shift, width in bits).
const DIGITS: [(u32, u32); 3] = [(21, WIDEST), (10, WIDEST), (0, 10)];

/// The widest digit, in bits: a count for each of its values fits the
/// stack (16 KiB).
const WIDEST: u32 = 11;

impl Kept {
    pub(super) fn push(&mut self, x: u32) {
        match self.parts.last_mut() {
            Some(part) => part.push(x),
            None => self.parts.push(vec![x]),
        }
    }

    /// Keep `x` if there is one.
    pub(super) fn extend(&mut self, x: Option<u32>) {
        if let Some(x) = x {
            self.push(x);
        }
    }

    /// Keep `other`'s values too, moved in, not copied.
    pub(super) fn append(&mut self, other: Kept) {
        self.parts
            .extend(other.parts.into_iter().filter(|p| !p.is_empty()));
    }

    /// The values, to select from.
    pub(super) fn view(&self) -> Values<'_> {
        Values::union([self])
    }
}

/// The values of one or more [`Kept`]s, read together: a group's own, or
/// the whole's, which are every group's of one grouping (each pair is in
/// one group of it), so that the whole keeps none of its own.
#[derive(Debug, Default)]
pub(super) struct Values<'a> {
    parts: Vec<&'a [u32]>,
    /// How many values the parts hold (counted once: the whole's are read
    /// from as many parts as a grouping has groups).
    len: usize,
}

impl<'a> Values<'a> {
    /// The values of every one of `kept`.
    pub(super) fn union(kept: impl IntoIterator<Item = &'a Kept>) -> Values<'a> {
        let parts: Vec<&[u32]> = kept
            .into_iter()
            .flat_map(|k| k.parts.iter().map(Vec::as_slice))
            .collect();
        let len = parts.iter().map(|p| p.len()).sum();
        Values { parts, len }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    fn values(&self) -> impl Iterator<Item = u32> + '_ {
        self.parts.iter().copied().flatten().copied()
    }

    pub(super) fn max(&self) -> Option<u32> {
        self.values().max()
    }

    /// The value of rank `k` (counted from 0) among the values in
    /// ascending order; `None` past the last.
    pub(super) fn select(&self, k: usize) -> Option<u32> {
        let n = self.len();
        if k >= n {
            return None;
        }
        if n < COPIED_BELOW {
            let mut v: Vec<u32> = self.values().collect();
            return Some(*v.select_nth_unstable(k).1);
        }
        Some(self.select_from(Prefix::NONE, k, &DIGITS))
    }

    /// The value of rank `k` among the values that share `prefix`, found
    /// a digit at a time on `digits` (the ones `prefix` does not fix).
    fn select_from(&self, mut prefix: Prefix, mut k: usize, digits: &[(u32, u32)]) -> u32 {
        for &(shift, width) in digits {
            let counts = self.digit_counts(prefix, shift, width);
            let (digit, rank) = place(&counts, k);
            prefix = prefix.with(digit, shift, width);
            k = rank;
        }
        prefix.bits
    }

    /// How many of the values that share `prefix` have each value of the
    /// digit at `shift`, `width` bits wide.
    fn digit_counts(&self, prefix: Prefix, shift: u32, width: u32) -> [usize; 1 << WIDEST] {
        let mask = (1u32 << width) - 1;
        let mut counts = [0usize; 1 << WIDEST];
        for part in &self.parts {
            for &x in *part {
                if x & prefix.fixed == prefix.bits {
                    counts[((x >> shift) & mask) as usize] += 1;
                }
            }
        }
        counts
    }

    /// The two middle values (the same one twice for an odd count), for a
    /// median; `None` when there are none. A small set is copied and
    /// partitioned once for both.
    pub(super) fn middles(&self) -> Option<(u32, u32)> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        let mid = n / 2;
        if n >= COPIED_BELOW {
            // (One rank twice for an odd count.)
            return Some(self.two_ranks((n - 1) / 2, mid));
        }
        let mut v: Vec<u32> = self.values().collect();
        let (below, &mut upper, _) = v.select_nth_unstable(mid);
        let lower = match n % 2 {
            1 => upper,
            _ => below.iter().copied().max().unwrap_or(upper),
        };
        Some((lower, upper))
    }

    /// The values of ranks `lower` ≤ `upper` (below the count), selected
    /// together while they share their digits, as a median's two middles
    /// do but where they straddle a gap: one set of reads for both, not two.
    fn two_ranks(&self, lower: usize, upper: usize) -> (u32, u32) {
        let (mut prefix, mut lower, mut upper) = (Prefix::NONE, lower, upper);
        for (i, &(shift, width)) in DIGITS.iter().enumerate() {
            let counts = self.digit_counts(prefix, shift, width);
            let (low_digit, low_rank) = place(&counts, lower);
            let (high_digit, high_rank) = place(&counts, upper);
            if low_digit != high_digit {
                // They part here: each finished on the digits below by
                // itself (none when this digit is the last).
                let rest = &DIGITS[i + 1..];
                return (
                    self.select_from(prefix.with(low_digit, shift, width), low_rank, rest),
                    self.select_from(prefix.with(high_digit, shift, width), high_rank, rest),
                );
            }
            prefix = prefix.with(low_digit, shift, width);
            (lower, upper) = (low_rank, high_rank);
        }
        (prefix.bits, prefix.bits)
    }

    /// The nearest-rank `pct`th percentile (1 ≤ pct ≤ 100): the value at
    /// rank ⌈pct · n / 100⌉ of the sorted values, counted from 1. None when
    /// there are none.
    pub(super) fn nearest_rank(&self, pct: u64) -> Option<u32> {
        let n = self.len() as u64;
        if n == 0 {
            return None;
        }
        let rank = (pct * n).div_ceil(100).clamp(1, n);
        self.select((rank - 1) as usize)
    }

    /// Whether there are more values than are copied to select, so that
    /// selecting is worth a thread of its own.
    pub(super) fn is_large(&self) -> bool {
        self.len() >= COPIED_BELOW
    }
}

/// The digits a select has fixed so far: `bits` under the mask `fixed`.
#[derive(Debug, Clone, Copy)]
struct Prefix {
    bits: u32,
    fixed: u32,
}

impl Prefix {
    /// No digit fixed: every value shares it.
    const NONE: Prefix = Prefix { bits: 0, fixed: 0 };

    /// This prefix with the digit at `shift`, `width` bits wide, fixed to `digit`.
    fn with(self, digit: usize, shift: u32, width: u32) -> Prefix {
        Prefix {
            bits: self.bits | (digit as u32) << shift,
            fixed: self.fixed | ((1u32 << width) - 1) << shift,
        }
    }
}

/// The digit that rank `k` falls in, given each digit's count of values
/// (`k` below their sum), and `k`'s rank among that digit's values.
fn place(counts: &[usize], mut k: usize) -> (usize, usize) {
    let mut digit = 0;
    while k >= counts[digit] {
        k -= counts[digit];
        digit += 1;
    }
    (digit, k)
}

impl From<Vec<u32>> for Kept {
    fn from(v: Vec<u32>) -> Kept {
        Kept { parts: vec![v] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Values in parts as a group added up from several threads holds them.
    fn kept(parts: &[Vec<u32>]) -> Kept {
        let mut k = Kept::default();
        for p in parts {
            k.append(Kept::from(p.clone()));
        }
        k
    }

    proptest! {
        /// Every rank selects what sorting every part's values together
        /// gives, whether copied (few values) or by digits (more), with
        /// values that share their high digits, repeat, or use every bit.
        #[test]
        fn a_rank_selects_as_sorting_the_parts_together_does(
            parts in proptest::collection::vec(
                proptest::collection::vec(
                    prop_oneof![
                        any::<u32>(),
                        0u32..4,
                        (0u32..4).prop_map(|d| 0x3f80_0000 | d << 10),
                        proptest::sample::select(vec![0u32, u32::MAX, 1 << 21, (1 << 21) - 1, 1 << 10]),
                    ],
                    0..30,
                ),
                0..5,
            ),
        ) {
            let owned = kept(&parts);
            let k = owned.view();
            let mut sorted: Vec<u32> = parts.iter().flatten().copied().collect();
            sorted.sort_unstable();
            prop_assert_eq!(k.len(), sorted.len());
            for (rank, want) in sorted.iter().enumerate() {
                prop_assert_eq!(k.select(rank), Some(*want), "rank {}", rank);
            }
            prop_assert_eq!(k.select(sorted.len()), None);
            prop_assert_eq!(k.max(), sorted.last().copied());
            // The two middles, together: the same twice for an odd count.
            let n = sorted.len();
            let middles = (n > 0).then(|| (sorted[(n - 1) / 2], sorted[n / 2]));
            prop_assert_eq!(k.middles(), middles);
            // The parts kept apart, each its own `Kept`, read together.
            let apart: Vec<Kept> = parts.iter().map(|p| Kept::from(p.clone())).collect();
            let union = Values::union(&apart);
            prop_assert_eq!(union.len(), sorted.len());
            for (rank, want) in sorted.iter().enumerate() {
                prop_assert_eq!(union.select(rank), Some(*want), "rank {} of the union", rank);
            }
            prop_assert_eq!(union.max(), sorted.last().copied());
        }
    }

    /// Pushing after parts were moved in keeps every value; an empty part
    /// moved in adds none.
    #[test]
    fn pushes_and_parts_moved_in_are_all_kept() {
        let mut k = Kept::default();
        let none = k.view();
        assert_eq!((none.len(), none.select(0), none.max()), (0, None, None));
        k.push(5);
        k.append(Kept::from(vec![9, 1]));
        k.append(Kept::from(Vec::new()));
        k.extend(Some(3));
        k.extend(None);
        assert_eq!(k.parts.len(), 2);
        let k = k.view();
        assert_eq!(k.len(), 4);
        let all: Vec<Option<u32>> = (0..5).map(|r| k.select(r)).collect();
        assert_eq!(all, [Some(1), Some(3), Some(5), Some(9), None]);
        // A large set, selected by digits: ten thousand values in three parts.
        let mut big = Kept::default();
        for part in 0..3u32 {
            big.append(Kept::from(
                (0..10_000 / 3 + 1)
                    .map(|i| i * 3 + part)
                    .collect::<Vec<_>>(),
            ));
        }
        let big = big.view();
        assert!(big.is_large());
        assert_eq!(big.select(0), Some(0));
        assert_eq!(big.select(5_000), Some(5_000));
        assert_eq!(
            big.nearest_rank(50),
            Some((big.len() as u32).div_ceil(2) - 1)
        );
        assert_eq!(big.nearest_rank(100), big.max());
    }
}
