//! A pseudo-terminal harness for end-to-end tests of the `triage` binary.
//!
//! [`Tui::spawn`] starts the built binary inside a real pty and feeds
//! everything it writes into a [`vt100::Parser`] from a background thread,
//! so tests can look at the screen exactly as a terminal would show it,
//! type keys, resize the window and check the exit code.
//!
//! Synchronisation is by polling the parsed screen (every 20 ms, with a
//! deadline), never by fixed sleeps. A timeout panics with the full screen so
//! failures are readable.
//!
//! The reader thread also answers the queries a terminal is expected to
//! answer, so that crossterm never hangs waiting for a reply:
//!
//! | query                               | reply                          |
//! |-------------------------------------|--------------------------------|
//! | `ESC[6n` cursor position (DSR)      | `ESC[{row};{col}R`, 1-based, from the parser's cursor |
//! | `ESC[5n` device status              | `ESC[0n`                       |
//! | `ESC[c` / `ESC[0c` primary DA       | `ESC[?62;22c`                  |
//! | `ESC[>c` secondary DA               | `ESC[>1;10;0c`                 |
//!
//! `ESC[?u` (kitty keyboard flags) is deliberately *not* answered, as in
//! xterm: crossterm's `supports_keyboard_enhancement()` then sees the DA
//! reply first and promptly reports `false`.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, ExitStatus, MasterPty, PtySize, native_pty_system};

/// How often the screen is polled while waiting.
const POLL: Duration = Duration::from_millis(20);
/// Default timeout of [`Tui::wait_for`], [`Tui::wait_gone`] and
/// [`Tui::wait_exit`].
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long to wait for the last output after the child has exited.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Locks a mutex, ignoring poisoning (a panicking test must still be able to
/// print the screen and clean up).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// vt100 callbacks: answers terminal queries and records what the screen
/// itself does not keep (title, bells).
#[derive(Default)]
struct Terminal {
    /// Replies to send back to the program, written by the reader thread.
    replies: Vec<u8>,
    title: String,
    icon_name: String,
    bells: usize,
}

impl vt100::Callbacks for Terminal {
    fn audible_bell(&mut self, _: &mut vt100::Screen) {
        self.bells += 1;
    }

    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.title = String::from_utf8_lossy(title).into_owned();
    }

    fn set_window_icon_name(&mut self, _: &mut vt100::Screen, name: &[u8]) {
        self.icon_name = String::from_utf8_lossy(name).into_owned();
    }

    fn unhandled_csi(
        &mut self,
        screen: &mut vt100::Screen,
        i1: Option<u8>,
        i2: Option<u8>,
        params: &[&[u16]],
        c: char,
    ) {
        let first = params.first().and_then(|p| p.first()).copied().unwrap_or(0);
        match (i1, i2, c, first) {
            (None, None, 'n', 6) => {
                let (row, col) = screen.cursor_position();
                let reply = format!("\x1b[{};{}R", row + 1, col + 1);
                self.replies.extend_from_slice(reply.as_bytes());
            }
            (None, None, 'n', 5) => self.replies.extend_from_slice(b"\x1b[0n"),
            (None, None, 'c', 0) => self.replies.extend_from_slice(b"\x1b[?62;22c"),
            (Some(b'>'), None, 'c', 0) => self.replies.extend_from_slice(b"\x1b[>1;10;0c"),
            _ => {}
        }
    }
}

/// State shared with the reader thread.
struct Shared {
    parser: vt100::Parser<Terminal>,
    /// Every byte the program has written.
    output: Vec<u8>,
    /// The pty reported end of file: the program (and everything holding the
    /// terminal) has gone, no more output will come.
    eof: bool,
}

/// A running `triage` process in a pseudo-terminal.
pub struct Tui {
    master: Box<dyn MasterPty + Send>,
    child: Mutex<Box<dyn Child + Send + Sync>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    shared: Arc<Mutex<Shared>>,
    reader: Option<JoinHandle<()>>,
}

