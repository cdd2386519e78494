//! The loader: the path a line takes from a run file to a row of the index.
//!
//! Each file is one step, in the order a line meets them:
//!
//! 1. [`open`]: the input is opened: a file where it lies, gzip decompressed
//!    in the background, standard input or a pipe copied to a private file,
//!    another tool's results detected and converted into pair records.
//! 2. [`chunks`]: the loader thread reads the input in chunks, cuts each into
//!    lines and parses a chunk's lines on every core.
//! 3. [`line`](mod@line): one line is trimmed and checked as UTF-8, read by the fast
//!    path, by the slow path when the fast one declines it, and becomes a
//!    row's data or a problem.
//! 4. [`intern`]: the row's strings become ids, each distinct string kept once.
//! 5. [`batch`]: the row ([`crate::core::row`]) or the problems
//!    ([`crate::core::problem`]) join the batch that goes to the index.
//! 6. [`follow`]: after the first pass, a followed run (`-f`) is polled and
//!    its new lines take steps 3 to 5; a run file that is truncated or
//!    replaced is noticed.
//!
//! [`heap`] keeps the large blocks of a load out of the allocator's heaps.
//!
//! The index ([`crate::core::index`]) starts the loader thread and merges its
//! batches; nothing here imports it (only tests that open whole runs do).

pub mod batch;
pub mod chunks;
pub mod direct;
mod drop_behind;
pub mod fast;
pub mod follow;
pub mod heap;
pub mod intern;
pub mod line;
pub mod open;
