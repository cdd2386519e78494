//! The chunked column at its boundaries, and against a `Vec` as its model.

use proptest::prelude::*;
use rayon::prelude::*;

use super::Column;

/// Chunks of four, so that every boundary is a few pushes away.
type Small = Column<u32, 2>;

fn filled(n: u32) -> Small {
    (0..n).collect()
}

#[test]
fn an_empty_column_has_nothing_to_read() {
    let c = Small::new();
    assert!(c.is_empty());
    assert_eq!(c.len(), 0);
    assert_eq!(c.get(0), None);
    assert_eq!(c.first(), None);
    assert_eq!(c.last(), None);
    assert_eq!(c.iter().next(), None);
    assert_eq!(c.iter().next_back(), None);
    assert_eq!(c.range(0..10).len(), 0);
    assert_eq!(c.slices().count(), 0);
    assert_eq!(c.par_iter().count(), 0);
    assert_eq!(c.capacity_bytes(), 0);
}

#[test]
fn one_row() {
    let c = filled(1);
    assert_eq!((c.len(), c.get(0), c.get(1)), (1, Some(&0), None));
    assert_eq!((c.first(), c.last()), (Some(&0), Some(&0)));
    assert_eq!(c.iter().copied().collect::<Vec<_>>(), [0]);
    assert_eq!(c.iter().rev().copied().collect::<Vec<_>>(), [0]);
    assert_eq!(c.slices().collect::<Vec<_>>(), [&[0][..]]);
}

#[test]
fn a_chunk_that_ends_exactly_at_the_last_row() {
    let c = filled(4);
    assert_eq!(c.slices().count(), 1, "four rows fill one chunk, no more");
    assert_eq!(c.last(), Some(&3));
    assert_eq!(c.get(3), Some(&3));
    assert_eq!(c.get(4), None);
    assert_eq!(c.range(2..4).copied().collect::<Vec<_>>(), [2, 3]);
    assert_eq!(c.range(4..4).count(), 0);
    // Exactly N chunks: every chunk full, none empty after them.
    let c = filled(12);
    let lens: Vec<usize> = c.slices().map(<[u32]>::len).collect();
    assert_eq!(lens, [4, 4, 4]);
    assert_eq!(c.get(11), Some(&11));
    assert_eq!(c.get(12), None);
    assert_eq!(c.iter().next_back(), Some(&11));
    assert_eq!(c.capacity_bytes(), 12 * 4, "full chunks hold no slack");
}

#[test]
fn a_read_across_a_chunk_edge() {
    let c = filled(10);
    assert_eq!(c.range(3..5).copied().collect::<Vec<_>>(), [3, 4]);
    assert_eq!(
        c.range(3..9).copied().collect::<Vec<_>>(),
        [3, 4, 5, 6, 7, 8]
    );
    assert_eq!(
        c.range(3..9).rev().copied().collect::<Vec<_>>(),
        [8, 7, 6, 5, 4, 3]
    );
    assert_eq!(c.range(3..9).len(), 6);
    // From both ends at once, meeting in the middle chunk.
    let mut it = c.range(1..10);
    assert_eq!(it.next(), Some(&1));
    assert_eq!(it.next_back(), Some(&9));
    assert_eq!(it.next_back(), Some(&8));
    assert_eq!(it.len(), 6);
    assert_eq!(it.copied().collect::<Vec<_>>(), [2, 3, 4, 5, 6, 7]);
    // A range past the end is clamped.
    assert_eq!(c.range(8..100).copied().collect::<Vec<_>>(), [8, 9]);
    assert_eq!(c.range(50..100).count(), 0);
}

#[test]
fn a_push_after_a_full_chunk_starts_the_next() {
    let mut c = filled(8);
    assert_eq!(c.slices().count(), 2);
    c.push(8);
    let lens: Vec<usize> = c.slices().map(<[u32]>::len).collect();
    assert_eq!(lens, [4, 4, 1]);
    assert_eq!((c.get(8), c.last(), c.len()), (Some(&8), Some(&8), 9));
    c[8] = 80;
    assert_eq!(c[8], 80);
}

#[test]
fn slack_is_never_more_than_one_chunk() {
    let mut c = Column::<u64, 10>::new();
    for i in 0..100_000u64 {
        c.push(i);
        let used = c.len() * 8;
        assert!(
            c.capacity_bytes() - used < Column::<u64, 10>::CHUNK * 8,
            "{} bytes for {} rows",
            c.capacity_bytes(),
            c.len()
        );
    }
    assert_eq!(
        c.capacity_bytes(),
        100_000 * 8 + (1024 - 100_000 % 1024) * 8
    );
}

