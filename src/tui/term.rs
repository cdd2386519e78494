//! Terminal set-up and restoration.
//!
//! The terminal is restored on every way out: a normal quit, an error, a
//! panic (with a short readable message instead of a backtrace), every
//! signal whose default ends the process ([`ENDING`]: the run loop watches
//! the flag registered here and leaves as on `q`), an abort, allocation
//! failure included ([`Allocator`] notes it, an async-signal-safe SIGABRT
//! handler restores the terminal and says why). It is left and re-entered
//! around Ctrl-Z and an external SIGTSTP, and re-entered and redrawn after a
//! SIGSTOP it could not see, on SIGCONT.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{self, Stdout, Write};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

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

/// The terminal's descriptor (as crossterm picks it: stdin when it is a
/// terminal, else /dev/tty) and its modes before raw mode, for the abort
/// handler, which may not lock or allocate.
static TTY_FD: AtomicI32 = AtomicI32::new(-1);
static COOKED: OnceLock<libc::termios> = OnceLock::new();

/// Remember the terminal's modes before the first raw mode.
fn save_cooked_modes() {
    if COOKED.get().is_some() {
        return;
    }
    // SAFETY: isatty and open only inspect or open a descriptor; the
    // /dev/tty descriptor is kept open for the life of the process.
    let fd = unsafe {
        if libc::isatty(libc::STDIN_FILENO) == 1 {
            libc::STDIN_FILENO
        } else {
            libc::open(c"/dev/tty".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC)
        }
    };
    if fd < 0 {
        return;
    }
    // SAFETY: a zeroed termios is a valid out-parameter for tcgetattr.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: tcgetattr writes into the termios we own.
    if unsafe { libc::tcgetattr(fd, &mut t) } == 0 {
        TTY_FD.store(fd, Ordering::SeqCst);
        let _ = COOKED.set(t);
    }
}

/// What [`leave`] writes, as bytes: mouse reporting off (every mode
/// crossterm turns on), bracketed paste off, the main screen, the cursor shown.
const RESTORE: &[u8] =
    b"\x1b[?1006l\x1b[?1015l\x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[?2004l\x1b[?1049l\x1b[?25h";

/// Restore the terminal from a signal handler: only `write` and `tcsetattr`,
/// both async-signal-safe, on state prepared before the handler was set.
fn restore_from_handler() {
    if !ACTIVE.load(Ordering::SeqCst) {
        return;
    }
    // SAFETY: write of a static buffer and tcsetattr with a termios that was
    // fully written before ACTIVE was set; neither locks nor allocates.
    unsafe {
        libc::write(libc::STDOUT_FILENO, RESTORE.as_ptr().cast(), RESTORE.len());
        let fd = TTY_FD.load(Ordering::SeqCst);
        if let Some(t) = COOKED.get()
            && fd >= 0
        {
            libc::tcsetattr(fd, libc::TCSANOW, t);
        }
    }
}

/// Set when an allocation failed: the abort that follows was for memory.
static OUT_OF_MEMORY: AtomicBool = AtomicBool::new(false);

/// The system allocator, noting a failed allocation so that the abort
/// handler can say the process ran out of memory (Rust's allocation error
/// hook cannot be set on stable; a failed allocation aborts, and SIGABRT
/// can be handled). It never allocates itself.
pub struct Allocator;

// SAFETY: every call is forwarded to `System` unchanged; the only addition
// is an atomic store when it returns null.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is System's.
        noted(unsafe { System.alloc(layout) })
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        noted(unsafe { System.alloc_zeroed(layout) })
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        noted(unsafe { System.realloc(ptr, layout, new_size) })
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

fn noted(p: *mut u8) -> *mut u8 {
    if p.is_null() {
        OUT_OF_MEMORY.store(true, Ordering::SeqCst);
    }
    p
}

