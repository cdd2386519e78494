//! The terminal-free core of triage.
//!
//! - [`model`]: the pair record as a run file describes it (both spellings).
//! - [`schema`]: every run-file field declared once: its slot, spellings and JSON type.
//! - [`record`]: tolerant mapping from one JSON line to a [`model::PairRecord`].
//! - [`derive`]: facts computed per pair (drift, routes, margin, validity, verdict).
//! - [`diff`]: structural JSON diff with paths, and inline word diffs.
//! - [`text`]: untrusted strings made inert before they reach any screen.
//! - [`row`]: a pair's compact row and its packing; [`problem`]: a line that
//!   could not be read.
//! - [`column`]: per-row tables stored in fixed-size chunks, without growth slack.
//! - [`load`]: the background loader, a line's path from a run file to a row;
//!   [`fast`]: its typed, borrowing fast path per line.
//! - [`index`]: the index of a run built from the loader's rows, without
//!   holding the files, and the reading of one pair's detail.
//! - [`key`]: the record key that lets annotations follow a pair across runs.
//! - [`taxonomy`] and [`suggest`]: failure categories and a suggested one per failure.
//! - [`annotations`]: the crash-safe journal of decisions; [`apply`]: a copy of a run with them.
//! - [`agreement`]: Cohen's kappa between two reviewers, with its interval.
//! - [`config`]: the user's config file (reviewer, taxonomy, theme).
//! - [`stats`]: brittleness metrics with Wilson intervals, per group, per case and per repetition.
//! - [`facets`]: counts of pairs and failures per value of a field.
//! - [`formats`]: other tools' result files (context-probe, promptfoo, Inspect AI,
//!   multivon-eval) detected from content and converted into native pair records.
//! - [`query`]: the filter language of the pair list (`status:fail family:question dp<-0.1`).
//! - [`export`]: the Markdown triage report, CSV, JSON and replay fixtures; `triage summary`.
//! - [`gate`]: the gates of `triage check`, decided on Wilson bounds.
//! - [`import`]: decisions from a CSV or JSON Lines file, matched to the run's pairs.
//!
//! Nothing here imports ratatui or crossterm; `.ci/run` checks it.

pub mod agreement;
pub mod annotations;
pub mod apply;
pub mod column;
pub mod compare;
pub mod config;
pub mod derive;
pub mod diff;
pub mod export;
pub mod facets;
pub mod formats;
pub mod gate;
pub mod import;
pub mod index;
pub mod json;
pub mod key;
pub mod load;
pub mod model;
pub mod problem;
pub mod query;
pub mod record;
pub mod row;
pub mod schema;
pub mod stats;
pub mod suggest;
pub mod taxonomy;
pub mod text;