impl Tui {
    /// Spawn the built `triage` binary (path from `env!("CARGO_BIN_EXE_triage")`)
    /// with `args` in a pty of `cols`×`rows`, cwd = `cwd`, with env
    /// TERM=xterm-256color, NO_COLOR unset, and any extra `envs`.
    ///
    /// The rest of the environment is inherited, except `COLUMNS` and
    /// `LINES`, which are removed so the pty size is the only size. Panics
    /// if the pty or the process cannot be created, or if `cwd` is not a
    /// directory (portable-pty would silently fall back to `$HOME`).
    pub fn spawn(args: &[&str], cols: u16, rows: u16, cwd: &Path, envs: &[(&str, &str)]) -> Tui {
        Tui::spawn_program(env!("CARGO_BIN_EXE_triage"), args, cols, rows, cwd, envs)
    }

    /// Like [`Tui::spawn`], for any program (a shell that runs triage, for
    /// job-control tests).
    pub fn spawn_program(
        program: &str,
        args: &[&str],
        cols: u16,
        rows: u16,
        cwd: &Path,
        envs: &[(&str, &str)],
    ) -> Tui {
        assert!(
            cwd.is_dir(),
            "Tui::spawn: cwd {} is not a directory",
            cwd.display()
        );
        let size = PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        };
        let pair = native_pty_system().openpty(size).expect("open a pty");

        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        cmd.cwd(cwd);
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("NO_COLOR");
        cmd.env_remove("COLUMNS");
        cmd.env_remove("LINES");
        for (key, value) in envs {
            cmd.env(key, value);
        }
        let child = pair
            .slave
            .spawn_command(cmd)
            .unwrap_or_else(|e| panic!("spawn triage {args:?}: {e:#}"));
        // Only the child may hold the slave end, so that the reader sees end
        // of file when the child exits.
        drop(pair.slave);

        let mut reader = pair.master.try_clone_reader().expect("pty reader");
        let writer: Arc<Mutex<Box<dyn Write + Send>>> =
            Arc::new(Mutex::new(pair.master.take_writer().expect("pty writer")));
        let shared = Arc::new(Mutex::new(Shared {
            parser: vt100::Parser::new_with_callbacks(
                nonzero(rows),
                nonzero(cols),
                0,
                Terminal::default(),
            ),
            output: Vec::new(),
            eof: false,
        }));

