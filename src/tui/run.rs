//! The event loop: read a key, map it to an action, update, run effects, draw.
//!
//! While the loader indexes, the loop polls often and merges batches so the
//! first screen appears at once and keys are answered throughout. It draws
//! only after something changed.

use std::io;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use crate::core::annotations::Recovery;
use crate::core::index::Loader;

use super::action::Action;
use super::app::{self, App, Effect, MessageKind, Overlay};
use super::effects;
use super::keymap::{KeyChord, Keymap, Lookup, Mode, seq_to_string};
use super::style::Theme;
use super::term::{self, Signals};
use super::ui;

/// How the session ended.
pub enum Exit {
    Quit,
    Signal(i32),
}

/// Run the TUI until the reviewer quits or a signal arrives.
pub fn run(
    mut app: App,
    mut loader: Option<Loader>,
    keymap: Keymap,
    theme: Theme,
    mouse: bool,
) -> io::Result<Exit> {
    let signals = Signals::register()?;
    term::install_panic_hook();
    let input = term::InputFd::open()?;
    term::spawn_watchdog(signals.clone());
    let mut terminal = term::enter()?;
    if mouse {
        crossterm::execute!(io::stdout(), crossterm::event::EnableMouseCapture)?;
    }
    let mut keys: Vec<KeyChord> = Vec::new();
    let mut dirty = true;
    let mut last_retry = Instant::now();
    let mut last_watch = Instant::now();
    // When the first frame with rows was drawn (TRIAGE_TRACE_FIRST_FRAME).
    let mut first_rows: Option<(Duration, usize)> = None;
    // Whether the sort's warm-up was started for this index.
    let mut warmed = false;
    let exit = loop {
        if let Some(l) = &loader {
            if l.drain_into(&mut app.index) {
                effects::sync_keys(&mut app);
                effects::check_inputs(&mut app);
                effects::compare_baseline(&mut app);
                app.grow_view();
                dirty = true;
            }
            // A followed run keeps its loader: appended lines keep arriving.
            if app.index.done && !app.following() {
                app.loading = false;
                loader = None;
                dirty = true;
            }
        }
        if app.index.done && !warmed {
            warmed = true;
            effects::warm_sorting(&mut app);
        }
        app.take_sort_warmup();
        if last_watch.elapsed() > WATCH_EVERY {
            last_watch = Instant::now();
            dirty |= watch(&mut app);
        }
        let size = terminal.size()?;
        let vp = ui::viewport(
            ratatui::layout::Rect::new(0, 0, size.width, size.height),
            &app,
        );
        if vp != app.viewport {
            let relayout = vp.detail_cols != app.viewport.detail_cols;
            app.set_viewport(vp);
            if relayout {
                effects::relayout(&mut app, &theme);
            }
            dirty = true;
        }
        // A view left to filter (a text query typed), then the detail.
        let load = app.detail_effect();
        if !load.is_empty() {
            perform_drawing(&mut app, load, &mut terminal, &keymap, &theme)?;
            dirty = true;
        }
        if dirty {
            effects::sync_keys(&mut app);
            draw(&mut terminal, &app, &keymap, &theme)?;
            // A test-only trigger: prove the terminal is restored on a panic.
            if std::env::var_os("TRIAGE_TEST_PANIC").is_some() && !app.index.rows.is_empty() {
                panic!("TRIAGE_TEST_PANIC is set");
            }
            // And on an allocation that fails (an abort, not a panic).
            if std::env::var_os("TRIAGE_TEST_OUT_OF_MEMORY").is_some() && !app.index.rows.is_empty()
            {
                std::hint::black_box(Vec::<u8>::with_capacity(1 << 62));
            }
            dirty = false;
            if first_rows.is_none() && !app.index.rows.is_empty() {
                first_rows = Some((
                    crate::core::index::clock_start().elapsed(),
                    app.index.rows.len(),
                ));
            }
        }
        if let Some(sig) = signals.pending() {
            break Exit::Signal(sig);
        }
        // A SIGTSTP from outside stops as Ctrl-Z does; a SIGCONT without one
        // (after a SIGSTOP, which cannot be caught) re-enters and redraws.
        let stopped = signals.take_stop();
        if stopped || signals.take_cont() {
            if stopped {
                term::suspend(&mut terminal, &signals)?;
            } else {
                term::resume(&mut terminal)?;
            }
            if mouse {
                crossterm::execute!(io::stdout(), crossterm::event::EnableMouseCapture)?;
            }
            dirty = true;
            continue;
        }
        // Set only once nothing is pending or the reviewer said to quit
        // anyway (`App::request_quit` asks on every `q`).
        if app.quit {
            break Exit::Quit;
        }
        if let Some((digit, since)) = app.pending_count_digit()
            && since.elapsed() >= keymap.count_wait
        {
            // A lone digit that no motion followed is a category key.
            app.pending_count = None;
            app.pending_keys.clear();
            let work = app::update(&mut app, Action::Classify(digit));
            perform_drawing(&mut app, work, &mut terminal, &keymap, &theme)?;
            dirty = true;
        }
        if last_retry.elapsed() > Duration::from_secs(2) {
            last_retry = Instant::now();
            let writable = matches!(
                app.store.access(),
                crate::core::annotations::Access::ReadWrite
            );
            if writable && app.store.pending() > 0 {
                effects::retry(&mut app);
                dirty = true;
            }
        }
        let mut timeout = if loader.is_some() && !app.index.done {
            Duration::from_millis(30)
        } else {
            Duration::from_millis(250)
        };
        // A lone digit classifies when its wait is over, not at the next tick.
        if let Some((_, since)) = app.pending_count_digit() {
            timeout = timeout.min(keymap.count_wait.saturating_sub(since.elapsed()));
        }
        // Check for a hang-up before asking crossterm: on a hung-up terminal
        // its reader would spin. (If the terminal goes away during the poll,
        // the watchdog ends the process; every saved decision is on disk.)
        if input.hung_up() {
            break Exit::Signal(signal_hook::consts::SIGHUP);
        }
        if !event::poll(timeout)? {
            continue;
        }
        // Take every event that is ready before drawing again.
        let mut first = true;
        while first || event::poll(Duration::from_millis(1))? {
            first = false;
            dirty = true;
            match event::read()? {
                Event::Key(k) if k.kind != KeyEventKind::Release => {
                    if !matches!(app.message, Some((_, MessageKind::Error))) {
                        app.message = None;
                    }
                    let chord = KeyChord::from_event(&k);
                    let work = handle_key(&mut app, &keymap, &mut keys, chord);
                    let mut outside = |app: &mut App, e: Effect| -> io::Result<()> {
                        if e == Effect::Suspend {
                            term::suspend(&mut terminal, &signals)?;
                            if mouse {
                                // Leaving turned mouse reporting off; back on.
                                crossterm::execute!(
                                    io::stdout(),
                                    crossterm::event::EnableMouseCapture
                                )?;
                            }
                        } else if e == Effect::Reload
                            && let Some(l) = reload(app)
                        {
                            loader = Some(l);
                            warmed = false;
                        } else if e == Effect::Redraw {
                            draw(&mut terminal, app, &keymap, &theme)?;
                        }
                        Ok(())
                    };
                    perform(&mut app, work, &theme, &mut outside)?;
                }
                Event::Paste(text) => app::type_text(&mut app, &text),
                Event::Mouse(m) if mouse => {
                    let size = terminal.size()?;
                    let area = ratatui::layout::Rect::new(0, 0, size.width, size.height);
                    let work = handle_mouse(&mut app, area, m);
                    perform_drawing(&mut app, work, &mut terminal, &keymap, &theme)?;
                }
                _ => {}
            }
            if app.quit || input.hung_up() {
                break;
            }
        }
    };
    // The signal is answered: the watchdog must not end the process while
    // the journal waits for its lock below (a second signal re-arms it).
    signals.got.store(0, std::sync::atomic::Ordering::SeqCst);
    // Last chance for pending writes, then a compact journal for next time.
    if app.store.pending() > 0 {
        let _ = app.store.retry_pending();
    }
    let moved_before = moved_lines(&app);
    let _ = app.store.compact();
    term::leave();
    // Decisions the disk still refuses go to a recovery file (or stderr),
    // and the reviewer is told where: quitting anyway, SIGTERM, a hang-up.
    if app.store.pending() > 0 {
        for r in app.store.recover() {
            eprintln!("triage: {r}");
            if let Recovery::Lines { lines, .. } = &r {
                for l in lines {
                    eprintln!("{l}");
                }
            }
        }
    }
    let moved = moved_lines(&app);
    if moved.len() > moved_before.len() {
        let n = moved.len() - moved_before.len();
        let mut sides: Vec<String> = moved.iter().map(|p| p.display().to_string()).collect();
        sides.dedup();
        eprintln!(
            "triage: {n} unreadable journal {} moved to {}",
            if n == 1 { "line" } else { "lines" },
            sides.join(", ")
        );
    }
    if std::env::var_os("TRIAGE_TRACE_FIRST_FRAME").is_some_and(|v| v != "0") {
        trace_first_frame(first_rows, &app.index);
    }
    Ok(exit)
}

