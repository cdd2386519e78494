//! triage: review the results of LLM sensitivity-test runs.
//!
//! - [`core`] is terminal-free: the run format, the tolerant loader and its
//!   background index, derived facts per pair, the structural diff, inert
//!   text, annotations and suggestions. It never imports ratatui or crossterm.
//! - [`tui`] turns keys into [`tui::action::Action`]s, updates plain state in
//!   [`tui::app`], and renders it with ratatui.
//!
//! The binary in `main.rs` parses the command line and hands over to one of them.

pub mod core;
pub mod tui;
