//! Interactive operations on a generated 50k-pair run: a query keystroke
//! (filter every pair), a sort of every pair, the diff of one pair, a frame
//! rendered at 200×50 into a ratatui `TestBackend`, and the next pair with
//! its detail. `cargo bench --bench ops`; the 1M-pair figures come from
//! `bench/compare.sh` (`examples/ops_time.rs`).

use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use triage::core::diff::{JsonPath, diff_values};
use triage::core::query::{self, Context};
use triage::tui::action::Action;
use triage::tui::app;
use triage::tui::keymap::Keymap;
use triage::tui::listing::{Sort, SortKey, sort_rows};
use triage::tui::style::Theme;
use triage::tui::{testing, ui};

mod common;

fn ops(c: &mut Criterion) {
    let path = common::generated_run(50_000);
    let p = path.to_string_lossy().to_string();
    let dir = tempfile::tempdir().expect("temp dir");
    let journal = dir.path().join("j.triage.jsonl");
    let theme = Theme::dark();
    let mut app = testing::app_for_size(&[p.as_str()], &journal, "bench", 200, 50, &theme);
    let all: Vec<u32> = (0..app.index.rows.len() as u32).collect();

    let q = query::parse("status:fail family:state-noise dp<-0.05").expect("query");
    c.bench_function("query filter 50k", |b| {
        let ctx = Context {
            index: &app.index,
            store: Some(&app.store),
            changes: None,
        };
        b.iter(|| q.filter(&ctx, &all))
    });

    c.bench_function("sort 50k by drift", |b| {
        b.iter(|| {
            let mut v = all.clone();
            sort_rows(
                &app.index,
                &app.store,
                &mut v,
                Sort {
                    key: SortKey::Drift,
                    descending: false,
                },
            );
            v
        })
    });

    // A pair whose states differ: the diff the detail view shows.
    let i = (0..app.index.rows.len())
        .find(|&i| app.index.str(app.index.family(i)) == "state-noise")
        .expect("a state-noise pair");
    let loaded = app.index.load_pair(i).expect("pair");
    let (a, b) = (
        loaded.record.source.state.clone().expect("state"),
        loaded.record.variant.state.clone().expect("state"),
    );
    c.bench_function("diff of a pair", |bch| {
        bch.iter(|| diff_values(&JsonPath::root("state"), &a, &b))
    });
    c.bench_function("load pair (read, parse, derive)", |bch| {
        bch.iter(|| app.index.load_pair(i).expect("pair"))
    });

    let keymap = Keymap::load("default").expect("keymap");
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).expect("terminal");
    c.bench_function("render 200x50", |bch| {
        bch.iter(|| {
            terminal
                .draw(|f| ui::render(f, &app, &keymap, &theme))
                .expect("draw");
        })
    });

    // Back and forth over the list, so that every move loads a new pair.
    let mut forward = true;
    c.bench_function("next pair with detail", |bch| {
        bch.iter(|| {
            if app.cursor + 1 >= app.items.len() {
                forward = false;
            } else if app.cursor == 0 {
                forward = true;
            }
            let step = if forward {
                Action::NextPair
            } else {
                Action::PrevPair
            };
            let work = app::update(&mut app, step);
            testing::run_effects(&mut app, work, &theme);
        })
    });
}

criterion_group!(benches, ops);
criterion_main!(benches);