        let thread_shared = Arc::clone(&shared);
        let thread_writer = Arc::clone(&writer);
        let handle = thread::Builder::new()
            .name("pty-reader".into())
            .spawn(move || {
                let mut buf = [0u8; 16 * 1024];
                loop {
                    let n = match reader.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => break,
                    };
                    let replies = {
                        let mut shared = lock(&thread_shared);
                        shared.output.extend_from_slice(&buf[..n]);
                        shared.parser.process(&buf[..n]);
                        std::mem::take(&mut shared.parser.callbacks_mut().replies)
                    };
                    if !replies.is_empty() {
                        let mut writer = lock(&thread_writer);
                        // The program may already be gone; nothing to do then.
                        let _ = writer.write_all(&replies).and_then(|()| writer.flush());
                    }
                }
                lock(&thread_shared).eof = true;
            })
            .expect("spawn pty reader thread");

        Tui {
            master: pair.master,
            child: Mutex::new(child),
            writer,
            shared,
            reader: Some(handle),
        }
    }

    /// The current screen as text (rows joined with '\n', trailing spaces
    /// trimmed per row).
    pub fn screen(&self) -> String {
        self.with_screen(screen_text)
    }

    /// Wait (polling every 20 ms, up to 10 s) until the screen contains
    /// `needle`; on timeout panic with the needle and the full current screen.
    #[track_caller]
    pub fn wait_for(&self, needle: &str) {
        self.wait_for_timeout(needle, DEFAULT_TIMEOUT);
    }

    /// Like [`Tui::wait_for`] with an explicit timeout. Fails early if the
    /// program has exited without showing `needle`.
    #[track_caller]
    pub fn wait_for_timeout(&self, needle: &str, timeout: Duration) {
        self.wait_until(
            timeout,
            |screen| screen.contains(needle),
            || format!("waiting for {needle:?} to appear"),
        );
    }

    /// Wait (up to 10 s) until the screen no longer contains `needle`.
    #[track_caller]
    pub fn wait_gone(&self, needle: &str) {
        self.wait_gone_timeout(needle, DEFAULT_TIMEOUT);
    }

    /// Like [`Tui::wait_gone`] with an explicit timeout.
    #[track_caller]
    pub fn wait_gone_timeout(&self, needle: &str, timeout: Duration) {
        self.wait_until(
            timeout,
            |screen| !screen.contains(needle),
            || format!("waiting for {needle:?} to disappear"),
        );
    }

    /// Polls the screen text until `done` holds; panics with `what()` and the
    /// screen on timeout, or as soon as the program's output has ended.
    #[track_caller]
    fn wait_until(
        &self,
        timeout: Duration,
        done: impl Fn(&str) -> bool,
        what: impl FnOnce() -> String,
    ) {
        let deadline = Instant::now() + timeout;
        loop {
            let (screen, eof) = {
                let shared = lock(&self.shared);
                (screen_text(shared.parser.screen()), shared.eof)
            };
            if done(&screen) {
                return;
            }
            if eof {
                self.fail(&format!("{}, but the program has exited", what()));
            }
            if Instant::now() >= deadline {
                self.fail(&format!("timed out after {timeout:?} {}", what()));
            }
            thread::sleep(POLL);
        }
    }

    /// Panics with `message`, the process state and the full screen.
    #[track_caller]
    fn fail(&self, message: &str) -> ! {
        let status = match lock(&self.child).try_wait() {
            Ok(Some(status)) => format!("program exited: {status}"),
            Ok(None) => "program still running".to_string(),
            Err(e) => format!("program state unknown: {e}"),
        };
        panic!("{message}\n{status}\n{}", self.describe_screen());
    }

    /// The screen framed for a failure message.
    fn describe_screen(&self) -> String {
        self.with_screen(|screen| {
            let (rows, cols) = screen.size();
            let (rows, cols) = (rows.get(), cols.get());
            let (cy, cx) = screen.cursor_position();
            let mut out = format!(
                "--- screen {cols}x{rows}, cursor at row {cy} col {cx}{} ---\n",
                if screen.alternate_screen() {
                    ", alternate screen"
                } else {
                    ""
                }
            );
            for row in screen.rows(0, cols) {
                out.push('|');
                out.push_str(row.trim_end_matches(' '));
                out.push('\n');
            }
            out.push_str("--- end of screen ---");
            out
        })
    }

    /// Send a string: keys as the terminal would encode them, e.g. "j",
    /// "\x1b[B" for Down, "\r" for Enter, "\x1b" for Esc, "\x03" for Ctrl-C.
    pub fn send(&mut self, s: &str) {
        self.send_bytes(s.as_bytes());
    }

    /// Send raw bytes to the program's terminal input.
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let mut writer = lock(&self.writer);
        writer
            .write_all(bytes)
            .and_then(|()| writer.flush())
            .unwrap_or_else(|e| panic!("write {bytes:?} to the pty: {e}"));
    }

    /// Resize the terminal: the parser first, then the pty (which sends
    /// SIGWINCH to the program), so the redraw is parsed at the new size.
    pub fn resize(&mut self, cols: u16, rows: u16) {
        let mut shared = lock(&self.shared);
        shared
            .parser
            .screen_mut()
            .set_size(nonzero(rows), nonzero(cols));
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("resize the pty");
    }

    /// Wait for the child to exit (up to 10 s, else kill it and panic) and
    /// return its exit code. A child killed by a signal reports code 1; use
    /// [`Tui::wait_exit_status`] to see the signal.
    #[track_caller]
    pub fn wait_exit(&mut self) -> u32 {
        self.wait_exit_status().exit_code()
    }

    /// Like [`Tui::wait_exit`], returning the full status (exit code or
    /// signal). Also waits (briefly) until all the program's output has been
    /// parsed, so the final screen and [`Tui::output_bytes`] are complete.
    #[track_caller]
    pub fn wait_exit_status(&mut self) -> ExitStatus {
        let deadline = Instant::now() + DEFAULT_TIMEOUT;
        let status = loop {
            match lock(&self.child).try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) => {}
                Err(e) => panic!("waiting for the program: {e}"),
            }
            if Instant::now() >= deadline {
                let screen = self.describe_screen();
                self.kill();
                panic!("program did not exit within {DEFAULT_TIMEOUT:?}; killed it\n{screen}");
            }
            thread::sleep(POLL);
        };
        self.drain();
        status
    }

    /// Waits until the reader thread has seen end of file (bounded).
    fn drain(&mut self) {
        let deadline = Instant::now() + DRAIN_TIMEOUT;
        while !lock(&self.shared).eof && Instant::now() < deadline {
            thread::sleep(POLL);
        }
        if lock(&self.shared).eof
            && let Some(handle) = self.reader.take()
        {
            let _ = handle.join();
        }
    }

    /// Kills the child (SIGHUP, then SIGKILL after a short grace period) and
    /// reaps it.
    fn kill(&mut self) {
        let mut child = lock(&self.child);
        if matches!(child.try_wait(), Ok(None)) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The child's pid, for signal tests.
    pub fn pid(&self) -> Option<u32> {
        lock(&self.child).process_id()
    }

    /// Raw access to the parser's screen, for tests that check modes,
    /// colours and cells (`alternate_screen()`, `hide_cursor()`,
    /// `cell(row, col)`...). The window title is not part of a vt100
    /// screen: use [`Tui::title`].
    pub fn with_screen<R>(&self, f: impl FnOnce(&vt100::Screen) -> R) -> R {
        f(lock(&self.shared).parser.screen())
    }

    /// The window title last set by the program (OSC 0 or OSC 2).
    pub fn title(&self) -> String {
        lock(&self.shared).parser.callbacks().title.clone()
    }

    /// How many times the program rang the bell (BEL).
    pub fn bells(&self) -> usize {
        lock(&self.shared).parser.callbacks().bells
    }

    /// Every byte the program has written so far (for checking escape output).
    pub fn output_bytes(&self) -> Vec<u8> {
        lock(&self.shared).output.clone()
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        self.kill();
        // The reader thread ends by itself at end of file; don't wait for it
        // if something else still holds the terminal.
        if lock(&self.shared).eof
            && let Some(handle) = self.reader.take()
        {
            let _ = handle.join();
        }
    }
}

