//! Time the interactive operations on a real run, as `bench/compare.sh` reports them.
//!
//! ```text
//! cargo run --release --example ops_time -- bench/data/run-1m.jsonl
//! ```
//!
//! Loads the run fully into an app sized for a 200×50 terminal (as
//! `triage::tui::testing` does), shows every pair (not only failures), then
//! measures: a query keystroke (each key typed into the query bar: the text
//! re-parsed and the view rebuilt), the whole query applied at once, a text
//! search, a sort of all pairs on several keys, a frame
//! render into a ratatui `TestBackend`, moving to the next pair with its
//! detail and diff loaded, opening the facets and the summary, and
//! accepting every suggestion in view (`Y y`, saved to a journal in a
//! temporary directory) and undoing it. Prints one `name value` line per figure, in ms,
//! plus the resident memory after loading.
//!
//! `OPS` chooses the operations to time, by name, comma-separated (default
//! all): `query`, `sort`, `render`, `next`, `facets`, `summary`, `accept`
//! (accepting every suggestion, then its undo). Loading is always timed.
//!
//! ```text
//! OPS=sort,summary cargo run --release --example ops_time -- bench/data/run-1m.jsonl
//! ```
//!
//! `WARM=N` touches N GiB of new memory and frees it just before `Y`, so
//! that the save allocates memory the machine has just used (see
//! `warm_memory`).
//!
//! `COLD=1` drops the run's pages from the page cache before loading, the
//! text search and `Y`, so that each reads the run from disk, as they must on a
//! run larger than memory: `bench/compare.sh` compares a ten-million-pair
//! run with a one-million-pair one read the same way.
//!
//! `ROUNDS=N` (default 3) does each operation N times over and prints the
//! median of the tries, with the fastest and the slowest: on a shared
//! machine one try of an operation moves by a third from the next, so a
//! ratio of one try against one try says little. The query is typed N times
//! (each key's median, the worst of those printed), the text search run N
//! times (the run's pages dropped before each under `COLD=1`), the facets
//! and the summary opened N times, and the undo of `Y y` done N times
//! (redone in between; `Y y` itself once, see below). `SORT_ROUNDS=N` sorts
//! on each key N times (default 5).
//!
//! `PAUSE_BEFORE_UNDO=S` waits S seconds once `Y y` is done and prints
//! `# undo starts`, so that a profiler can attach for the undo alone
//! (`perf record -p PID`). `PAUSE_BEFORE_SUMMARY=S` does the same before
//! the summary, printing `# summary starts`.

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use triage::tui::action::Action;
use triage::tui::app;
use triage::tui::keymap::Keymap;
use triage::tui::listing::{Sort, SortCache, SortKey, SortWarmup, sort_rows_with};
use triage::tui::style::Theme;
use triage::tui::{testing, ui};

const QUERY: &str = "status:fail family:state-noise dp<-0.05";

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// CPU time of the whole process (every thread), in ms: steadier than wall
/// time on a shared machine.
fn cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1000.0 + ts.tv_nsec as f64 / 1e6
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v.get(i).copied().unwrap_or(f64::NAN)
}

/// The tries of one operation: wall and CPU time of each, in ms.
#[derive(Default)]
struct Tries {
    wall: Vec<f64>,
    cpu: Vec<f64>,
}

impl Tries {
    /// Time `f` once more.
    fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let (t, cpu) = (Instant::now(), cpu_ms());
        let out = f();
        self.wall.push(ms(t.elapsed()));
        self.cpu.push(cpu_ms() - cpu);
        out
    }

    fn median(&self) -> f64 {
        pct(&mut self.wall.clone(), 0.5)
    }

    fn cpu_median(&self) -> f64 {
        pct(&mut self.cpu.clone(), 0.5)
    }

    /// `name median (cpu median; N tries, fastest to slowest)`, `digits`
    /// after the point.
    fn print(&self, name: &str, digits: usize) {
        let mut wall = self.wall.clone();
        let (lo, hi) = (pct(&mut wall, 0.0), pct(&mut wall, 1.0));
        println!(
            "{name} {:.digits$} (cpu {:.digits$}; {} tries, {lo:.digits$} to {hi:.digits$})",
            self.median(),
            self.cpu_median(),
            self.wall.len(),
        );
    }
}

/// A count from the environment variable `var`, at least 1, or `default`.
fn count_var(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

fn proc_status(field: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .map(|l| l[field.len()..].trim().to_string())
        })
        .unwrap_or_else(|| "?".into())
}

/// The operations named in `OPS` (every one when it is unset or empty).
struct Ops(Option<Vec<String>>);