/// Perform effects as [`effects::perform`] does, with suspension and
/// reloading done by `outside`, which owns the terminal and the loader.
fn perform(
    app: &mut App,
    work: Vec<Effect>,
    theme: &Theme,
    outside: effects::Outside<'_>,
) -> io::Result<()> {
    effects::perform(app, work, theme, outside, &mut |_| {})
}

/// Perform the effects of a tick, the mouse or the loader, which never
/// suspend or reload: the screen is drawn when slow work is about to start
/// ([`Effect::Redraw`]).
fn perform_drawing(
    app: &mut App,
    work: Vec<Effect>,
    terminal: &mut term::Tui,
    keymap: &Keymap,
    theme: &Theme,
) -> io::Result<()> {
    perform(app, work, theme, &mut |app, e| {
        if e == Effect::Redraw {
            draw(terminal, app, keymap, theme)?;
        }
        Ok(())
    })
}

/// Draw the screen.
fn draw(terminal: &mut term::Tui, app: &App, keymap: &Keymap, theme: &Theme) -> io::Result<()> {
    terminal.draw(|f| ui::render(f, app, keymap, theme))?;
    Ok(())
}

/// Read the record keys that `work` asks for at once, and apply the
/// actions that waited for them; the rest of the work is returned in order.
/// For an action applied before another key is handled in the same press.
fn learn_keys_now(app: &mut App, work: Vec<Effect>) -> Vec<Effect> {
    let mut rest = Vec::new();
    for e in work {
        match e {
            Effect::LearnKeys { rows, then } => {
                effects::learn_keys(app, &rows);
                let more = app::resume(app, then);
                rest.extend(learn_keys_now(app, more));
            }
            e => rest.push(e),
        }
    }
    rest
}