/// A terminal size as the screen parser takes it (a pty of no rows or
/// columns is no terminal to test on).
fn nonzero(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).expect("a terminal of at least one row and one column")
}

/// Rows joined with '\n', trailing spaces trimmed per row.
fn screen_text(screen: &vt100::Screen) -> String {
    let cols = screen.size().1.get();
    screen
        .rows(0, cols)
        .map(|row| row.trim_end_matches(' ').to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// splitmix64: a small deterministic generator for randomised rounds
/// (resize storms, kill points), seeded by [`seed`].
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// The seed of a randomised test: `TRIAGE_TEST_SEED`, else the clock (the
/// tests print it, so a failure can be replayed).
pub fn seed() -> u64 {
    std::env::var("TRIAGE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
}

/// Run the triage binary with `args` and wait: its exit code, standard
/// output and standard error.
pub fn run_triage(args: &[&str]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_triage"))
        .args(args)
        .output()
        .expect("run triage");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Index another tool's file as a user opens it, and check what every
/// converted file must satisfy: it is read as `format`, without a
/// problem, and every pair's detail loads. The index is returned for the
/// counts the caller compares with the tool's own.
pub fn index_foreign(
    path: &Path,
    format: triage::core::formats::Format,
) -> triage::core::index::RunIndex {
    let name = path.display();
    let idx = triage::core::index::load_run(
        &[path.to_string_lossy().to_string()],
        &triage::core::index::OpenOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(idx.files[0].format, format, "{name}");
    assert!(idx.problems.is_empty(), "{name}: {:?}", idx.problems);
    for i in 0..idx.rows.len() {
        idx.load_pair(i).expect("detail");
    }
    idx
}
