//! Terminal set-up and restoration.
//!
//! The terminal is restored on every way out: a normal quit, an error, a
//! panic (with a short readable message instead of a backtrace), SIGTERM and
//! SIGHUP (the run loop watches the flags registered here), and it is left
//! and re-entered around Ctrl-Z.

use std::io::{self, Stdout, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crossterm::cursor::{Hide, Show};
use crossterm::event::{DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// The terminal type the app draws on.
pub type Tui = Terminal<CrosstermBackend<Stdout>>;

static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Enter raw mode and the alternate screen.
pub fn enter() -> io::Result<Tui> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = io::stdout();
    execute!(out, EnterAlternateScreen, EnableBracketedPaste, Hide)?;
    Terminal::new(CrosstermBackend::new(io::stdout()))
}

/// Leave the alternate screen and raw mode; safe to call twice.
pub fn leave() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    let _ = execute!(
        out,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// Restore the terminal before any panic message, and keep the message short.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        leave();
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown error".to_string());
        let loc = info
            .location()
            .map(|l| format!(" ({}:{})", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!(
            "triage stopped on an internal error: {msg}{loc}\n\
             Every decision shown as saved is on disk. Please report this message."
        );
    }));
}

/// Flags set by SIGTERM, SIGHUP and SIGINT; the loop polls them.
#[derive(Clone)]
pub struct Signals {
    pub got: Arc<AtomicUsize>,
}

impl Signals {
    /// Register the handlers.
    pub fn register() -> io::Result<Signals> {
        let got = Arc::new(AtomicUsize::new(0));
        for sig in [
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
            signal_hook::consts::SIGINT,
        ] {
            signal_hook::flag::register_usize(sig, Arc::clone(&got), sig as usize)?;
        }
        Ok(Signals { got })
    }

    /// The signal that arrived, if any.
    pub fn pending(&self) -> Option<i32> {
        match self.got.load(Ordering::SeqCst) {
            0 => None,
            n => Some(n as i32),
        }
    }
}

/// Leave the terminal, stop until `fg`, and come back.
pub fn suspend(term: &mut Tui) -> io::Result<()> {
    leave();
    signal_hook::low_level::raise(signal_hook::consts::SIGTSTP)?;
    *term = enter()?;
    term.clear()?;
    Ok(())
}