/// How often the run file and the journal are looked at for changes made by others.
const WATCH_EVERY: Duration = Duration::from_millis(400);

/// Notice a run file truncated or replaced on disk, and decisions another
/// triage saved to the shared journal. Whether the screen changed.
fn watch(app: &mut App) -> bool {
    let mut changed = false;
    if app.run_change.is_none()
        && let Some(change) = app.watch.check()
    {
        let text = change.to_string();
        app.say(
            format!("{text} — press R to reload it (annotations are kept)"),
            MessageKind::Error,
        );
        app.run_change = Some(change);
        changed = true;
    }
    let refreshed = app.store.refresh();
    let restored = app.store.restored();
    if restored > 0 {
        app.say(
            format!(
                "{} replaced by a copy without {restored} of your decisions; {} written again",
                app.store.path().display(),
                if restored == 1 { "it was" } else { "they were" },
            ),
            MessageKind::Error,
        );
        changed = true;
    }
    match refreshed {
        Ok(0) => {}
        Ok(n) => {
            effects::sync_keys(app);
            app.filter_view();
            effects::refresh_header(app);
            app.refresh_summary();
            if !matches!(app.message, Some((_, MessageKind::Error))) {
                app.say(
                    if n == 1 {
                        "1 decision from another triage on this run arrived".to_string()
                    } else {
                        format!("{n} decisions from another triage on this run arrived")
                    },
                    MessageKind::Info,
                );
            }
            changed = true;
        }
        // The next save reports a journal that cannot be read, with advice.
        Err(_) => {}
    }
    changed
}

/// Where each unreadable journal line moved to a side file went.
fn moved_lines(app: &App) -> Vec<std::path::PathBuf> {
    let (lines, _) = app.store.unreadable();
    lines.into_iter().filter_map(|l| l.moved_to).collect()
}

/// Index the run again from disk; the new loader, if it could be opened.
fn reload(app: &mut App) -> Option<Loader> {
    let Some(reopen) = app.reopen.clone() else {
        app.say(
            "cannot reload: the run was read from standard input",
            MessageKind::Error,
        );
        return None;
    };
    match crate::core::index::open_run(&reopen.paths, &reopen.opts) {
        Ok((index, loader)) => {
            effects::replace_index(app, index);
            app.say(
                "reloaded the run from disk; annotations re-attached by record key",
                MessageKind::Info,
            );
            Some(loader)
        }
        Err(e) => {
            app.say(
                format!("cannot reload: {} — fix the file and press R again", e),
                MessageKind::Error,
            );
            None
        }
    }
}

