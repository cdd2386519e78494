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

/// What waiting for input found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Bytes are ready (or a signal interrupted the wait): ask crossterm.
    Ready,
    Timeout,
    /// The terminal is gone (the SSH session or window closed).
    HungUp,
}

/// The descriptor keys arrive on: stdin when it is a terminal, else /dev/tty.
pub struct InputFd {
    fd: i32,
    _tty: Option<std::fs::File>,
}

impl InputFd {
    /// Find the terminal input, as crossterm does.
    pub fn open() -> io::Result<InputFd> {
        // SAFETY: isatty only inspects the descriptor.
        if unsafe { libc::isatty(libc::STDIN_FILENO) } == 1 {
            return Ok(InputFd {
                fd: libc::STDIN_FILENO,
                _tty: None,
            });
        }
        let tty = std::fs::File::open("/dev/tty")?;
        use std::os::fd::AsRawFd;
        Ok(InputFd {
            fd: tty.as_raw_fd(),
            _tty: Some(tty),
        })
    }

    /// Wait up to `timeout` for input. A hung-up terminal reads as end of
    /// file forever, and crossterm would spin on it, so it is caught here
    /// before crossterm is asked.
    pub fn wait(&self, timeout: std::time::Duration) -> Input {
        let mut p = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one pollfd that we own, for the duration of the call.
        let n = unsafe { libc::poll(&mut p, 1, ms) };
        if n < 0 {
            // EINTR: a signal (a resize, a TERM) — let the caller look.
            return Input::Ready;
        }
        if p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            return Input::HungUp;
        }
        if n == 0 { Input::Timeout } else { Input::Ready }
    }

    /// Whether the terminal is gone, without waiting.
    pub fn hung_up(&self) -> bool {
        self.wait(std::time::Duration::ZERO) == Input::HungUp
    }
}

/// A last line of defence: if the loop cannot leave (a signal arrived or the
/// terminal hung up, and nothing happened for two seconds), exit the process.
/// Every decision shown as saved is already on disk, so nothing is lost.
pub fn spawn_watchdog(signals: Signals) {
    let _ = std::thread::Builder::new()
        .name("triage-watchdog".into())
        .spawn(move || {
            let tty = InputFd::open().ok();
            let mut bad_since: Option<std::time::Instant> = None;
            loop {
                std::thread::sleep(std::time::Duration::from_millis(250));
                let sig = signals.pending();
                let hung = tty.as_ref().is_some_and(|t| t.hung_up());
                if sig.is_none() && !hung {
                    bad_since = None;
                    continue;
                }
                let since = *bad_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() > std::time::Duration::from_secs(2) {
                    leave();
                    let code = sig.unwrap_or(signal_hook::consts::SIGHUP);
                    std::process::exit(128 + code);
                }
            }
        });
}

/// Leave the terminal, stop until `fg`, and come back.
pub fn suspend(term: &mut Tui) -> io::Result<()> {
    leave();
    signal_hook::low_level::raise(signal_hook::consts::SIGTSTP)?;
    *term = enter()?;
    term.clear()?;
    Ok(())
}
