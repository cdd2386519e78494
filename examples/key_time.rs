//! Time the record key of every line of a run, both ways: the raw scanner
//! (`record_key_raw`) and a serde_json parse followed by `record_key`.
//!
//! ```text
//! cargo run --release --example key_time -- /work/data/run-100k.jsonl [ROUNDS]
//! ```
//!
//! Each round times both ways over every line on one thread (alternating
//! which goes first) and prints µs per line, by the wall clock and by the
//! thread's CPU time (steadier on a busy machine); the last lines give the
//! medians, the projected time for 2 × 1M lines (what comparing two 1M-pair
//! runs would spend on keys) and the ratio of the two ways.

use std::time::Instant;

use serde_json::Value;
use triage::core::key::{RecordKey, record_key, record_key_raw};

/// This thread's CPU time in seconds: less sensitive than the wall clock
/// to other work on a busy machine.
fn cpu() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Wall and CPU seconds of `f`, and its result.
fn timed(f: impl FnOnce() -> u64) -> (f64, f64, u64) {
    let (wall, cpu0) = (Instant::now(), cpu());
    let acc = f();
    (wall.elapsed().as_secs_f64(), cpu() - cpu0, acc)
}

fn raw(lines: &[&str]) -> u64 {
    let mut acc = 0u64;
    for line in lines {
        if let Some(RecordKey(k)) = record_key_raw(line) {
            acc = acc.wrapping_add(u64::from(k[0]));
        }
    }
    acc
}

fn serde(lines: &[&str]) -> u64 {
    let mut acc = 0u64;
    for line in lines {
        if let Ok(v) = serde_json::from_str::<Value>(line) {
            acc = acc.wrapping_add(u64::from(record_key(&v).0[0]));
        }
    }
    acc
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: key_time RUN.jsonl [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    let text = std::fs::read_to_string(&path).expect("the run reads");
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let n = lines.len() as f64;
    // Wall and CPU µs per line, per round, for each way.
    let (mut raws, mut serdes) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    for round in 0..rounds {
        let (r, s) = if round % 2 == 0 {
            let r = timed(|| raw(&lines));
            (r, timed(|| serde(&lines)))
        } else {
            let s = timed(|| serde(&lines));
            (timed(|| raw(&lines)), s)
        };
        assert_eq!(r.2, s.2, "both ways give the same keys");
        let us = |x: f64| x / n * 1e6;
        println!(
            "round {round}: raw {:.2} µs/line ({:.2} cpu), serde {:.2} µs/line ({:.2} cpu)",
            us(r.0),
            us(r.1),
            us(s.0),
            us(s.1)
        );
        raws.0.push(us(r.0));
        raws.1.push(us(r.1));
        serdes.0.push(us(s.0));
        serdes.1.push(us(s.1));
    }
    println!(
        "lines={} rounds={rounds} (medians; 2x1M lines on one thread)",
        lines.len()
    );
    let mut cpu_medians = Vec::new();
    for (name, (wall, cpu)) in [("raw", raws), ("serde", serdes)] {
        let (w, c) = (median(wall), median(cpu));
        println!(
            "{name:5} wall {w:6.2} µs/line -> {:6.2} s   cpu {c:6.2} µs/line -> {:6.2} s",
            w * 2.0,
            c * 2.0
        );
        cpu_medians.push(c);
    }
    println!("serde/raw (cpu) {:.2}", cpu_medians[1] / cpu_medians[0]);
}
