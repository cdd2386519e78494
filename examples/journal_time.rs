//! Time the decision journal at scale: saving many decisions as one step
//! (what `Y y` does), undoing that step, loading the journal again and
//! compacting it.
//!
//! ```text
//! cargo run --release --example journal_time -- [--decisions N] [RUN]
//! ```
//!
//! Without RUN the decisions are on synthetic pairs (keys made up, ids
//! `case-N`/`v-N`), so the journal's own cost is measured on any machine.
//! With RUN (say `bench/data/run-1m.jsonl`) the run is indexed first (not
//! timed), the decisions go on its failures spread over the whole run (or
//! on every Kth pair when there are fewer failures), their keys are read
//! from the run's lines (timed: what `Y` does before asking), and loading
//! also matches the journal to the run (`resolve_keys`, as the viewer does
//! on opening). N is 100,000 by default. Each step prints one line,
//! `name seconds cpu=seconds`: the wall clock, then the process's CPU time
//! (what the step costs when the machine is shared); the journal is
//! written into a temporary folder, removed at the end.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use triage::core::annotations::{AnnotationSource, AnnotationStore, Change, Saved};
use triage::core::index::{OpenOptions, RunIndex, load_run};
use triage::core::key::RecordKey;

const CATEGORIES: [&str; 4] = [
    "invariance-violation",
    "boundary-drift",
    "evidence-dropped",
    "over-sensitive",
];

fn main() -> ExitCode {
    let mut decisions = 100_000usize;
    let mut run: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--decisions" => match args.next().and_then(|n| n.parse().ok()) {
                Some(n) => decisions = n,
                None => return usage("--decisions needs a number"),
            },
            _ if a.starts_with('-') => return usage(&format!("unknown option {a}")),
            _ => run = Some(a),
        }
    }
    match measure(decisions, run.as_deref()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("journal_time: {e}");
            ExitCode::from(1)
        }
    }
}

fn usage(why: &str) -> ExitCode {
    eprintln!("journal_time: {why}\nusage: journal_time [--decisions N] [RUN]");
    ExitCode::from(2)
}

/// The process's CPU time in seconds, every thread counted.
fn cpu() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to write.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// A step's start: the wall clock and the CPU time.
struct Start(Instant, f64);

fn start() -> Start {
    Start(Instant::now(), cpu())
}

/// Print `name seconds cpu=seconds` for the step begun at `t`.
fn report(name: &str, t: Start) {
    println!(
        "{name} {:.3} cpu={:.3}",
        t.0.elapsed().as_secs_f64(),
        cpu() - t.1
    );
}

/// Decisions on synthetic pairs: distinct keys and ids.
fn synthetic(n: usize) -> Vec<Change> {
    (0..n)
        .map(|i| {
            let mut key = [0u8; 16];
            key[..8].copy_from_slice(&(i as u64).to_le_bytes());
            key[8..].copy_from_slice(&(i as u64 ^ 0x9E37_79B9_7F4A_7C15).to_le_bytes());
            change(
                RecordKey(key),
                format!("case-{}", i / 8),
                format!("v-{i}"),
                i,
            )
        })
        .collect()
}

fn change(key: RecordKey, case_id: String, variant_id: String, i: usize) -> Change {
    Change {
        key,
        case_id: case_id.into(),
        variant_id: variant_id.into(),
        category: Some(CATEGORIES[i % CATEGORIES.len()].into()),
        note: None,
        source: AnnotationSource::Suggestion,
    }
}

