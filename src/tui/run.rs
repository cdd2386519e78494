//! The event loop: read a key, map it to an action, update, run effects, draw.
//!
//! While the loader indexes, the loop polls often and merges batches so the
//! first screen appears at once and keys are answered throughout. It draws
//! only after something changed.

use std::io;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use crate::core::index::Loader;

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
) -> io::Result<Exit> {
    let signals = Signals::register()?;
    term::install_panic_hook();
    let input = term::InputFd::open()?;
    term::spawn_watchdog(signals.clone());
    let mut terminal = term::enter()?;
    let mut keys: Vec<KeyChord> = Vec::new();
    let mut dirty = true;
    let mut last_retry = Instant::now();
    let mut quit_armed = false;
    let exit = loop {
        if let Some(l) = &loader {
            if l.drain_into(&mut app.index) {
                app.grow_view();
                dirty = true;
            }
            if app.index.done {
                app.loading = false;
                loader = None;
                dirty = true;
            }
        }
        let size = terminal.size()?;
        let vp = ui::viewport(
            ratatui::layout::Rect::new(0, 0, size.width, size.height),
            app.focus,
        );
        if vp != app.viewport {
            let relayout = vp.detail_cols != app.viewport.detail_cols;
            app.viewport = vp;
            if relayout {
                effects::relayout(&mut app, &theme);
            }
            dirty = true;
        }
        for e in app.detail_effect() {
            effects::run(&mut app, e, &theme);
            dirty = true;
        }
        if dirty {
            terminal.draw(|f| ui::render(f, &app, &keymap, &theme))?;
            dirty = false;
        }
        if let Some(sig) = signals.pending() {
            break Exit::Signal(sig);
        }
        if app.quit {
            if app.store.pending() > 0 && !quit_armed {
                app.quit = false;
                quit_armed = true;
                app.say(
                    format!(
                        "{} decisions are NOT saved ({}). Quit again to leave without them.",
                        app.store.pending(),
                        app.store.path().display()
                    ),
                    MessageKind::Error,
                );
                dirty = true;
                continue;
            }
            break Exit::Quit;
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
        let timeout = if loader.is_some() {
            Duration::from_millis(30)
        } else {
            Duration::from_millis(250)
        };
        match input.wait(timeout) {
            term::Input::HungUp => break Exit::Signal(signal_hook::consts::SIGHUP),
            term::Input::Timeout => continue,
            term::Input::Ready => {}
        }
        while event::poll(Duration::ZERO)? {
            dirty = true;
            match event::read()? {
                Event::Key(k) if k.kind != KeyEventKind::Release => {
                    if !matches!(app.message, Some((_, MessageKind::Error))) {
                        app.message = None;
                    }
                    let chord = KeyChord::from_event(&k);
                    for e in handle_key(&mut app, &keymap, &mut keys, chord) {
                        if e == Effect::Suspend {
                            term::suspend(&mut terminal)?;
                        } else {
                            effects::run(&mut app, e, &theme);
                        }
                    }
                }
                Event::Paste(text) => app::type_text(&mut app, &text),
                _ => {}
            }
            if app.quit || input.hung_up() {
                break;
            }
        }
    };
    // Last chance for pending writes, then a compact journal for next time.
    if app.store.pending() > 0 {
        let _ = app.store.retry_pending();
    }
    let _ = app.store.compact();
    term::leave();
    Ok(exit)
}

/// Turn one key press into effects, tracking multi-key sequences.
pub fn handle_key(
    app: &mut App,
    km: &Keymap,
    keys: &mut Vec<KeyChord>,
    chord: KeyChord,
) -> Vec<Effect> {
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
        Overlay::Help { .. } => &[Mode::Help],
        Overlay::Problems { .. } => &[Mode::Problems],
        Overlay::Note(_) => &[Mode::Note],
        Overlay::Confirm(_) | Overlay::PickCategory { .. } => &[Mode::Confirm],
        Overlay::None => match app.focus {
            app::Focus::List => &[Mode::List, Mode::Global],
            app::Focus::Detail => &[Mode::Detail, Mode::Global],
        },
    };
    // A category key in the picker wins over the prompt's own keys.
    if let (Overlay::PickCategory { .. }, Some(c)) = (&app.overlay, single_char)
        && app.taxonomy.by_key(c).is_some()
    {
        keys.clear();
        return app::classify(app, c);
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
    match (&app.overlay, single_char) {
        (Overlay::Note(_), Some(c)) => {
            app::type_text(app, &c.to_string());
            vec![]
        }
        (Overlay::None, Some(c)) if app.taxonomy.by_key(c).is_some() => app::classify(app, c),
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