#[test]
fn par_iter_keeps_row_order_and_numbers() {
    let c: Column<u32, 3> = (0..1000).map(|i| i * 3).collect();
    let got: Vec<(usize, u32)> = c.par_iter().enumerate().map(|(i, &v)| (i, v)).collect();
    let want: Vec<(usize, u32)> = (0..1000).map(|i| (i as usize, i * 3)).collect();
    assert_eq!(got, want);
    let starts: Vec<usize> = c.par_slices().map(|(s, _)| s).collect();
    assert_eq!(starts, (0..125).map(|k| k * 8).collect::<Vec<_>>());
}

#[test]
fn truncate_and_resize_cross_chunk_edges() {
    let mut c = filled(10);
    c.truncate(8);
    assert_eq!((c.len(), c.last(), c.slices().count()), (8, Some(&7), 2));
    c.truncate(5);
    assert_eq!(c.to_vec(), [0, 1, 2, 3, 4]);
    c.resize(9, 7);
    assert_eq!(c.to_vec(), [0, 1, 2, 3, 4, 7, 7, 7, 7]);
    c.truncate(0);
    assert!(c.is_empty() && c.slices().count() == 0);
    c.push(5);
    assert_eq!(c.to_vec(), [5]);
}

#[test]
fn the_default_chunk_is_64_ki_rows() {
    let mut c: Column<u8> = Column::new();
    c.extend(std::iter::repeat_n(1u8, Column::<u8>::CHUNK * 2 + 1));
    let lens: Vec<usize> = c.slices().map(<[u8]>::len).collect();
    assert_eq!(lens, [65_536, 65_536, 1]);
    assert_eq!(c.get(65_535), Some(&1));
    assert_eq!(c.get(65_536), Some(&1));
}

#[derive(Debug, Clone)]
enum Op {
    Push(u32),
    Extend(Vec<u32>),
    Truncate(usize),
    Set(usize, u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => any::<u32>().prop_map(Op::Push),
        3 => prop::collection::vec(any::<u32>(), 0..20).prop_map(Op::Extend),
        1 => (0usize..40).prop_map(Op::Truncate),
        2 => (0usize..40, any::<u32>()).prop_map(|(i, v)| Op::Set(i, v)),
    ]
}

proptest! {
    /// Any sequence of appends, truncations and writes leaves the column
    /// reading exactly as a `Vec` given the same sequence.
    #[test]
    fn reads_as_a_vec_does(ops in prop::collection::vec(op(), 0..60), a in 0usize..80, b in 0usize..80) {
        let mut col = Column::<u32, 2>::new();
        let mut model: Vec<u32> = Vec::new();
        for op in ops {
            match op {
                Op::Push(v) => { col.push(v); model.push(v); }
                Op::Extend(vs) => { col.extend(vs.iter().copied()); model.extend(vs); }
                Op::Truncate(n) => { col.truncate(n); model.truncate(n); }
                Op::Set(i, v) => {
                    if let Some(x) = col.get_mut(i) { *x = v; }
                    if let Some(x) = model.get_mut(i) { *x = v; }
                }
            }
            prop_assert_eq!(col.len(), model.len());
        }
        prop_assert_eq!(col.to_vec(), model.clone());
        prop_assert_eq!(col.iter().rev().copied().collect::<Vec<_>>(),
            model.iter().rev().copied().collect::<Vec<_>>());
        for i in 0..model.len() + 5 {
            prop_assert_eq!(col.get(i), model.get(i));
        }
        prop_assert_eq!(col.first(), model.first());
        prop_assert_eq!(col.last(), model.last());
        let (lo, hi) = (a.min(b), a.max(b));
        let want: Vec<u32> = model.get(lo.min(model.len())..hi.min(model.len())).unwrap_or(&[]).to_vec();
        let got: Vec<u32> = col.range(lo..hi).copied().collect();
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(col.range(lo..hi).len(), want.len());
        let par: Vec<u32> = col.par_iter().copied().collect();
        prop_assert_eq!(par, model.clone());
        let glued: Vec<u32> = col.slices().flatten().copied().collect();
        prop_assert_eq!(glued, model.clone());
        // Every chunk but the last is full.
        let lens: Vec<usize> = col.slices().map(<[u32]>::len).collect();
        if let Some((_, full)) = lens.split_last() {
            prop_assert!(full.iter().all(|&l| l == 4));
        }
        prop_assert!(lens.iter().all(|&l| l > 0));
    }
}

#[test]
fn split_off_keeps_the_head_and_returns_the_tail() {
    let mut a = filled(6);
    let b = a.split_off(3);
    assert_eq!((a.to_vec(), b.to_vec()), (vec![0, 1, 2], vec![3, 4, 5]));
}