/// Decisions on `n` pairs of the run: its failures, spread evenly, else
/// every Kth pair. Returns them with the index.
fn on_run(n: usize, run: &str) -> Result<(RunIndex, Vec<Change>), String> {
    let t = start();
    let mut index =
        load_run(&[run.to_string()], &OpenOptions::default()).map_err(|e| format!("{run}: {e}"))?;
    println!(
        "indexed_pairs {} failures {}",
        index.rows.len(),
        index.failures
    );
    report("index", t);
    let failing: Vec<u32> = (0..index.rows.len() as u32)
        .filter(|&i| index.rows[i as usize].status().is_failure())
        .collect();
    let pool: Vec<u32> = if failing.len() >= n {
        failing
    } else {
        (0..index.rows.len() as u32).collect()
    };
    if pool.len() < n {
        return Err(format!("{run} has {} pairs, fewer than {n}", pool.len()));
    }
    let step = pool.len() / n.max(1);
    let rows: Vec<u32> = (0..n).map(|k| pool[k * step]).collect();
    let t = start();
    let unread = index.ensure_keys(&rows);
    report("read_keys", t);
    if unread > 0 {
        return Err(format!("{unread} lines of {run} could not be read again"));
    }
    let changes = rows
        .iter()
        .enumerate()
        .filter_map(|(k, &r)| {
            let row = index.rows[r as usize];
            let key = index.key(&row)?;
            Some(change(
                key,
                index.str(row.case).to_string(),
                index.str(row.variant).to_string(),
                k,
            ))
        })
        .collect();
    Ok((index, changes))
}

/// Fail unless `store` holds exactly `n` decisions.
fn check(store: &AnnotationStore, n: usize) -> Result<(), String> {
    match store.all().len() {
        m if m == n => Ok(()),
        m => Err(format!("the journal holds {m} decisions, not {n}")),
    }
}

fn open(path: &Path) -> Result<AnnotationStore, String> {
    AnnotationStore::open(path, "bench").map_err(|e| format!("{}: {e:?}", path.display()))
}

fn measure(n: usize, run: Option<&str>) -> Result<(), String> {
    let (mut index, changes) = match run {
        Some(run) => {
            let (index, changes) = on_run(n, run)?;
            (Some(index), changes)
        }
        None => (None, synthetic(n)),
    };
    let dir = tempfile::tempdir().map_err(|e| format!("temporary folder: {e}"))?;
    let path = dir.path().join("bench.triage.jsonl");
    println!("decisions {}", changes.len());

    // Save every decision as one durable step, as `Y y` does.
    let mut store = open(&path)?;
    let t = start();
    let previous = store
        .apply(changes.clone())
        .map_err(|e| format!("save: {e:?}"))?;
    report("save_one_step", t);
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!("journal_bytes {bytes}");

    // Undo it: one step that restores "no decision" on each pair, checked
    // against what the save wrote (a guarded save, as the viewer's undo).
    let before: Vec<Change> = changes
        .iter()
        .zip(&previous)
        .map(|(c, p)| Change {
            category: p.as_ref().and_then(|a| a.category),
            note: p.as_ref().and_then(|a| a.note.clone()),
            source: AnnotationSource::Manual,
            ..c.clone()
        })
        .collect();
    let t = start();
    match store
        .save(before, &|_| Vec::new(), Some(&changes))
        .map_err(|e| format!("undo: {e:?}"))?
    {
        Saved::Done(_) => {}
        Saved::Conflict(c) => return Err(format!("undo met {} conflicts", c.len())),
    }
    report("undo_one_step", t);
    // And redo, so that the journal holds three events per pair.
    store
        .apply(changes.clone())
        .map_err(|e| format!("redo: {e:?}"))?;
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!("journal_bytes_after_undo_redo {bytes}");

    // Replay those three events per pair, read-only (as an export does).
    let t = start();
    let read = AnnotationStore::read(&path).map_err(|e| format!("read: {e:?}"))?;
    report("replay_3_events_per_pair", t);
    check(&read, changes.len())?;
    drop(read);

    // Compact them into one event per pair, under the lock, fsynced.
    let t = start();
    store.compact().map_err(|e| format!("compact: {e}"))?;
    report("compact", t);
    let after = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!("journal_bytes_compacted {after}");
    drop(store);

    // Load as the viewer does: open (lock, replay, compact when needed),
    // then match the decisions to the run's pairs.
    let t = start();
    let store = open(&path)?;
    report("load", t);
    check(&store, changes.len())?;
    if let Some(index) = index.as_mut() {
        let t = start();
        index.resolve_keys(&store);
        report("resolve_keys", t);
        println!("keys_known {}", index.known_keys());
    }
    Ok(())
}
