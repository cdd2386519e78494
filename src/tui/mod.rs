//! The terminal user interface.
//!
//! - [`action`]: the user's vocabulary; [`keymap`]: keys to actions per mode.
//! - [`app`]: plain state and `update`; [`effects`]: the I/O that `update` asks for.
//! - [`doc`]: a pair's detail as styled lines; [`note`]: the note editor.
//! - [`ui`]: rendering; [`style`]: the theme and the inert-text path.
//! - [`run`]: the event loop; [`term`]: terminal set-up and restoration.
//! - [`svg`]: screenshots of a rendered buffer.

pub mod action;
pub mod app;
pub mod doc;
pub mod effects;
pub mod input;
pub mod keymap;
pub mod listing;
pub mod note;
pub mod run;
pub mod style;
pub mod svg;
pub mod term;
pub mod testing;
pub mod ui;