/// Print, after the terminal is restored, when the first frame with rows
/// was drawn (measured from the moment the run was opened) and how far
/// indexing had got by then: `TRIAGE_TRACE_FIRST_FRAME=1 triage RUN`.
fn trace_first_frame(first: Option<(Duration, usize)>, index: &crate::core::index::RunIndex) {
    match first {
        Some((at, rows)) => eprintln!(
            "triage: first frame with rows: {:.1} ms ({rows} rows then)",
            at.as_secs_f64() * 1000.0
        ),
        None => eprintln!("triage: first frame with rows: never (no rows)"),
    }
    if index.done {
        eprintln!(
            "triage: full index: {:.3} s, {} pairs",
            index.elapsed.as_secs_f64(),
            index.rows.len()
        );
    } else {
        eprintln!(
            "triage: index not finished at exit: {} pairs, {} of {} bytes",
            index.rows.len(),
            index.bytes_read,
            index.bytes_total
        );
    }
}

/// Turn a mouse event into effects: click selects, the wheel scrolls what is
/// under the pointer, a click on the legend classifies.
pub fn handle_mouse(
    app: &mut App,
    area: ratatui::layout::Rect,
    m: crossterm::event::MouseEvent,
) -> Vec<Effect> {
    use crossterm::event::{MouseButton, MouseEventKind};
    use ratatui::layout::Position;
    if app.overlay != Overlay::None {
        return match m.kind {
            MouseEventKind::ScrollDown => app::update(app, Action::ScrollDown),
            MouseEventKind::ScrollUp => app::update(app, Action::ScrollUp),
            _ => vec![],
        };
    }
    let a = ui::layout(area, app);
    let at = Position {
        x: m.column,
        y: m.row,
    };
    let in_list = a.list.contains(at);
    let in_detail = a.detail.contains(at);
    match m.kind {
        MouseEventKind::Down(MouseButton::Left) if in_list => {
            // Border and header take the first two rows.
            let first = a.list.y + 2;
            if m.row >= first && m.row < a.list.bottom().saturating_sub(1) {
                let i = app.list_offset + (m.row - first) as usize;
                if i < app.items.len() {
                    app.focus = app::Focus::List;
                    app.cursor = i;
                    app.detail_scroll = 0;
                    return app.detail_effect();
                }
            }
            vec![]
        }
        MouseEventKind::Down(MouseButton::Left) if in_detail => {
            app.focus = app::Focus::Detail;
            vec![]
        }
        MouseEventKind::Down(MouseButton::Left) if a.legend.contains(at) => {
            let x = m.column - a.legend.x;
            match ui::legend_hits(app, a.legend.width)
                .into_iter()
                .find(|(s, e, _)| x >= *s && x < *e)
            {
                Some((_, _, key)) => app::update(app, Action::Classify(key)),
                None => vec![],
            }
        }
        MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
            let down = m.kind == MouseEventKind::ScrollDown;
            let action = match (in_detail, down) {
                (true, true) => Action::ScrollDown,
                (true, false) => Action::ScrollUp,
                (false, true) => Action::NextPair,
                (false, false) => Action::PrevPair,
            };
            if !in_detail && !in_list {
                return vec![];
            }
            let mut effects = Vec::new();
            for _ in 0..3 {
                effects.extend(app::update(app, action));
            }
            effects
        }
        _ => vec![],
    }
}

