//! The terminal user interface.
//!
//! - [`action`]: the user's vocabulary; [`keymap`]: keys to actions per mode.
//! - [`app`]: plain state and `update`, which hands each action to the main
//!   screen or to the open overlay ([`app::overlay`]: one module per overlay,
//!   with its state, keys and drawing); [`effects`]: the I/O that `update`
//!   asks for (details, record keys, saving, exporting).
//! - [`doc`]: a pair's detail as styled lines; [`note`]: the note editor;
//!   [`input`]: one-line inputs and the fuzzy jump; [`listing`]: sorting and
//!   grouping the list.
//! - [`ui`]: rendering the main screen, then the open overlay; [`popup`]:
//!   the box, frame and key hints every overlay draws with; [`style`]: the
//!   theme and the inert-text path.
//! - [`run`]: the event loop; [`term`]: terminal set-up and restoration.
//! - [`svg`]: screenshots of a rendered buffer.
//!
//! Imports run one way: `action`, `doc`, `input`, `note`, `listing`,
//! `popup` and `style` know nothing of the app; `app` knows them; `ui` and
//! `effects` know `app`; `run` knows them all. `app` never imports `ui` or
//! `effects`.

pub mod action;
pub mod app;
pub mod doc;
pub mod effects;
pub mod input;
pub mod keymap;
pub mod listing;
pub mod note;
pub mod popup;
pub mod run;
pub mod style;
pub mod svg;
pub mod term;
pub mod testing;
pub mod ui;