impl Ops {
    const NAMES: [&str; 7] = [
        "query", "sort", "render", "next", "facets", "summary", "accept",
    ];

    fn from_env() -> Ops {
        let Ok(list) = std::env::var("OPS") else {
            return Ops(None);
        };
        let names: Vec<String> = list
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if let Some(bad) = names.iter().find(|n| !Self::NAMES.contains(&n.as_str())) {
            eprintln!(
                "OPS: unknown operation {bad:?}; known: {}",
                Self::NAMES.join(",")
            );
            std::process::exit(2);
        }
        Ops((!names.is_empty()).then_some(names))
    }

    fn wants(&self, name: &str) -> bool {
        self.0
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == name))
    }
}

/// Drop the run's pages from the page cache (the kernel keeps no dirty
/// page of a file we only read), so the next pass reads it from disk.
fn drop_pages(run: &str) {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(run).expect("open the run");
    // SAFETY: a valid open descriptor; advice only.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0, "posix_fadvise");
}

/// Touch `gb` GiB of new memory, a write a page, and give it back: the
/// memory `Y y` allocates next is then memory the machine has just used. On
/// a virtual machine whose host takes idle memory back, a page touched for
/// the first time in a while costs far more than one just freed (1.9 s per
/// GiB against 0.25 s on the machine `docs/performance.md` describes), and
/// `COLD=1` frees the run's pages right before `Y`: this tells that cost
/// from triage's own.
fn warm_memory(gb: usize) {
    let t = Instant::now();
    let n = gb << 30;
    let mut block = vec![0u8; n];
    for i in (0..n).step_by(4096) {
        block[i] = 1;
    }
    drop(std::hint::black_box(block));
    println!(
        "# warm_ms {:.0} ({gb} GiB touched and freed)",
        ms(t.elapsed())
    );
}

