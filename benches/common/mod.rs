//! Shared set-up for the benches: a generated run under `bench/data/`.

use std::path::PathBuf;

#[allow(dead_code, unreachable_pub)]
#[path = "../../examples/gen_run.rs"]
mod gen_run;

/// The generated bulk run of `pairs` pairs (made once, then reused).
pub fn generated_run(pairs: u64) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/data");
    let path = dir.join(format!("bench-{pairs}.jsonl"));
    if !path.exists() {
        std::fs::create_dir_all(&dir).expect("bench/data");
        let mut buf = Vec::new();
        gen_run::write_bulk(&mut buf, pairs, 20_261_128, 0.25).expect("generate");
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, &buf).expect("write run");
        std::fs::rename(&tmp, &path).expect("rename run");
    }
    path
}