/// Turn one key press into effects, tracking multi-key sequences.
pub fn handle_key(
    app: &mut App,
    km: &Keymap,
    keys: &mut Vec<KeyChord>,
    chord: KeyChord,
) -> Vec<Effect> {
    if app.help_typing && matches!(app.overlay, Overlay::Help { .. }) {
        let k = match chord.code {
            KeyCode::Enter => Some(app::HelpKey::Done),
            KeyCode::Esc => Some(app::HelpKey::Abort),
            KeyCode::Backspace => Some(app::HelpKey::Backspace),
            KeyCode::Char(c)
                if !chord
                    .mods
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
            {
                Some(app::HelpKey::Char(c))
            }
            _ => None,
        };
        if let Some(k) = k {
            app::help_search_key(app, k);
            return vec![];
        }
    }
    if km.counts
        && app.overlay == Overlay::None
        && keys.is_empty()
        && let (KeyCode::Char(c), false) = (
            chord.code,
            chord
                .mods
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT),
        )
    {
        let continues = app.pending_count.is_some() && c.is_ascii_digit();
        // With no wait, a category key classifies at once: only the other
        // digits start a count.
        let starts = c.is_ascii_digit()
            && c != '0'
            && !(km.count_wait.is_zero() && app.taxonomy.by_key(c).is_some());
        if continues || starts {
            let mut digits = app.pending_count.take().map(|(d, _)| d).unwrap_or_default();
            digits.push(c);
            app.pending_keys = digits.clone();
            app.pending_count = Some((digits, std::time::Instant::now()));
            return vec![];
        }
    }
    if let Some((digits, _)) = app.pending_count.take() {
        app.pending_keys.clear();
        let n: usize = digits.parse().unwrap_or(1).clamp(1, 100_000);
        let modes = match app.focus {
            app::Focus::List => [Mode::List, Mode::Global],
            app::Focus::Detail => [Mode::Detail, Mode::Global],
        };
        let action = modes.iter().find_map(|m| match km.lookup(*m, &[chord]) {
            Lookup::Action(a) => Some(a),
            _ => None,
        });
        match action {
            Some(a) if a.group() == super::action::Group::Move => {
                let mut effects = Vec::new();
                for _ in 0..n {
                    effects.extend(app::update(app, a));
                }
                return effects;
            }
            _ => {
                // Not a motion: a lone digit was a category key; then this key.
                let mut effects = Vec::new();
                if digits.len() == 1 {
                    let digit = digits.chars().next().unwrap_or('0');
                    let work = app::update(app, Action::Classify(digit));
                    // Decided on the state the digit was typed in, before
                    // this key changes it.
                    effects.extend(learn_keys_now(app, work));
                } else {
                    app.say(
                        format!("count {digits} ignored: no motion followed"),
                        MessageKind::Info,
                    );
                }
                effects.extend(handle_key(app, km, keys, chord));
                return effects;
            }
        }
    }
    keys.push(chord);
    let single_char = match (keys.len(), chord.code) {
        (1, KeyCode::Char(c))
            if !chord
                .mods
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
        {
            Some(c)
        }
        _ => None,
    };
    let modes: &[Mode] = match &app.overlay {
        Overlay::Help { .. } | Overlay::Facets(_) | Overlay::Summary(_) => &[Mode::Help],
        Overlay::Problems { .. } => &[Mode::Problems],
        Overlay::Note(_) => &[Mode::Note],
        Overlay::Confirm(_) | Overlay::PickCategory { .. } => &[Mode::Confirm],
        Overlay::Jump(_) | Overlay::Query(_) | Overlay::Export(_) => &[Mode::Input],
        Overlay::None => match app.focus {
            app::Focus::List => &[Mode::List, Mode::Global],
            app::Focus::Detail => &[Mode::Detail, Mode::Global],
        },
    };
    // A category key in the picker wins over the prompt's own keys.
    if let (Overlay::PickCategory { .. }, Some(c)) = (&app.overlay, single_char)
        && let Some(classify) = km.category(c, &app.taxonomy)
    {
        keys.clear();
        return app::update(app, classify);
    }
    let mut pending = false;
    for m in modes {
        match km.lookup(*m, keys) {
            Lookup::Action(a) => {
                keys.clear();
                app.pending_keys.clear();
                return app::update(app, a);
            }
            Lookup::Pending => pending = true,
            Lookup::Unbound => {}
        }
    }
    if pending {
        app.pending_keys = seq_to_string(keys);
        return vec![];
    }
    keys.clear();
    app.pending_keys.clear();
    // An unbound character on the main screen may be a category key.
    if let (Overlay::None, Some(c)) = (&app.overlay, single_char)
        && let Some(classify) = km.category(c, &app.taxonomy)
    {
        return app::update(app, classify);
    }
    match (&app.overlay, single_char) {
        (Overlay::Note(_) | Overlay::Jump(_) | Overlay::Query(_) | Overlay::Export(_), Some(c)) => {
            app::type_text(app, &c.to_string());
            vec![]
        }
        (Overlay::None, _) => {
            app.say(
                format!(
                    "{} is not bound here; ? lists the keys",
                    seq_to_string(&[chord])
                ),
                MessageKind::Info,
            );
            vec![]
        }
        _ => vec![],
    }
}