/// On SIGABRT (an allocation failure, or any abort): restore the terminal
/// and say what happened; the abort then goes on and ends the process.
fn install_abort_handler() -> io::Result<()> {
    let action = || {
        restore_from_handler();
        let msg: &[u8] = if OUT_OF_MEMORY.load(Ordering::SeqCst) {
            b"\r\ntriage ran out of memory and stopped. Every decision shown as saved is on disk; give it more memory or a smaller run.\r\n"
        } else {
            b"\r\ntriage was aborted. Every decision shown as saved is on disk.\r\n"
        };
        // SAFETY: write of a static buffer, async-signal-safe.
        unsafe {
            libc::write(libc::STDERR_FILENO, msg.as_ptr().cast(), msg.len());
        }
    };
    // SAFETY: the action only loads atomics, reads a OnceLock that is set
    // before the terminal becomes active, and calls write and tcsetattr.
    unsafe { signal_hook::low_level::register(signal_hook::consts::SIGABRT, action) }?;
    Ok(())
}

/// Enter raw mode and the alternate screen.
pub fn enter() -> io::Result<Tui> {
    save_cooked_modes();
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

/// The signals whose default action ends the process and that a handler
/// can catch: each ends the session as SIGTERM does (terminal restored,
/// pending decisions to the recovery file, exit 128 + signal).
pub const ENDING: &[i32] = &[
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGQUIT,
    signal_hook::consts::SIGUSR1,
    signal_hook::consts::SIGUSR2,
    signal_hook::consts::SIGALRM,
    signal_hook::consts::SIGVTALRM,
    signal_hook::consts::SIGPROF,
    signal_hook::consts::SIGPIPE,
    signal_hook::consts::SIGXCPU,
    signal_hook::consts::SIGXFSZ,
];

/// Flags set by the [`ENDING`] signals, by SIGTSTP and by SIGCONT; the loop
/// polls them.
#[derive(Clone)]
pub struct Signals {
    pub got: Arc<AtomicUsize>,
    /// A SIGTSTP from outside (Ctrl-Z itself arrives as a key in raw mode).
    pub stop: Arc<AtomicBool>,
    /// A SIGCONT: the process was continued, perhaps after a SIGSTOP.
    pub cont: Arc<AtomicBool>,
}

impl Signals {
    /// Register the handlers.
    pub fn register() -> io::Result<Signals> {
        let got = Arc::new(AtomicUsize::new(0));
        for &sig in ENDING {
            signal_hook::flag::register_usize(sig, Arc::clone(&got), sig as usize)?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(signal_hook::consts::SIGTSTP, Arc::clone(&stop))?;
        let cont = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(signal_hook::consts::SIGCONT, Arc::clone(&cont))?;
        install_abort_handler()?;
        Ok(Signals { got, stop, cont })
    }

    /// The ending signal that arrived, if any.
    pub fn pending(&self) -> Option<i32> {
        match self.got.load(Ordering::SeqCst) {
            0 => None,
            n => Some(n as i32),
        }
    }

    /// Whether a SIGTSTP arrived since the last call.
    pub fn take_stop(&self) -> bool {
        self.stop.swap(false, Ordering::SeqCst)
    }

    /// Whether a SIGCONT arrived since the last call.
    pub fn take_cont(&self) -> bool {
        self.cont.swap(false, Ordering::SeqCst)
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
pub fn suspend(term: &mut Tui, signals: &Signals) -> io::Result<()> {
    leave();
    stop_self()?;
    // The SIGCONT that resumed us is this stop's own.
    signals.take_cont();
    *term = enter()?;
    term.clear()?;
    Ok(())
}

/// Come back after a stop triage did not see (SIGSTOP): the shell may have
/// reset the terminal, so enter it again and redraw everything.
pub fn resume(term: &mut Tui) -> io::Result<()> {
    leave();
    *term = enter()?;
    term.clear()?;
    Ok(())
}

/// Stop with SIGTSTP's default action (so a job-control shell reports the
/// job stopped by SIGTSTP), while triage's own SIGTSTP handler stays for
/// next time.
fn stop_self() -> io::Result<()> {
    let sig = signal_hook::consts::SIGTSTP;
    // SAFETY: sigaction with zeroed structs we own: install the default
    // action, raise, and put back the handler that was there.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, &dfl, &mut old) != 0 {
            return Err(io::Error::last_os_error());
        }
        let raised = libc::raise(sig);
        libc::sigaction(sig, &old, std::ptr::null_mut());
        if raised != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
