use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let only = std::env::args().nth(2);
    if only.as_deref() == Some("row") { let data = std::fs::read_to_string(&path).unwrap(); let mut n=0; for _ in 0..3 { for l in data.lines() { n += triage::core::index::fast_row(l.as_bytes(), l).is_some() as usize; } } println!("{n}"); return; }
    if only.as_deref() == Some("scan") { let data = std::fs::read_to_string(&path).unwrap(); let mut n=0; for _ in 0..3 { for l in data.lines() { n += triage::core::fast::scan_only(l) as usize; } } println!("{n}"); return; }
    let data = std::fs::read(&path).unwrap();
    let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    let t = Instant::now();
    let mut n = 0usize;
    for l in &lines { n += std::str::from_utf8(l).is_ok() as usize; }
    println!("utf8      {:>7.3} s  {n}", t.elapsed().as_secs_f64());
    let strs: Vec<&str> = lines.iter().map(|l| std::str::from_utf8(l).unwrap()).collect();
    let t = Instant::now();
    let mut n = 0usize;
    for l in &strs { n += triage::core::fast::scan_only(l) as usize; }
    println!("scan      {:>7.3} s  {n}", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let mut n = 0usize;
    for l in &strs { n += triage::core::fast::parse_fast(l).is_some() as usize; }
    println!("parse     {:>7.3} s  {n}", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let mut n = 0usize;
    for l in &strs { n += triage::core::index::fast_row(l.as_bytes(), l).is_some() as usize; }
    println!("fast_row  {:>7.3} s  {n}", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let mut n = 0usize;
    for l in &strs { n += serde_json::from_str::<serde::de::IgnoredAny>(l).is_ok() as usize; }
    println!("serde-ign {:>7.3} s  {n}", t.elapsed().as_secs_f64());
}