fn main() {
    let ops = Ops::from_env();
    let cold = std::env::var_os("COLD").is_some_and(|v| v == "1");
    let warm = std::env::var("WARM")
        .ok()
        .and_then(|v| v.parse::<usize>().ok());
    let Some(run) = std::env::args().nth(1) else {
        eprintln!("usage: ops_time RUN");
        std::process::exit(2);
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let journal = dir.path().join("journal.triage.jsonl");
    let theme = Theme::dark();
    if cold {
        drop_pages(&run);
    }
    let t = Instant::now();
    let mut app = testing::app_for_size(&[run.as_str()], &journal, "bench", 200, 50, &theme);
    println!("load_ms {:.0}", ms(t.elapsed()));
    println!("pairs {}", app.index.rows.len());
    println!("rss_after_load {}", proc_status("VmRSS:"));
    println!("rss_anon_after_load {}", proc_status("RssAnon:"));
    if app.view.len() < app.index.rows.len() {
        let work = app::update(&mut app, Action::ToggleAllPairs);
        testing::run_effects(&mut app, work, &theme);
    }
    println!("view {}", app.view.len());
    println!("cold {}", u8::from(cold));

    let rounds = count_var("ROUNDS", 3);
    if ops.wants("query") {
        // A query typed one key at a time into the query bar, as a user does:
        // each key re-parses the text and, when it parses, re-filters every pair
        // (a bare word on the way, like `stat`, waits for Enter on a large run).
        // Typed `rounds` times: each key's tries, in the order typed.
        let mut keys: Vec<(&str, Tries)> = QUERY
            .char_indices()
            .map(|(i, c)| (&QUERY[..i + c.len_utf8()], Tries::default()))
            .collect();
        for round in 0..rounds {
            let _ = app.set_query("");
            let work = app::update(&mut app, Action::StartQuery);
            testing::run_effects(&mut app, work, &theme);
            for (c, (prefix, tries)) in QUERY.chars().zip(keys.iter_mut()) {
                tries.time(|| {
                    app::type_text(&mut app, &c.to_string());
                    // A text term is filtered by the runner before the next frame.
                    if app.filter_pending() {
                        app.filter_view();
                    }
                });
                let wall = tries.wall.last().copied().unwrap_or_default();
                if round == 0 && wall >= 1.0 {
                    println!("# key {prefix:?}: {wall:.2} ms, {} in view", app.view.len());
                }
            }
            let work = app::update(&mut app, Action::InputSubmit);
            testing::run_effects(&mut app, work, &theme);
        }
        println!("query_matches {}", app.view.len());
        // The key whose median is the slowest, and the median key.
        let mut medians: Vec<f64> = keys.iter().map(|(_, t)| t.median()).collect();
        if let Some((prefix, worst)) = keys
            .iter()
            .max_by(|a, b| a.1.median().total_cmp(&b.1.median()))
        {
            println!("query_worst_prefix {prefix:?} {:.2}", worst.median());
            worst.print("query_keystroke_max", 2);
            println!("query_keystroke_max_cpu {:.2}", worst.cpu_median());
        }
        println!("query_keystroke_p50 {:.2}", pct(&mut medians, 0.5));
        // The whole query applied at once (Enter, a facet, a history entry).
        let mut applied = Tries::default();
        for _ in 0..rounds.max(5) {
            applied.time(|| {
                let _ = app.set_query(QUERY);
            });
        }
        applied.print("query_apply_p50", 2);
        println!("query_apply_p50_cpu {:.2}", applied.cpu_median());
        // A text search (Enter on a bare word) reads every line again.
        // Typed, then Enter: the effect runner searches, a stretch at a
        // time on a large run, as the viewer does.
        let mut search = Tries::default();
        for _ in 0..rounds {
            let _ = app.set_query("");
            if cold {
                drop_pages(&run);
            }
            search.time(|| {
                let _ = app::update(&mut app, Action::StartQuery);
                app::type_text(&mut app, "timeout");
                let work = app::update(&mut app, Action::InputSubmit);
                testing::run_effects(&mut app, work, &theme);
            });
        }
        search.print("text_search_ms", 0);
        println!("text_search_matches {}", app.view.len());
        let _ = app.set_query("");
    }

    if ops.wants("sort") {
        // Sorting every pair on each key. The string ranks and the sort's
        // buffers are kept between sorts as the app keeps them, made ahead
        // by the warm-up the app starts once the run is indexed (timed on
        // its own); a sort made before the warm-up is ready, which ranks
        // every interned string and maps fresh buffers, is timed last.
        let all: Vec<u32> = (0..app.index.rows.len() as u32).collect();
        // The ranking alone, as the first sort on a string column does it.
        let (t, cpu) = (Instant::now(), cpu_ms());
        let ranks = app.index.strings().ranks();
        println!(
            "rank_strings_ms {:.1} (cpu {:.1}), {} strings",
            ms(t.elapsed()),
            cpu_ms() - cpu,
            ranks.len()
        );
        drop(ranks);
        // What the app makes on a thread of its own once the run is
        // indexed, while the reviewer reads the first screen: the ranks and
        // the buffers' pages.
        let (t, cpu) = (Instant::now(), cpu_ms());
        let (strings, rows) = (app.index.strings().clone(), all.len());
        let warmup = std::thread::spawn(move || SortWarmup::make_aside(&strings, rows))
            .join()
            .expect("the warm-up");
        println!(
            "sort_warmup_ms {:.1} (cpu {:.1})",
            ms(t.elapsed()),
            cpu_ms() - cpu
        );
        let mut cache = SortCache::default();
        cache.warm(warmup);
        let sort_rounds = count_var("SORT_ROUNDS", 5);
        let mut sorts = Vec::new();
        let mut sorts_cpu = Vec::new();
        for key in [
            SortKey::Status,
            SortKey::Case,
            SortKey::Case,
            SortKey::Transformation,
            SortKey::Drift,
            SortKey::Margin,
            SortKey::Route,
        ] {
            for descending in [false, true] {
                // Each sort `rounds` times over, the median kept: a sort of
                // a few ms moves by as much from one try to the next.
                let mut tries = Tries::default();
                for _ in 0..sort_rounds {
                    let mut view = all.clone();
                    tries.time(|| {
                        sort_rows_with(
                            &mut cache,
                            &app.index,
                            &app.store,
                            &mut view,
                            Sort { key, descending },
                        )
                    });
                }
                let dir = if descending { "desc" } else { "asc" };
                tries.print(&format!("sort_{key:?}_{dir}_ms"), 1);
                sorts.push(tries.median());
                sorts_cpu.push(tries.cpu_median());
            }
        }
        println!("sort_max {:.1}", pct(&mut sorts, 1.0));
        println!("sort_max_cpu {:.1}", pct(&mut sorts_cpu, 1.0));
        // A sort straight after loading, before the warm-up is ready:
        // the ranking and fresh buffers (memory the kept cache still holds).
        let mut view = all.clone();
        let t = Instant::now();
        sort_rows_with(
            &mut SortCache::default(),
            &app.index,
            &app.store,
            &mut view,
            Sort {
                key: SortKey::Case,
                descending: false,
            },
        );
        println!("sort_unwarmed_Case_ms {:.1}", ms(t.elapsed()));
    }

    // Frames are drawn at 200×50.
    let keymap = Keymap::load("default").expect("default keymap");
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).expect("test terminal");

    if ops.wants("render") {
        // Frames at 200×50.
        let mut frames = Vec::new();
        for i in 0..400 {
            if i % 4 == 0 {
                let work = app::update(&mut app, Action::NextPair);
                testing::run_effects(&mut app, work, &theme);
            }
            let t = Instant::now();
            terminal
                .draw(|f| ui::render(f, &app, &keymap, &theme))
                .expect("draw");
            frames.push(ms(t.elapsed()));
        }
        println!("render_p50 {:.3}", pct(&mut frames.clone(), 0.5));
        println!("render_p99 {:.3}", pct(&mut frames, 0.99));
    }

    if ops.wants("next") {
        // Next pair, with its line read again, parsed, derived and diffed.
        let mut next = Vec::new();
        for _ in 0..300 {
            let t = Instant::now();
            let work = app::update(&mut app, Action::NextPair);
            testing::run_effects(&mut app, work, &theme);
            next.push(ms(t.elapsed()));
        }
        println!("next_pair_p50 {:.3}", pct(&mut next.clone(), 0.5));
        println!("next_pair_p99 {:.3}", pct(&mut next, 0.99));
    }

    // The facets and the summary over every pair, each opened (counted and
    // laid out) and drawn, then closed, `rounds` times.
    for (name, action) in [
        ("facets", Action::ShowFacets),
        ("summary", Action::ShowSummary),
    ] {
        if !ops.wants(name) {
            continue;
        }
        if name == "summary" {
            pause("PAUSE_BEFORE_SUMMARY", "# summary starts");
        }
        let mut tries = Tries::default();
        for _ in 0..rounds {
            tries.time(|| {
                let work = app::update(&mut app, action);
                testing::run_effects(&mut app, work, &theme);
                terminal
                    .draw(|f| ui::render(f, &app, &keymap, &theme))
                    .expect("draw");
            });
            let work = app::update(&mut app, Action::Cancel);
            testing::run_effects(&mut app, work, &theme);
        }
        tries.print(&format!("{name}_ms"), 1);
    }

    if !ops.wants("accept") {
        return;
    }
    // Every suggestion in view accepted (`Y`, then `y` at the prompt),
    // saved to the journal, then undone in one step (`u`). `Y y` is timed
    // once: `Y` reads each failure's record key from the run and keeps it,
    // so a second `Y y` would not read the run. The undo is timed `rounds`
    // times: after the first, the step is redone (`Ctrl-r`) and undone again.
    let before = app.classified;
    if cold {
        drop_pages(&run);
    }
    if let Some(gb) = warm {
        warm_memory(gb);
    }
    let (t, cpu) = (Instant::now(), cpu_ms());
    let work = app::update(&mut app, Action::AcceptAllSuggestions);
    testing::run_effects(&mut app, work, &theme);
    // For information: `Y` alone, the record keys read and the question asked.
    println!(
        "# accept_keys_ms {:.1} (cpu {:.1})",
        ms(t.elapsed()),
        cpu_ms() - cpu
    );
    let work = app::update(&mut app, Action::Confirm);
    testing::run_effects(&mut app, work, &theme);
    println!(
        "accept_all_ms {:.1} (cpu {:.1}), {} decisions",
        ms(t.elapsed()),
        cpu_ms() - cpu,
        app.classified - before
    );
    println!("# rss_anon_after_accept {}", proc_status("RssAnon:"));
    pause("PAUSE_BEFORE_UNDO", "# undo starts");
    let mut undo = Tries::default();
    for round in 0..rounds {
        if round > 0 {
            let (t, decisions) = (Instant::now(), app.classified);
            let work = app::update(&mut app, Action::Redo);
            testing::run_effects(&mut app, work, &theme);
            println!(
                "# redo {round}: {:.1} ms, {} decisions",
                ms(t.elapsed()),
                app.classified - decisions
            );
        }
        undo.time(|| {
            let work = app::update(&mut app, Action::Undo);
            testing::run_effects(&mut app, work, &theme);
        });
        println!(
            "# undo {}: {:.1} ms, {} left; rss_anon {}",
            round + 1,
            undo.wall.last().copied().unwrap_or_default(),
            app.classified - before,
            proc_status("RssAnon:")
        );
    }
    undo.print("undo_all_ms", 1);
}

/// Waits the seconds the variable `var` names, if set, then prints `said`:
/// time for a profiler to attach to this process (`perf record -p PID`).
fn pause(var: &str, said: &str) {
    if let Some(s) = std::env::var(var).ok().and_then(|s| s.parse().ok()) {
        std::thread::sleep(Duration::from_secs_f64(s));
        println!("{said}");
    }
}
