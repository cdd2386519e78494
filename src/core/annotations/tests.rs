use super::*;
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::io::Write;
use std::time::Duration;
use tempfile::TempDir;

fn key(n: u8) -> RecordKey {
    RecordKey([n; 16])
}

fn change(n: u8, case: &str, cat: Option<&str>, note: Option<&str>) -> Change {
    Change {
        key: key(n),
        case_id: case.into(),
        variant_id: "v1".into(),
        category: cat.map(Name::new),
        note: note.map(str::to_string),
        source: AnnotationSource::Manual,
    }
}

fn journal(dir: &TempDir) -> PathBuf {
    dir.path().join("run.jsonl.triage.jsonl")
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn event(n: u8, case: &str, cat: Option<&str>, note: Option<&str>) -> String {
    let ann = Annotation {
        key: key(n),
        case_id: case.into(),
        variant_id: "v1".into(),
        category: cat.map(Name::new),
        note: note.map(str::to_string),
        reviewer: "ann".into(),
        at: "2026-01-01T00:00:00Z".into(),
        source: AnnotationSource::Manual,
        nonce: 0,
        carried_from: None,
    };
    encode(&ann, None, None)
}

/// Root ignores file modes; permission tests cannot fail the way they mean to then.
#[cfg(unix)]
fn permissions_are_enforced(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let probe = dir.join("mode-probe");
    fs::write(&probe, "").unwrap();
    fs::set_permissions(&probe, fs::Permissions::from_mode(0o444)).unwrap();
    OpenOptions::new().append(true).open(&probe).is_err()
}

#[test]
fn apply_get_undo_and_reopen() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    assert_eq!(store.access(), &Access::ReadWrite);
    assert_eq!(store.reviewer(), "ann");
    assert_eq!(store.path(), path);

    let prev = store
        .apply(vec![
            change(1, "c1", Some("boundary"), None),
            change(2, "c2", None, Some("odd \"quote\"\nsecond line")),
        ])
        .unwrap();
    assert_eq!(prev, vec![None, None]);
    let a = store.get(&key(1)).unwrap();
    assert_eq!(a.category.as_deref(), Some("boundary"));
    assert_eq!(a.reviewer, "ann");
    assert_eq!(a.at.len(), "2026-11-29T13:05:00Z".len());

    // Change then undo: the previous value comes back and is audited as `prev`.
    let before = store
        .apply(vec![change(1, "c1", Some("distractor"), Some("n"))])
        .unwrap();
    let old = before[0].clone().unwrap();
    assert_eq!(old.category.as_deref(), Some("boundary"));
    store
        .apply(vec![change(
            1,
            "c1",
            old.category.as_deref(),
            old.note.as_deref(),
        )])
        .unwrap();
    assert_eq!(
        store.get(&key(1)).unwrap().category.as_deref(),
        Some("boundary")
    );
    assert_eq!(store.get(&key(1)).unwrap().note, None);
    let last: serde_json::Value = serde_json::from_str(lines(&path).last().unwrap()).unwrap();
    assert_eq!(last["prev"]["category"], "distractor");
    assert_eq!(last["prev"]["note"], "n");
    assert_eq!(store.pending(), 0);
    drop(store);

    let store = AnnotationStore::open(&path, "bob").unwrap();
    assert_eq!(store.all().len(), 2);
    assert_eq!(
        store.get(&key(1)).unwrap().category.as_deref(),
        Some("boundary")
    );
    assert_eq!(
        store.get(&key(2)).unwrap().note.as_deref(),
        Some("odd \"quote\"\nsecond line")
    );
    assert_eq!(store.get(&key(1)).unwrap().reviewer, "ann");
    assert_eq!(store.skipped_lines(), (0, None));
}

#[test]
fn event_has_the_documented_shape() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    let mut c = change(7, "c", Some("boundary"), None);
    c.source = AnnotationSource::Suggestion;
    store.apply(vec![c]).unwrap();
    let line = &lines(&path)[0];
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let fields: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(
        fields,
        [
            "v",
            "key",
            "case_id",
            "variant_id",
            "category",
            "note",
            "reviewer",
            "at",
            "source",
            "prev",
            "n"
        ]
    );
    assert_eq!(v["key"], "07".repeat(16));
    assert_eq!(v["source"], "suggestion");
    assert_eq!(v["note"], serde_json::Value::Null);
    assert_eq!(v["prev"], serde_json::Value::Null);
    let n = v["n"].as_str().unwrap();
    assert!(
        n.len() == 16 && n.bytes().all(|b| b.is_ascii_hexdigit()),
        "{n}"
    );
    // Annotation itself (de)serialises with the key as hex, without the
    // event's nonce.
    let ann = store.get(&key(7)).unwrap();
    assert_eq!(format!("{:016x}", ann.nonce), n);
    let json = serde_json::to_string(ann).unwrap();
    assert!(json.contains(&"07".repeat(16)));
    assert!(!json.contains(n));
    let back = serde_json::from_str::<Annotation>(&json).unwrap();
    assert_eq!(
        Annotation {
            nonce: ann.nonce,
            ..back
        },
        *ann
    );
}

#[test]
fn replay_is_last_wins_and_a_null_event_clears() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let text = [
        event(1, "c1", Some("a"), None),
        event(2, "c2", Some("b"), None),
        event(1, "c1", Some("c"), Some("x")),
        event(2, "c2", None, None),
        event(3, "c3", None, Some("only a note")),
    ]
    .join("\n");
    fs::write(&path, text + "\n").unwrap();
    let store = AnnotationStore::read(&path).unwrap();
    assert_eq!(store.get(&key(1)).unwrap().category.as_deref(), Some("c"));
    assert_eq!(store.get(&key(1)).unwrap().note.as_deref(), Some("x"));
    assert!(store.get(&key(2)).is_none());
    assert_eq!(store.get(&key(3)).unwrap().category, None);
    let keys: Vec<RecordKey> = store.all().iter().map(|a| a.key).collect();
    assert_eq!(keys, [key(1), key(3)]);
    assert!(matches!(store.access(), Access::ReadOnly { .. }));
}

#[test]
fn stale_and_orphans() {
    let dir = TempDir::new().unwrap();
    let mut store = AnnotationStore::open(&journal(&dir), "ann").unwrap();
    store
        .apply(vec![change(1, "c1", Some("old"), None)])
        .unwrap();
    store.apply(vec![change(2, "c2", Some("x"), None)]).unwrap();
    store
        .apply(vec![change(3, "c1", Some("newer"), None)])
        .unwrap();

    // The run now has c1/v1 under key 4: the newest other-key annotation is stale.
    let stale = store.stale_for("c1", "v1", &key(4)).unwrap();
    assert_eq!(stale.category.as_deref(), Some("newer"));
    let stale = store.stale_for("c1", "v1", &key(3)).unwrap();
    assert_eq!(stale.category.as_deref(), Some("old"));
    assert!(store.stale_for("c2", "v1", &key(2)).is_none());
    assert!(store.stale_for("zz", "v1", &key(2)).is_none());

    let present: HashSet<RecordKey> = [key(4)].into();
    let ids: HashSet<(&str, &str)> = [("c1", "v1")].into();
    let orphans: Vec<RecordKey> = store
        .orphans(&present, &ids)
        .iter()
        .map(|a| a.key)
        .collect();
    assert_eq!(orphans, [key(2)]);
    let all: Vec<RecordKey> = store
        .orphans(&HashSet::new(), &HashSet::new())
        .iter()
        .map(|a| a.key)
        .collect();
    assert_eq!(all, [key(1), key(3), key(2)]);

    // Clearing the newer one brings the older one back as the stale value.
    store.apply(vec![change(3, "c1", None, None)]).unwrap();
    let stale = store.stale_for("c1", "v1", &key(4)).unwrap();
    assert_eq!(stale.category.as_deref(), Some("old"));
}

#[test]
fn torn_last_line_is_skipped_then_compacted_away() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let good = event(1, "c1", Some("a"), None);
    let torn = &event(2, "c2", Some("b"), None)[..40];
    fs::write(&path, format!("{good}\n{torn}")).unwrap();

    let read = AnnotationStore::read(&path).unwrap();
    assert_eq!(read.skipped_lines(), (1, Some(2)));
    assert_eq!(read.all().len(), 1);
    drop(read);

    let store = AnnotationStore::open(&path, "ann").unwrap();
    assert_eq!(store.skipped_lines(), (1, Some(2)));
    assert_eq!(lines(&path), [good]);
    // Moved, not dropped: the side file holds the torn line as it was.
    let side = with_suffix(&path, ".unreadable");
    assert_eq!(fs::read_to_string(&side).unwrap(), format!("{torn}\n"));
    let (bad, more) = store.unreadable();
    assert!(!more);
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].line, 2);
    assert_eq!(bad[0].moved_to.as_deref(), Some(side.as_path()));
    assert!(bad[0].reason.starts_with("cut off"), "{}", bad[0].reason);
}

#[test]
fn append_after_a_torn_line_starts_a_new_line() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    store.apply(vec![change(1, "c1", Some("a"), None)]).unwrap();
    // Half an event, as a crash mid-write would leave it.
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(&event(9, "c9", Some("z"), None).as_bytes()[..30])
        .unwrap();
    drop(f);
    store.apply(vec![change(2, "c2", Some("b"), None)]).unwrap();
    let text = lines(&path);
    assert_eq!(text.len(), 3);
    assert!(text[2].starts_with("{\"v\":1"));

    let read = AnnotationStore::read(&path).unwrap();
    assert_eq!(read.skipped_lines(), (1, Some(2)));
    assert_eq!(read.all().len(), 2);
}

#[test]
fn complete_final_line_without_newline_is_accepted() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    fs::write(&path, event(1, "c1", Some("a"), None)).unwrap();
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    assert_eq!(store.skipped_lines(), (0, None));
    store.apply(vec![change(2, "c2", Some("b"), None)]).unwrap();
    assert_eq!(lines(&path).len(), 2);
    assert_eq!(AnnotationStore::read(&path).unwrap().all().len(), 2);
}

#[test]
fn bad_lines_are_counted_and_newer_lines_survive() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let text = [
        event(1, "c1", Some("a"), None),
        "not json".to_string(),
        event(2, "c2", Some("b"), None).replace(&"02".repeat(16), "xyz"),
        String::new(),
        r#"{"v":2,"id":"whatever a newer triage writes"}"#.to_string(),
        event(3, "c3", Some("c"), None),
    ]
    .join("\n")
        + "\n";
    fs::write(&path, &text).unwrap();
    let store = AnnotationStore::open(&path, "ann").unwrap();
    assert_eq!(store.skipped_lines(), (3, Some(2)));
    assert_eq!(store.all().len(), 2);
    // A newer format's line must not be compacted away by an older triage.
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn a_file_that_is_not_a_journal_is_left_alone() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("run.jsonl");
    let run = "{\"case_id\":\"c\",\"variant_id\":\"v\"}\n{\"case_id\":\"d\"}\n";
    fs::write(&path, run).unwrap();
    let err = AnnotationStore::open(&path, "ann").unwrap_err();
    assert!(matches!(err, StoreOpenError::NotAJournal { line: 1, .. }));
    assert!(err.to_string().contains("run.jsonl"));
    assert_eq!(fs::read_to_string(&path).unwrap(), run);
    assert!(matches!(
        AnnotationStore::read(&path),
        Err(StoreOpenError::NotAJournal { .. })
    ));
    // A journal torn in its very first write is still a journal.
    fs::write(&path, &event(1, "c", Some("a"), None)[..20]).unwrap();
    let store = AnnotationStore::open(&path, "ann").unwrap();
    assert_eq!(store.skipped_lines(), (1, Some(1)));
    assert_eq!(fs::read_to_string(&path).unwrap(), "");
    assert_eq!(
        fs::read_to_string(with_suffix(&path, ".unreadable")).unwrap(),
        format!("{}\n", &event(1, "c", Some("a"), None)[..20])
    );
}

#[test]
fn compaction_keeps_exactly_the_live_annotations() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    for round in 0..3 {
        let cat = format!("cat{round}");
        store
            .apply((1..=5).map(|n| change(n, "c", Some(&cat), None)).collect())
            .unwrap();
    }
    store
        .apply(vec![
            change(2, "c", None, None),
            change(4, "c", None, Some("")),
        ])
        .unwrap();
    assert_eq!(lines(&path).len(), 17);
    store.compact().unwrap();
    let text = lines(&path);
    // One event per pair: the three annotated ones, and the two cleared
    // ones as clears (so an older copy or journal cannot bring them back).
    assert_eq!(text.len(), 5);
    let mut keys = Vec::new();
    let mut cleared = Vec::new();
    for line in &text {
        let Line::Event(ann, prev, _) = parse_line(line.as_bytes()) else {
            panic!("unparseable compacted line {line}");
        };
        if ann.is_empty() {
            assert_eq!(prev.unwrap().category.as_deref(), Some("cat2"));
            cleared.push(ann.key);
            continue;
        }
        assert_eq!(ann.category.as_deref(), Some("cat2"));
        assert_eq!(prev.unwrap().category.as_deref(), Some("cat1"));
        keys.push(ann.key);
    }
    keys.sort();
    cleared.sort();
    assert_eq!(keys, [key(1), key(3), key(5)]);
    assert_eq!(cleared, [key(2), key(4)]);
    assert!(
        !dir.path()
            .read_dir()
            .unwrap()
            .flatten()
            .any(|e| { e.file_name().to_string_lossy().contains(".tmp-") })
    );
    drop(store);
    let store = AnnotationStore::open(&path, "ann").unwrap();
    assert_eq!(store.all().len(), 3);
    assert!(store.get(&key(2)).is_none());
}

#[test]
fn open_compacts_and_removes_leftover_temp_files() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let leftover = with_suffix(&path, ".tmp-4242");
    fs::write(&leftover, "junk").unwrap();
    let text = [
        event(1, "c1", Some("a"), None),
        event(1, "c1", Some("b"), None),
    ]
    .join("\n");
    fs::write(&path, text).unwrap();
    let store = AnnotationStore::open(&path, "ann").unwrap();
    assert!(!leftover.exists());
    assert_eq!(lines(&path).len(), 1);
    assert_eq!(store.get(&key(1)).unwrap().category.as_deref(), Some("b"));
}

#[test]
fn two_instances_share_one_journal_and_merge_each_others_decisions() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut first = AnnotationStore::open(&path, "ann").unwrap();
    let mut second = AnnotationStore::open(&path, "bob").unwrap();
    assert_eq!(first.access(), &Access::ReadWrite);
    assert_eq!(second.access(), &Access::ReadWrite);

    first.apply(vec![change(1, "c1", Some("a"), None)]).unwrap();
    second
        .apply(vec![change(2, "c2", Some("b"), None)])
        .unwrap();
    // The second saw the first's decision when it saved its own.
    assert_eq!(second.get(&key(1)).unwrap().category.as_deref(), Some("a"));
    assert_eq!(second.refresh().unwrap(), 1);
    assert_eq!(second.refresh().unwrap(), 0);
    assert!(first.get(&key(2)).is_none());
    assert_eq!(first.refresh().unwrap(), 1);
    assert_eq!(first.get(&key(2)).unwrap().reviewer, "bob");

    // The same pair in both: each reviewer's decision stays theirs, and
    // the pair, disagreed on, has no resolved category.
    first.apply(vec![change(3, "c3", Some("x"), None)]).unwrap();
    second
        .apply(vec![change(3, "c3", Some("y"), None)])
        .unwrap();
    first.refresh().unwrap();
    for store in [&first, &second] {
        assert_eq!(store.get(&key(3)).unwrap().category, None);
        assert_eq!(store.agreement(&key(3)), Some(Agreement::Disagree));
        let said: Vec<_> = store
            .decisions(&key(3))
            .iter()
            .map(|a| (a.reviewer.to_string(), a.category.unwrap().to_string()))
            .collect();
        assert_eq!(
            said,
            vec![
                ("ann".to_string(), "x".to_string()),
                ("bob".to_string(), "y".to_string())
            ]
        );
    }

    // A compaction by one keeps the other's decisions, and the other
    // notices the new file and keeps appending to it.
    first.compact().unwrap();
    assert_eq!(lines(&path).len(), 4);
    second
        .apply(vec![change(4, "c4", None, Some("n"))])
        .unwrap();
    assert_eq!(second.refresh().unwrap(), 0);
    assert_eq!(first.refresh().unwrap(), 1);
    second.compact().unwrap();
    first.apply(vec![change(1, "c1", None, None)]).unwrap();
    assert_eq!(second.refresh().unwrap(), 1);
    assert!(second.get(&key(1)).is_none());

    drop(first);
    drop(second);
    let third = AnnotationStore::open(&path, "cy").unwrap();
    let cats: Vec<_> = third
        .all()
        .iter()
        .map(|a| {
            (
                a.case_id.to_string(),
                a.category.map(String::from),
                a.note.clone(),
            )
        })
        .collect();
    assert_eq!(
        cats,
        vec![
            ("c2".to_string(), Some("b".to_string()), None),
            ("c3".to_string(), None, None),
            ("c4".to_string(), None, Some("n".to_string())),
        ]
    );
    assert_eq!(third.skipped_lines(), (0, None));
}

#[test]
fn a_save_waits_for_the_lock_and_then_lands_after_the_holder() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    // A journal that exists has its lock file from the start.
    fs::write(&path, "").unwrap();
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    let holder = File::open(with_suffix(&path, ".lock")).unwrap();
    holder.lock().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let r = store.apply(vec![change(1, "c1", Some("a"), None)]);
        tx.send(()).unwrap();
        (r.is_ok(), store)
    });
    // While the lock is held, the save does not write.
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
    assert_eq!(fs::read_to_string(&path).unwrap(), "");
    fs::write(&path, format!("{}\n", event(2, "c2", Some("b"), None))).unwrap();
    holder.unlock().unwrap();
    let (ok, store) = waiter.join().unwrap();
    assert!(ok);
    assert_eq!(lines(&path).len(), 2);
    assert_eq!(store.get(&key(2)).unwrap().category.as_deref(), Some("b"));
    assert!(lines(&path)[1].contains(&key(1).to_string()));
}

#[test]
fn a_save_that_cannot_get_the_lock_stays_pending() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    fs::write(&path, "").unwrap();
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    let holder = File::open(with_suffix(&path, ".lock")).unwrap();
    holder.lock().unwrap();
    let lock = store.journals[0].lock.take().unwrap();
    assert!(lock_within(&lock, Duration::from_millis(50)).is_err());
    store.journals[0].lock = Some(lock);
    holder.unlock().unwrap();
    store.apply(vec![change(1, "c1", Some("a"), None)]).unwrap();
    assert_eq!(store.pending(), 0);
}

#[cfg(unix)]
#[test]
fn read_only_journal_file_keeps_decisions_pending() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new().unwrap();
    if !permissions_are_enforced(dir.path()) {
        eprintln!("skipped: running with privileges that ignore file modes");
        return;
    }
    let path = journal(&dir);
    fs::write(&path, event(1, "c1", Some("a"), None) + "\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    let err = store
        .apply(vec![change(2, "c2", Some("b"), None)])
        .unwrap_err();
    assert!(matches!(err, SaveError::Io { pending: 1, .. }));
    assert!(err.to_string().contains("make the file writable"));
    assert!(store.pending() > 0);
    assert!(store.get(&key(2)).is_some());
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    store.retry_pending().unwrap();
    assert_eq!(store.pending(), 0);
    assert_eq!(AnnotationStore::read(&path).unwrap().all().len(), 2);
}

#[cfg(unix)]
#[test]
fn unwritable_folder_is_reported_as_not_writable() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new().unwrap();
    if !permissions_are_enforced(dir.path()) {
        eprintln!("skipped: running with privileges that ignore file modes");
        return;
    }
    let locked = dir.path().join("locked");
    fs::create_dir(&locked).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).unwrap();
    let run = locked.join("run.jsonl");
    let err = AnnotationStore::open(&with_suffix(&run, ".triage.jsonl"), "ann").unwrap_err();
    assert!(matches!(err, StoreOpenError::NotWritable { .. }));
    assert!(!folder_writable(&locked));
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn failed_write_keeps_pending_and_a_retry_recovers() {
    // Root can write anything, so break the journal by making it a folder.
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    store.apply(vec![change(1, "c1", Some("a"), None)]).unwrap();
    fs::remove_file(&path).unwrap();
    fs::create_dir(&path).unwrap();
    let err = store
        .apply(vec![
            change(2, "c2", Some("b"), None),
            change(3, "c3", Some("c"), None),
        ])
        .unwrap_err();
    assert!(matches!(err, SaveError::Io { pending: 2, .. }));
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains("2 decisions are kept in memory"), "{msg}");
    assert_eq!(store.pending(), 2);
    assert!(store.compact().is_ok());
    assert!(store.retry_pending().is_err());

    // The journal is gone entirely now: the retry writes all that is known.
    fs::remove_dir(&path).unwrap();
    store.retry_pending().unwrap();
    assert_eq!(store.pending(), 0);
    drop(store);
    let store = AnnotationStore::read(&path).unwrap();
    assert_eq!(store.all().len(), 3);
}

/// A store of reviewer "ann" whose empty journal became, once opened, a
/// full disk (a symlink to /dev/full); `None` where there is no /dev/full.
#[cfg(target_os = "linux")]
fn store_on_a_full_disk(dir: &TempDir) -> Option<(PathBuf, AnnotationStore)> {
    let dev_full = Path::new("/dev/full");
    if !dev_full.exists() {
        return None;
    }
    let path = journal(dir);
    fs::write(&path, "").unwrap();
    let store = AnnotationStore::open(&path, "ann").unwrap();
    fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(dev_full, &path).unwrap();
    Some((path, store))
}

#[cfg(target_os = "linux")]
#[test]
fn full_disk_keeps_pending_with_a_clear_message() {
    // Written through the page cache, and around it as a large save is.
    for around_the_cache in [false, true] {
        full_disk_keeps_pending(around_the_cache);
    }
}

#[cfg(target_os = "linux")]
fn full_disk_keeps_pending(around_the_cache: bool) {
    let dir = TempDir::new().unwrap();
    let Some((path, mut store)) = store_on_a_full_disk(&dir) else {
        return;
    };
    if around_the_cache {
        store.journals[0].direct_from = 0;
    }
    let err = store
        .apply(vec![change(1, "c1", Some("a"), None)])
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("cannot save to {}: ", path.display())),
        "{msg}"
    );
    assert!(msg.contains("os error 28"), "{msg}");
    assert!(msg.contains("1 decision is kept in memory"), "{msg}");
    assert!(msg.ends_with("free space or quit with care"), "{msg}");
    assert_eq!(store.pending(), 1);
    fs::remove_file(&path).unwrap();
    store.retry_pending().unwrap();
    assert_eq!(lines(&path).len(), 1);
}

#[test]
fn read_of_a_missing_journal_is_not_found() {
    let dir = TempDir::new().unwrap();
    let err = AnnotationStore::read(&journal(&dir)).unwrap_err();
    assert!(matches!(err, StoreOpenError::NotFound { .. }));
    let err = AnnotationStore::open(dir.path(), "ann").unwrap_err();
    assert!(matches!(err, StoreOpenError::Io { .. }));
}

#[test]
fn journal_path_prefers_explicit_then_sidecar() {
    let dir = TempDir::new().unwrap();
    let run = dir.path().join("run.jsonl");
    fs::write(&run, "").unwrap();
    let explicit = dir.path().join("elsewhere.jsonl");
    assert_eq!(
        journal_path_for(&run, Some(&explicit)).unwrap(),
        (explicit, false)
    );
    assert_eq!(
        journal_path_for(&run, None).unwrap(),
        (dir.path().join("run.jsonl.triage.jsonl"), false)
    );
    assert_eq!(
        dir.path().read_dir().unwrap().count(),
        1,
        "probe left behind"
    );
    let digest = run_digest(&run);
    assert_eq!(digest.len(), 16);
    assert!(digest.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(digest, run_digest(&dir.path().join(".").join("run.jsonl")));
}

#[test]
fn journal_path_errors_read_as_before() {
    let folder = PathBuf::from("/runs");
    assert_eq!(
        JournalPathError::NoDataFolder {
            folder: folder.clone()
        }
        .to_string(),
        "/runs is not writable and there is no data folder to keep annotations in (is HOME set?) — pass --annotations PATH"
    );
    assert_eq!(
        JournalPathError::DataFolderNotWritable {
            folder,
            data: PathBuf::from("/data/runs"),
            error: io::Error::other("read-only"),
        }
        .to_string(),
        "/runs is not writable, and neither is /data/runs: read-only — pass --annotations PATH"
    );
}

#[test]
fn timestamps_are_rfc3339_utc_seconds() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
    assert_eq!(rfc3339(1_795_957_500), "2026-11-29T13:05:00Z");
    assert_eq!(rfc3339(4_107_542_399), "2100-02-28T23:59:59Z");
    let now = now_rfc3339();
    assert_eq!(now.len(), 20);
    assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T');
}

type Model = HashMap<RecordKey, (Option<Name>, Option<String>, AnnotationSource)>;

fn state(store: &AnnotationStore) -> Model {
    store
        .all()
        .into_iter()
        .map(|a| (a.key, (a.category, a.note.clone(), a.source)))
        .collect()
}

fn maybe_text() -> impl Strategy<Value = Option<String>> {
    prop::option::of("[a-z\"\\\\\n é]{0,5}")
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn reopened_store_equals_the_model(
        batches in prop::collection::vec(
            (
                prop::collection::vec((0u8..5, maybe_text(), maybe_text(), any::<bool>()), 1..4),
                any::<bool>(),
            ),
            1..10,
        )
    ) {
        let dir = TempDir::new().unwrap();
        let path = journal(&dir);
        let mut model = Model::new();
        // Every pair ever changed keeps one event (a cleared one, a clear).
        let mut seen: HashSet<RecordKey> = HashSet::new();
        let mut store = AnnotationStore::open(&path, "ann").unwrap();
        for (batch, reopen) in batches {
            let changes = batch
                .into_iter()
                .map(|(n, category, note, suggested)| {
                    let source = if suggested {
                        AnnotationSource::Suggestion
                    } else {
                        AnnotationSource::Manual
                    };
                    seen.insert(key(n));
                    let category = category.map(Name::from);
                    let (c, nt) = (non_empty(category), non_empty(note.clone()));
                    if c.is_none() && nt.is_none() {
                        model.remove(&key(n));
                    } else {
                        model.insert(key(n), (c, nt, source));
                    }
                    Change {
                        key: key(n),
                        case_id: format!("c{}", n % 3).into(),
                        variant_id: "v".into(),
                        category,
                        note,
                        source,
                    }
                })
                .collect();
            store.apply(changes).unwrap();
            prop_assert_eq!(&state(&store), &model);
            if reopen {
                drop(store);
                store = AnnotationStore::open(&path, "ann").unwrap();
                prop_assert_eq!(lines(&path).len(), seen.len());
            }
        }
        drop(store);
        let store = AnnotationStore::open(&path, "ann").unwrap();
        prop_assert_eq!(&state(&store), &model);
        prop_assert_eq!(store.skipped_lines(), (0, None));
        drop(store);
        prop_assert_eq!(&state(&AnnotationStore::read(&path).unwrap()), &model);
    }

    #[test]
    fn two_stores_interleaving_saves_and_compactions_lose_nothing(
        ops in prop::collection::vec((any::<bool>(), 0u8..6, 0u8..4, maybe_text()), 1..24)
    ) {
        let dir = TempDir::new().unwrap();
        let path = journal(&dir);
        // One reviewer in two terminals: the later save wins.
        let mut stores = [
            AnnotationStore::open(&path, "ann").unwrap(),
            AnnotationStore::open(&path, "ann").unwrap(),
        ];
        let mut model = Model::new();
        for (second, op, n, note) in ops {
            let store = &mut stores[usize::from(second)];
            match op {
                0 => store.compact().unwrap(),
                1 => {
                    store.refresh().unwrap();
                }
                2 => {
                    let reviewer = store.reviewer().to_string();
                    *store = AnnotationStore::open(&path, &reviewer).unwrap();
                }
                _ => {
                    let category = Some(Name::new(&format!("cat{op}")));
                    let note = non_empty(note);
                    model.insert(key(n), (category, note.clone(), AnnotationSource::Manual));
                    store.apply(vec![Change {
                        key: key(n),
                        case_id: format!("c{n}").into(),
                        variant_id: "v".into(),
                        category,
                        note,
                        source: AnnotationSource::Manual,
                    }]).unwrap();
                }
            }
        }
        for store in &mut stores {
            store.refresh().unwrap();
            prop_assert_eq!(&state(store), &model);
        }
        drop(stores);
        let store = AnnotationStore::open(&path, "cy").unwrap();
        prop_assert_eq!(&state(&store), &model);
        prop_assert_eq!(store.skipped_lines(), (0, None));
    }
}

#[test]
fn unreadable_lines_among_good_ones_are_moved_to_a_side_file_not_dropped() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let trailing_comma = event(2, "c2", Some("b"), None).replace('}', ",}");
    let nuls = "\0\0\0\0".to_string();
    let text = [
        event(1, "c1", Some("a"), None),
        "<<<<<<< HEAD".to_string(),
        trailing_comma.clone(),
        "=======".to_string(),
        nuls.clone(),
        ">>>>>>> theirs".to_string(),
        event(3, "c3", Some("c"), None),
    ]
    .join("\n")
        + "\n";
    fs::write(&path, &text).unwrap();
    let store = AnnotationStore::open(&path, "ann").unwrap();
    assert_eq!(store.all().len(), 2);
    assert_eq!(store.skipped_lines(), (5, Some(2)));
    assert_eq!(store.unreadable_count(), 5);
    let (bad, more) = store.unreadable();
    assert!(!more);
    let lines_and_reasons: Vec<(u64, &str)> =
        bad.iter().map(|b| (b.line, b.reason.as_str())).collect();
    assert_eq!(lines_and_reasons[0].0, 2);
    assert!(
        lines_and_reasons[0]
            .1
            .starts_with("a merge conflict marker")
    );
    assert_eq!(lines_and_reasons[1].0, 3);
    assert!(lines_and_reasons[1].1.starts_with("not JSON"), "{bad:?}");
    assert!(lines_and_reasons[3].1.contains("NUL"), "{bad:?}");
    // The good events stay; every unreadable line is in the side file,
    // byte for byte and in order.
    let side = with_suffix(&path, ".unreadable");
    assert!(
        bad.iter()
            .all(|b| b.moved_to.as_deref() == Some(side.as_path()))
    );
    assert_eq!(lines(&path).len(), 2);
    assert_eq!(
        fs::read_to_string(&side).unwrap(),
        format!("<<<<<<< HEAD\n{trailing_comma}\n=======\n{nuls}\n>>>>>>> theirs\n")
    );
    // Opening again finds a clean journal and leaves the side file alone.
    drop(store);
    let store = AnnotationStore::open(&path, "ann").unwrap();
    assert_eq!(store.unreadable_count(), 0);
    assert_eq!(fs::read_to_string(&side).unwrap().lines().count(), 5);
}

#[test]
fn unreadable_lines_stay_in_place_when_the_side_file_cannot_be_written() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let text = format!("{}\nnot json\n", event(1, "c1", Some("a"), None));
    fs::write(&path, &text).unwrap();
    // A folder where the side file would go: it cannot be written.
    fs::create_dir(with_suffix(&path, ".unreadable")).unwrap();
    let store = AnnotationStore::open(&path, "ann").unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
    let (bad, _) = store.unreadable();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].moved_to, None);
}

#[test]
fn opening_a_missing_journal_creates_nothing_until_the_first_decision() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    store.refresh().unwrap();
    store.compact().unwrap();
    assert_eq!(dir.path().read_dir().unwrap().count(), 0, "nothing written");
    store.apply(vec![change(1, "c1", Some("a"), None)]).unwrap();
    assert_eq!(lines(&path).len(), 1);
    assert!(with_suffix(&path, ".lock").exists());
    drop(store);
    // Opening and closing without a decision still writes nothing.
    let other_dir = TempDir::new().unwrap();
    let other = journal(&other_dir);
    drop(AnnotationStore::open(&other, "ann").unwrap());
    assert!(!other.exists() && !with_suffix(&other, ".lock").exists());
}

#[test]
fn an_undo_does_not_wipe_what_another_triage_decided_since() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    // The same reviewer in two terminals: the second one's decision replaces the first's.
    let mut a = AnnotationStore::open(&path, "ann").unwrap();
    let mut b = AnnotationStore::open(&path, "ann").unwrap();
    let before = change(1, "c1", None, None);
    let after = change(1, "c1", Some("boundary"), None);
    a.apply(vec![after.clone()]).unwrap();
    b.apply(vec![change(1, "c1", Some("distractor"), None)])
        .unwrap();
    // A's undo expects its own decision; B's later one is found instead.
    let saved = a
        .save(
            vec![before.clone()],
            &|_| Vec::new(),
            Some(std::slice::from_ref(&after)),
        )
        .unwrap();
    let Saved::Conflict(conflicts) = saved else {
        panic!("a conflict, got {saved:?}");
    };
    assert_eq!(conflicts.len(), 1);
    let now = conflicts[0].now.as_ref().unwrap();
    assert_eq!(now.category.as_deref(), Some("distractor"));
    assert_eq!(now.reviewer, "ann");
    assert_eq!(lines(&path).len(), 2, "nothing written");
    assert_eq!(
        a.get(&key(1)).unwrap().category.as_deref(),
        Some("distractor")
    );
    b.refresh().unwrap();
    assert_eq!(
        b.get(&key(1)).unwrap().category.as_deref(),
        Some("distractor")
    );

    // While the pair still holds A's decision, the undo goes through.
    a.apply(vec![after.clone()]).unwrap();
    let saved = a
        .save(vec![before], &|_| Vec::new(), Some(&[after]))
        .unwrap();
    assert!(matches!(saved, Saved::Done(_)));
    assert!(a.get(&key(1)).is_none());
}

#[test]
fn a_journal_put_back_from_an_older_copy_gets_this_triages_decisions_again() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut a = AnnotationStore::open(&path, "ann").unwrap();
    a.apply(vec![change(1, "c1", Some("a"), None)]).unwrap();
    let older = fs::read(&path).unwrap();
    a.apply(vec![change(2, "c2", Some("b"), None)]).unwrap();
    a.apply(vec![change(1, "c1", None, Some("cleared"))])
        .unwrap();
    // As `git checkout` does: a new file with the older content.
    let copy = dir.path().join("copy");
    fs::write(&copy, &older).unwrap();
    fs::rename(&copy, &path).unwrap();
    assert_eq!(a.refresh().unwrap(), 0, "no decision arrived");
    assert_eq!(a.restored(), 2);
    assert_eq!(a.restored(), 0, "said once");
    assert_eq!(a.pending(), 0, "written again by the refresh itself");
    assert_eq!(AnnotationStore::read(&path).unwrap().all().len(), 2);
    assert_eq!(a.get(&key(2)).unwrap().category.as_deref(), Some("b"));
    assert_eq!(a.get(&key(1)).unwrap().note.as_deref(), Some("cleared"));
    drop(a);
    let read = AnnotationStore::read(&path).unwrap();
    assert_eq!(read.get(&key(2)).unwrap().category.as_deref(), Some("b"));
    assert_eq!(read.get(&key(1)).unwrap().category, None);
    assert_eq!(read.get(&key(1)).unwrap().note.as_deref(), Some("cleared"));
}

#[test]
fn a_decision_and_a_resolution_on_one_pair_are_both_written_again_after_a_put_back() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut a = AnnotationStore::open(&path, "ann").unwrap();
    a.apply(vec![change(2, "c2", Some("b"), None)]).unwrap();
    let older = fs::read(&path).unwrap();
    // One reviewer's decision and a resolution on the same pair: two
    // slots of this triage's own.
    a.apply(vec![change(1, "c1", Some("a"), None)]).unwrap();
    a.resolve(vec![change(1, "c1", Some("a"), None)]).unwrap();
    let copy = dir.path().join("copy");
    fs::write(&copy, &older).unwrap();
    fs::rename(&copy, &path).unwrap();
    assert_eq!(a.refresh().unwrap(), 0, "no decision arrived");
    assert_eq!(a.restored(), 2);
    drop(a);
    let read = AnnotationStore::read(&path).unwrap();
    assert_eq!(
        read.decision_of(&key(1), "ann")
            .and_then(|d| d.category.as_deref()),
        Some("a")
    );
    let resolution = read.resolution(&key(1)).expect("the resolution is back");
    assert_eq!(resolution.ann.category.as_deref(), Some("a"));
    assert_eq!(resolution.ann.reviewer, "ann");
}

#[test]
fn a_later_decision_or_clear_by_another_triage_is_not_undone_by_a_restore() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut a = AnnotationStore::open(&path, "ann").unwrap();
    let mut b = AnnotationStore::open(&path, "ann").unwrap();
    a.apply(vec![
        change(1, "c1", Some("a"), None),
        change(2, "c2", Some("a"), None),
    ])
    .unwrap();
    b.refresh().unwrap();
    // B clears one and changes the other, then compacts (a new file).
    b.apply(vec![
        change(1, "c1", None, None),
        change(2, "c2", Some("z"), None),
    ])
    .unwrap();
    b.compact().unwrap();
    assert_eq!(a.refresh().unwrap(), 2);
    assert_eq!(a.restored(), 0);
    assert!(a.get(&key(1)).is_none());
    assert_eq!(a.get(&key(2)).unwrap().category.as_deref(), Some("z"));
}

fn spec(path: &Path, files: Option<Vec<u16>>, writable: bool) -> JournalSpec {
    JournalSpec {
        path: path.to_path_buf(),
        files,
        writable,
    }
}

#[test]
fn each_decision_goes_to_the_journal_of_its_pairs_run() {
    let dir = TempDir::new().unwrap();
    let ja = dir.path().join("a.jsonl.triage.jsonl");
    let jb = dir.path().join("b.jsonl.triage.jsonl");
    let specs = [
        spec(&ja, Some(vec![0]), true),
        spec(&jb, Some(vec![1]), true),
    ];
    let mut store = AnnotationStore::open_journals(&specs, "ann")
        .unwrap()
        .unwrap();
    let files = |k: &RecordKey| if *k == key(2) { vec![1] } else { vec![0] };
    store
        .save(
            vec![
                change(1, "c1", Some("a"), None),
                change(2, "c2", Some("b"), None),
            ],
            &files,
            None,
        )
        .unwrap();
    assert_eq!(store.all().len(), 2);
    assert_eq!(lines(&ja).len(), 1);
    assert!(lines(&ja)[0].contains(&key(1).to_string()));
    assert_eq!(lines(&jb).len(), 1);
    assert!(lines(&jb)[0].contains(&key(2).to_string()));
    // A pair in both runs is decided in both journals.
    store
        .save(
            vec![change(3, "c3", Some("x"), None)],
            &|_| vec![0, 1],
            None,
        )
        .unwrap();
    assert_eq!(lines(&ja).len(), 2);
    assert_eq!(lines(&jb).len(), 2);
    // A journal the run of a pair was not given keeps nothing of it.
    let read_b = AnnotationStore::read(&jb).unwrap();
    assert!(read_b.get(&key(1)).is_none());
    assert_eq!(read_b.get(&key(2)).unwrap().category.as_deref(), Some("b"));
}

#[test]
fn a_committed_journal_is_read_under_the_fallback_and_never_written() {
    let dir = TempDir::new().unwrap();
    let committed = dir.path().join("run.jsonl.triage.jsonl");
    let fallback = dir.path().join("fallback.triage.jsonl");
    let text = [
        event(1, "c1", Some("a"), None),
        event(2, "c2", Some("b"), None),
    ]
    .join("\n")
        + "\n";
    fs::write(&committed, &text).unwrap();
    let specs = [
        spec(&committed, Some(vec![0]), false),
        spec(&fallback, Some(vec![0]), true),
    ];
    let mut store = AnnotationStore::open_journals(&specs, "ann")
        .unwrap()
        .unwrap();
    assert_eq!(store.all().len(), 2);
    assert_eq!(store.path(), fallback);
    assert_eq!(store.access(), &Access::ReadWrite);
    store
        .save(
            vec![
                change(1, "c1", None, None),
                change(2, "c2", Some("z"), None),
            ],
            &|_| vec![0],
            None,
        )
        .unwrap();
    assert!(store.get(&key(1)).is_none());
    assert_eq!(store.get(&key(2)).unwrap().category.as_deref(), Some("z"));
    assert_eq!(
        fs::read_to_string(&committed).unwrap(),
        text,
        "never written"
    );
    store.compact().unwrap();
    drop(store);
    // The fallback's clear and change still win after a compaction and a reopen.
    let store = AnnotationStore::open_journals(&specs, "ann")
        .unwrap()
        .unwrap();
    assert!(store.get(&key(1)).is_none());
    assert_eq!(store.get(&key(2)).unwrap().category.as_deref(), Some("z"));
    assert_eq!(store.all().len(), 1);
}

#[test]
fn journal_specs_give_each_run_its_own_journal_or_one_explicit() {
    let dir = TempDir::new().unwrap();
    let a = dir.path().join("a.jsonl").to_string_lossy().to_string();
    let b = dir.path().join("b.jsonl").to_string_lossy().to_string();
    let (specs, notes) = journal_specs(&[a.clone(), b.clone(), a.clone()], None).unwrap();
    assert_eq!(
        specs,
        vec![
            spec(
                &PathBuf::from(format!("{a}.triage.jsonl")),
                Some(vec![0, 2]),
                true
            ),
            spec(
                &PathBuf::from(format!("{b}.triage.jsonl")),
                Some(vec![1]),
                true
            ),
        ]
    );
    assert_eq!(notes, ["each run's decisions go to its own journal"]);
    let explicit = dir.path().join("all.jsonl");
    let (specs, _) = journal_specs(&[a, b], Some(&explicit)).unwrap();
    assert_eq!(specs, vec![spec(&explicit, None, true)]);
}

#[cfg(target_os = "linux")]
#[test]
fn decisions_a_full_disk_refuses_go_to_a_recovery_file_or_back_as_lines() {
    let dev_full = Path::new("/dev/full");
    if !dev_full.exists() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let sub = dir.path().join("sub");
    fs::create_dir(&sub).unwrap();
    let path = sub.join("run.jsonl.triage.jsonl");
    std::os::unix::fs::symlink(dev_full, &path).unwrap();
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    assert!(store.apply(vec![change(1, "c1", Some("a"), None)]).is_err());
    assert!(store.compact().is_ok(), "a device is never replaced");
    assert!(
        fs::metadata(dev_full)
            .unwrap()
            .file_type()
            .is_char_device_like()
    );
    let recovered = store.recover();
    let [Recovery::File { file, count: 1, .. }] = recovered.as_slice() else {
        panic!("a recovery file, got {recovered:?}");
    };
    assert_eq!(*file, with_suffix(&path, ".recovered.jsonl"));
    let text = fs::read_to_string(file).unwrap();
    let Line::Event(ann, _, _) = parse_line(text.trim().as_bytes()) else {
        panic!("a journal event: {text}");
    };
    assert_eq!(ann.category.as_deref(), Some("a"));
    assert!(
        recovered[0].to_string().contains("cat '"),
        "{}",
        recovered[0]
    );
    // Without a folder to write it in: the events come back as lines.
    fs::remove_dir_all(&sub).unwrap();
    let recovered = store.recover();
    let [Recovery::Lines { lines, .. }] = recovered.as_slice() else {
        panic!("lines, got {recovered:?}");
    };
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains(&key(1).to_string()));
}

/// A character device, as /dev/full is (std has no stable test for it).
trait DeviceLike {
    fn is_char_device_like(&self) -> bool;
}

impl DeviceLike for fs::FileType {
    fn is_char_device_like(&self) -> bool {
        use std::os::unix::fs::FileTypeExt;
        self.is_char_device()
    }
}

#[test]
fn journals_are_told_from_runs() {
    let dir = TempDir::new().unwrap();
    let j = journal(&dir);
    fs::write(&j, event(1, "c1", Some("a"), None) + "\n").unwrap();
    assert!(looks_like_journal(&j));
    let renamed = dir.path().join("decisions.jsonl");
    fs::copy(&j, &renamed).unwrap();
    assert!(
        looks_like_journal(&renamed),
        "by content, whatever its name"
    );
    let empty = dir.path().join("x.jsonl.triage.jsonl");
    fs::write(&empty, "").unwrap();
    assert!(looks_like_journal(&empty));
    let lock = with_suffix(&empty, ".lock");
    fs::write(&lock, "").unwrap();
    assert!(looks_like_journal(&lock));
    let run = dir.path().join("run.jsonl");
    fs::write(&run, "{\"case_id\":\"c\",\"variant_id\":\"v\"}\n").unwrap();
    assert!(!looks_like_journal(&run));
    let empty_run = dir.path().join("empty.jsonl");
    fs::write(&empty_run, "").unwrap();
    assert!(!looks_like_journal(&empty_run));
    assert!(!looks_like_journal(dir.path()));
}

#[test]
fn same_file_sees_through_dots_and_files_not_created_yet() {
    let dir = TempDir::new().unwrap();
    let j = journal(&dir);
    let via_dot = dir
        .path()
        .join(".")
        .join("x")
        .join("..")
        .join("run.jsonl.triage.jsonl");
    assert!(same_file(&j, &via_dot), "before it exists");
    fs::write(&j, "").unwrap();
    assert!(same_file(&j, &via_dot));
    assert!(!same_file(&j, &dir.path().join("other")));
    let owned = journal_files(&j);
    assert_eq!(owned[1], with_suffix(&j, ".lock"));
    assert_eq!(owned[2], with_suffix(&j, ".unreadable"));
}

#[test]
fn a_journal_another_triage_creates_is_read_under_its_lock() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut first = AnnotationStore::open(&path, "ann").unwrap();
    let mut second = AnnotationStore::open(&path, "bob").unwrap();
    second
        .apply(vec![change(1, "c1", Some("b"), None)])
        .unwrap();
    assert!(first.journals[0].lock.is_none(), "nothing created yet");
    assert_eq!(first.refresh().unwrap(), 1);
    assert!(first.journals[0].lock.is_some(), "read under the lock");
    assert_eq!(first.get(&key(1)).unwrap().reviewer, "bob");
    first.apply(vec![change(2, "c2", Some("a"), None)]).unwrap();
    assert_eq!(lines(&path).len(), 2);
}

#[test]
fn a_later_event_that_repeats_an_earlier_value_is_not_taken_for_an_older_copy() {
    // Found by the interleaving property: ann decides a then b; in another
    // terminal, after her, she decides a twice, and a compaction leaves
    // only the last event, whose value (and prev) equal her first. That is
    // not a rollback.
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut ann = AnnotationStore::open(&path, "ann").unwrap();
    let mut bob = AnnotationStore::open(&path, "ann").unwrap();
    ann.apply(vec![change(3, "c3", Some("a"), None)]).unwrap();
    ann.apply(vec![change(3, "c3", Some("b"), None)]).unwrap();
    bob.apply(vec![change(3, "c3", Some("a"), None)]).unwrap();
    bob.apply(vec![change(3, "c3", Some("a"), None)]).unwrap();
    drop(bob);
    let bob = AnnotationStore::open(&path, "ann").unwrap();
    assert_eq!(lines(&path).len(), 1, "compacted on open");
    ann.refresh().unwrap();
    assert_eq!(ann.restored(), 0);
    assert_eq!(ann.get(&key(3)).unwrap().category.as_deref(), Some("a"));
    assert_eq!(lines(&path).len(), 1);
    drop(bob);
}

#[test]
fn every_reviewers_decision_is_kept_and_a_resolution_settles_a_disagreement() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut ann = AnnotationStore::open(&path, "ann").unwrap();
    let mut bob = AnnotationStore::open(&path, "bob").unwrap();
    ann.apply(vec![
        change(1, "c1", Some("boundary"), Some("on the line")),
        change(2, "c2", Some("distractor"), None),
    ])
    .unwrap();
    bob.apply(vec![
        change(1, "c1", Some("distractor"), None),
        change(2, "c2", Some("distractor"), Some("agreed")),
    ])
    .unwrap();
    ann.refresh().unwrap();
    // Agreed: the category both named, the newest note.
    assert_eq!(ann.agreement(&key(2)), Some(Agreement::Agreed));
    let agreed = ann.get(&key(2)).unwrap();
    assert_eq!(agreed.category.as_deref(), Some("distractor"));
    assert_eq!(agreed.note.as_deref(), Some("agreed"));
    // Disagreed: no resolved category, and both decisions as they were.
    assert_eq!(ann.agreement(&key(1)), Some(Agreement::Disagree));
    assert_eq!(ann.get(&key(1)).unwrap().category, None);
    assert_eq!(
        ann.mine(&key(1)).unwrap().category.as_deref(),
        Some("boundary")
    );
    assert_eq!(
        ann.decision_of(&key(1), "bob").unwrap().category.as_deref(),
        Some("distractor")
    );
    assert_eq!(ann.reviewers(), vec!["ann", "bob"]);

    // A third person resolves it: an event of its own, naming both decisions.
    let mut cy = AnnotationStore::open(&path, "cy").unwrap();
    cy.resolve(vec![change(1, "c1", Some("boundary"), None)])
        .unwrap();
    let last = lines(&path).pop().unwrap();
    let v: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(v["v"], 2);
    assert_eq!(v["kind"], "resolution");
    assert_eq!(v["reviewer"], "cy");
    assert_eq!(v["category"], "boundary");
    assert_eq!(
        v["resolves"],
        serde_json::json!([
            {"reviewer": "ann", "category": "boundary"},
            {"reviewer": "bob", "category": "distractor"}
        ])
    );
    ann.refresh().unwrap();
    assert_eq!(ann.agreement(&key(1)), Some(Agreement::Resolved));
    let resolved = ann.get(&key(1)).unwrap();
    assert_eq!(resolved.category.as_deref(), Some("boundary"));
    assert_eq!(resolved.reviewer, "cy");
    assert_eq!(
        ann.decision_of(&key(1), "bob").unwrap().category.as_deref(),
        Some("distractor"),
        "the resolution leaves the decisions as they were"
    );

    // Compaction keeps every reviewer's decision and the resolution.
    drop((ann, bob, cy));
    let store = AnnotationStore::open(&path, "dee").unwrap();
    assert_eq!(lines(&path).len(), 5);
    assert_eq!(store.agreement(&key(1)), Some(Agreement::Resolved));
    assert_eq!(store.decisions(&key(2)).len(), 2);
    drop(store);

    // When a decision it settled changes, the resolution no longer holds.
    let mut bob = AnnotationStore::open(&path, "bob").unwrap();
    bob.apply(vec![change(1, "c1", Some("evidence"), None)])
        .unwrap();
    assert_eq!(bob.agreement(&key(1)), Some(Agreement::Disagree));
    assert!(!bob.resolution(&key(1)).unwrap().current);
    assert_eq!(bob.get(&key(1)).unwrap().category, None);
    // And when the reviewers come to agree, that is the category.
    bob.apply(vec![change(1, "c1", Some("boundary"), None)])
        .unwrap();
    assert_eq!(bob.agreement(&key(1)), Some(Agreement::Agreed));
    assert_eq!(
        bob.get(&key(1)).unwrap().category.as_deref(),
        Some("boundary")
    );
}

#[test]
fn an_undo_touches_only_the_reviewers_own_decision() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut a = AnnotationStore::open(&path, "ann").unwrap();
    let mut b = AnnotationStore::open(&path, "bob").unwrap();
    let before = change(1, "c1", None, None);
    let after = change(1, "c1", Some("boundary"), None);
    let previous = a.apply(vec![after.clone()]).unwrap();
    assert_eq!(previous, vec![None]);
    b.apply(vec![change(1, "c1", Some("distractor"), None)])
        .unwrap();
    // Bob's later decision is his own: ann's undo is not in its way, and leaves it.
    let saved = a
        .save(vec![before], &|_| Vec::new(), Some(&[after]))
        .unwrap();
    assert!(matches!(saved, Saved::Done(_)));
    assert!(a.mine(&key(1)).is_none());
    let now = a.get(&key(1)).unwrap();
    assert_eq!(
        (now.category.as_deref(), now.reviewer.as_str()),
        (Some("distractor"), "bob")
    );
}

#[test]
fn an_old_triage_skips_a_resolution_and_keeps_it_in_place() {
    // The resolution line's version is 2: a triage that reads only version 1
    // takes it for a newer line, which it never moves nor compacts away.
    let line = r#"{"v":2,"kind":"resolution","key":"01010101010101010101010101010101","case_id":"c1","variant_id":"v1","category":"a","note":null,"reviewer":"cy","at":"2026-01-01T00:00:00Z","source":"manual","prev":null,"resolves":[]}"#;
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    assert!(v["v"].as_u64().unwrap() > FORMAT_VERSION);
    assert!(matches!(
        parse_line(line.as_bytes()),
        Line::Event(_, None, Some(_))
    ));
    // A version-2 line of another kind is a newer one to this build.
    let other = r#"{"v":2,"kind":"vote","key":"01010101010101010101010101010101"}"#;
    assert!(matches!(parse_line(other.as_bytes()), Line::Newer));
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn two_reviewers_interleaving_saves_and_compactions_keep_each_ones_decisions(
        ops in prop::collection::vec((any::<bool>(), 0u8..6, 0u8..4), 1..24)
    ) {
        let dir = TempDir::new().unwrap();
        let path = journal(&dir);
        let names = ["ann", "bob"];
        let mut stores = [
            AnnotationStore::open(&path, names[0]).unwrap(),
            AnnotationStore::open(&path, names[1]).unwrap(),
        ];
        let mut model: HashMap<(RecordKey, &str), String> = HashMap::new();
        for (second, op, n) in ops {
            let who = usize::from(second);
            let store = &mut stores[who];
            match op {
                0 => store.compact().unwrap(),
                1 => {
                    store.refresh().unwrap();
                }
                2 => *store = AnnotationStore::open(&path, names[who]).unwrap(),
                _ => {
                    let category = format!("cat{op}");
                    model.insert((key(n), names[who]), category.clone());
                    store.apply(vec![change(n, &format!("c{n}"), Some(&category), None)]).unwrap();
                }
            }
        }
        drop(stores);
        let store = AnnotationStore::open(&path, "cy").unwrap();
        let mut got: HashMap<(RecordKey, &str), String> = HashMap::new();
        for n in 0u8..4 {
            for name in names {
                if let Some(a) = store.decision_of(&key(n), name) {
                    got.insert((key(n), name), a.category.unwrap().to_string());
                }
            }
        }
        prop_assert_eq!(got, model);
        prop_assert_eq!(store.skipped_lines(), (0, None));
    }
}

#[test]
fn a_three_way_merge_keeps_each_sides_changes_and_the_later_of_a_slot_both_changed() {
    let ev = |n: u8, reviewer: &str, cat: &str, at: &str| {
        let ann = Annotation {
            key: key(n),
            case_id: format!("c{n}").into(),
            variant_id: "v1".into(),
            category: Some(cat.into()),
            note: None,
            reviewer: reviewer.into(),
            at: at.into(),
            source: AnnotationSource::Manual,
            carried_from: None,
            nonce: 0,
        };
        encode(&ann, None, None)
    };
    let join = |lines: &[String]| lines.join("\n").into_bytes();
    let base = join(&[
        ev(1, "ann", "a", "2026-01-01T00:00:00Z"),
        ev(2, "ann", "a", "2026-01-01T00:00:00Z"),
        "<<<<<<< a line nobody could read".to_string(),
    ]);
    // Ours compacted: ann's change of pair 1 replaced her first event, and
    // the unreadable line was moved aside.
    let ours = join(&[
        ev(2, "ann", "a", "2026-01-01T00:00:00Z"),
        ev(1, "ann", "b", "2026-01-02T00:00:00Z"),
        ev(3, "ann", "c", "2026-01-03T00:00:00Z"),
    ]);
    // Theirs appended bob's decisions, changed pair 2 (a slot ours left
    // alone) and, later than ours, pair 3, plus a line of its own nobody can read.
    let theirs = join(&[
        ev(1, "ann", "a", "2026-01-01T00:00:00Z"),
        ev(2, "ann", "a", "2026-01-01T00:00:00Z"),
        "<<<<<<< a line nobody could read".to_string(),
        ev(1, "bob", "x", "2026-01-02T00:00:00Z"),
        ev(2, "ann", "z", "2026-01-02T00:00:00Z"),
        ev(3, "ann", "d", "2026-01-04T00:00:00Z"),
        "{\"v\":9,\"from\":\"the future\"}".to_string(),
    ]);
    let merged = merge_journals(&base, &ours, &theirs);
    assert_eq!(merged.events, 4);
    assert_eq!(merged.both_changed, 1);
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    fs::write(&path, &merged.text).unwrap();
    let text = String::from_utf8(merged.text).unwrap();
    assert!(
        !text.contains("nobody could read"),
        "ours moved it aside:\n{text}"
    );
    assert!(text.contains("the future"), "theirs added it:\n{text}");
    let store = AnnotationStore::read(&path).unwrap();
    let cat = |n: u8, who: &str| store.decision_of(&key(n), who).and_then(|a| a.category);
    assert_eq!(
        cat(1, "ann").as_deref(),
        Some("b"),
        "the compacted-away event stays away"
    );
    assert_eq!(cat(1, "bob").as_deref(), Some("x"));
    assert_eq!(cat(2, "ann").as_deref(), Some("z"));
    assert_eq!(cat(3, "ann").as_deref(), Some("d"), "the later of the two");
    // Merging is the same whichever side is ours, but for ties.
    let swapped = merge_journals(&base, &theirs, &ours);
    assert_eq!(swapped.events, 4);
}

/// One reviewer in two terminals who records the same decision twice in
/// one second, around the other's: a restart after a compaction must not
/// take the second for the first and bring back the other's older one.
/// (Found by `two_stores_interleaving_saves_and_compactions_lose_nothing`.)
#[test]
fn the_same_decision_twice_in_one_second_is_two_events() {
    for round in 0..20 {
        let dir = TempDir::new().unwrap();
        let path = journal(&dir);
        let mut stores = [
            AnnotationStore::open(&path, "ann").unwrap(),
            AnnotationStore::open(&path, "ann").unwrap(),
        ];
        let ops = [
            (false, 5u8, 2u8),
            (false, 5, 2),
            (true, 3, 2),
            (false, 5, 2),
            (false, 2, 0),
            (false, 5, 2),
        ];
        let mut want = None;
        for (second, op, n) in ops {
            let store = &mut stores[usize::from(second)];
            match op {
                2 => {
                    *store = AnnotationStore::open(&path, "ann").unwrap();
                }
                _ => {
                    let category = Some(Name::new(&format!("cat{op}")));
                    want = category;
                    store
                        .apply(vec![Change {
                            key: key(n),
                            case_id: format!("c{n}").into(),
                            variant_id: "v".into(),
                            category,
                            note: None,
                            source: AnnotationSource::Manual,
                        }])
                        .unwrap();
                }
            }
        }
        for (i, store) in stores.iter_mut().enumerate() {
            store.refresh().unwrap();
            let got = state(store).get(&key(2)).and_then(|s| s.0);
            if got != want {
                panic!(
                    "round {round} store {i}: {got:?}\n{}",
                    fs::read_to_string(&path).unwrap()
                );
            }
        }
    }
}

#[test]
fn a_blind_store_shows_nothing_of_a_pair_its_reviewer_has_not_decided() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut ann = AnnotationStore::open(&path, "ann").unwrap();
    let mut bob = AnnotationStore::open(&path, "bob").unwrap();
    ann.apply(vec![
        change(1, "c1", Some("boundary"), Some("ann's note")),
        change(2, "c2", Some("distractor"), None),
    ])
    .unwrap();
    bob.apply(vec![change(1, "c1", Some("distractor"), None)])
        .unwrap();
    let mut cy = AnnotationStore::open(&path, "cy").unwrap();
    cy.resolve(vec![change(1, "c1", Some("boundary"), None)])
        .unwrap();
    let mut dee = AnnotationStore::open(&path, "dee").unwrap();
    assert!(dee.get(&key(1)).is_some());
    dee.set_blind(true);
    for k in [key(1), key(2)] {
        assert!(dee.hides(&k));
        assert!(dee.get(&k).is_none());
        assert!(dee.decisions(&k).is_empty());
        assert!(dee.agreement(&k).is_none());
        assert!(dee.resolution(&k).is_none());
        assert!(dee.decision_of(&k, "ann").is_none());
        assert!(dee.stale_for("c1", "v1", &k).is_none());
    }
    assert_eq!(dee.hidden_decisions(&key(1)), 2);
    assert!(dee.all().is_empty());
    // What the look-ups for record keys need is not hidden.
    assert!(dee.names("c1", "v1") && !dee.is_empty());
    // Once dee decides pair 1, it shows, with everyone's decisions; pair 2 stays hidden.
    dee.apply(vec![change(1, "c1", Some("evidence"), None)])
        .unwrap();
    assert!(!dee.hides(&key(1)));
    assert_eq!(dee.hidden_decisions(&key(1)), 0);
    assert_eq!(dee.decisions(&key(1)).len(), 3);
    assert_eq!(dee.agreement(&key(1)), Some(Agreement::Disagree));
    assert!(dee.resolution(&key(1)).is_some());
    assert!(dee.get(&key(2)).is_none());
    assert_eq!(dee.all().len(), 1);
    // A note alone is a decision too.
    dee.apply(vec![change(2, "c2", None, Some("looked"))])
        .unwrap();
    assert_eq!(
        dee.get(&key(2)).unwrap().category.as_deref(),
        Some("distractor")
    );
    dee.set_blind(false);
    assert_eq!(dee.all().len(), 2);
}

fn settle(store: &AnnotationStore, n: u8, case: &str, cat: Option<&str>) -> ResolutionChange {
    ResolutionChange {
        resolves: match cat {
            Some(_) => store.priors(&key(n)),
            None => Vec::new(),
        },
        change: change(n, case, cat, None),
    }
}

#[test]
fn a_resolution_is_undone_and_redone_under_a_guard_and_the_disagreement_comes_back() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut ann = AnnotationStore::open(&path, "ann").unwrap();
    ann.apply(vec![change(1, "c1", Some("boundary"), None)])
        .unwrap();
    let mut bob = AnnotationStore::open(&path, "bob").unwrap();
    bob.apply(vec![change(1, "c1", Some("distractor"), None)])
        .unwrap();
    let mut cy = AnnotationStore::open(&path, "cy").unwrap();
    assert_eq!(cy.agreement(&key(1)), Some(Agreement::Disagree));
    let none = cy.resolution_change(&key(1), "c1", "v1");
    assert_eq!(none.change.category, None);
    let first = settle(&cy, 1, "c1", Some("boundary"));
    assert_eq!(first.resolves.len(), 2);
    let files = |_: &RecordKey| Vec::new();
    let done = cy
        .save_resolutions(vec![first.clone()], &files, None)
        .unwrap();
    assert!(matches!(done, Saved::Done(_)));
    assert_eq!(cy.agreement(&key(1)), Some(Agreement::Resolved));
    assert_eq!(cy.resolution_change(&key(1), "c1", "v1"), first);

    // Undo: the resolution is withdrawn by an event of its own, and the
    // pair is a disagreement again, in this store and in any other.
    let undone = cy
        .save_resolutions(
            vec![none.clone()],
            &files,
            Some(std::slice::from_ref(&first)),
        )
        .unwrap();
    assert!(matches!(undone, Saved::Done(_)));
    assert_eq!(cy.agreement(&key(1)), Some(Agreement::Disagree));
    assert!(cy.resolution(&key(1)).is_none());
    assert_eq!(cy.get(&key(1)).unwrap().category, None);
    let last: serde_json::Value = serde_json::from_str(&lines(&path).pop().unwrap()).unwrap();
    assert_eq!(last["kind"], "resolution");
    assert_eq!(last["category"], serde_json::Value::Null);
    assert_eq!(last["resolves"], serde_json::json!([]));
    ann.refresh().unwrap();
    assert_eq!(ann.agreement(&key(1)), Some(Agreement::Disagree));
    // The withdrawal outlives a compaction, and wins over the older resolution.
    drop((ann, bob));
    drop(cy);
    let mut cy = AnnotationStore::open(&path, "cy").unwrap();
    assert_eq!(cy.agreement(&key(1)), Some(Agreement::Disagree));

    // Redo: only while the pair still has no resolution.
    let redone = cy
        .save_resolutions(
            vec![first.clone()],
            &files,
            Some(std::slice::from_ref(&none)),
        )
        .unwrap();
    assert!(matches!(redone, Saved::Done(_)));
    assert_eq!(cy.agreement(&key(1)), Some(Agreement::Resolved));

    // A second resolution, undone, brings back the first one as it was.
    let second = settle(&cy, 1, "c1", Some("distractor"));
    cy.save_resolutions(vec![second.clone()], &files, None)
        .unwrap();
    assert_eq!(
        cy.get(&key(1)).unwrap().category.as_deref(),
        Some("distractor")
    );
    cy.save_resolutions(
        vec![first.clone()],
        &files,
        Some(std::slice::from_ref(&second)),
    )
    .unwrap();
    assert_eq!(
        cy.get(&key(1)).unwrap().category.as_deref(),
        Some("boundary")
    );

    // Another triage resolves the pair since: the undo writes nothing.
    let mut dee = AnnotationStore::open(&path, "dee").unwrap();
    dee.resolve(vec![change(1, "c1", Some("evidence"), None)])
        .unwrap();
    let before = lines(&path).len();
    let refused = cy
        .save_resolutions(
            vec![none.clone()],
            &files,
            Some(std::slice::from_ref(&first)),
        )
        .unwrap();
    let Saved::Conflict(conflicts) = refused else {
        panic!("a conflict");
    };
    assert_eq!(conflicts.len(), 1);
    let now = conflicts[0].now.as_ref().unwrap();
    assert_eq!(
        (now.category.as_deref(), now.reviewer.as_str()),
        (Some("evidence"), "dee")
    );
    assert_eq!(lines(&path).len(), before);
    assert_eq!(
        cy.get(&key(1)).unwrap().category.as_deref(),
        Some("evidence")
    );
}

#[test]
fn agreeing_reviewers_show_the_newest_decider_and_the_newest_note_copied_or_not() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut ann = AnnotationStore::open(&path, "ann").unwrap();
    let mut bob = AnnotationStore::open(&path, "bob").unwrap();
    // Pair 1: the newest decider wrote no note, so the shown note is ann's.
    ann.apply(vec![change(1, "c1", Some("boundary"), Some("on the line"))])
        .unwrap();
    bob.apply(vec![change(1, "c1", Some("boundary"), None)])
        .unwrap();
    // Pair 2: the newest decision is what shows, as it is.
    ann.apply(vec![change(2, "c2", Some("distractor"), None)])
        .unwrap();
    bob.apply(vec![change(2, "c2", Some("distractor"), Some("agreed"))])
        .unwrap();
    for store in [&bob, &AnnotationStore::read(&path).unwrap()] {
        let one = store.get(&key(1)).unwrap();
        assert_eq!(
            (
                one.category.as_deref(),
                one.note.as_deref(),
                one.reviewer.as_str()
            ),
            (Some("boundary"), Some("on the line"), "bob")
        );
        let two = store.get(&key(2)).unwrap();
        assert_eq!(
            (
                two.category.as_deref(),
                two.note.as_deref(),
                two.reviewer.as_str()
            ),
            (Some("distractor"), Some("agreed"), "bob")
        );
        assert_eq!(store.agreement(&key(2)), Some(Agreement::Agreed));
    }
    // When bob clears his decision, ann's shows again, alone.
    bob.apply(vec![change(2, "c2", None, None)]).unwrap();
    let two = bob.get(&key(2)).unwrap();
    assert_eq!((two.reviewer.as_str(), two.note.as_deref()), ("ann", None));
    assert_eq!(bob.agreement(&key(2)), Some(Agreement::Single));
}

/// The journal line of an event as triage wrote it before lines were
/// serialized from a struct: through a `serde_json::Value`, whose
/// `preserve_order` keeps the documented field order. The lines written
/// now must be these, byte for byte.
fn encode_through_a_value(
    ann: &Annotation,
    prev: Option<&Prev>,
    resolves: Option<&[Prior]>,
) -> String {
    let source = match ann.source {
        AnnotationSource::Manual => "manual",
        AnnotationSource::Suggestion => "suggestion",
    };
    let mut event = match resolves {
        Some(resolves) => serde_json::json!({
            "v": RESOLUTION_VERSION,
            "kind": "resolution",
            "key": ann.key.to_string(),
            "case_id": ann.case_id,
            "variant_id": ann.variant_id,
            "category": ann.category,
            "note": ann.note,
            "reviewer": ann.reviewer,
            "at": ann.at,
            "source": source,
            "prev": null,
            "resolves": resolves,
        }),
        None => serde_json::json!({
            "v": FORMAT_VERSION,
            "key": ann.key.to_string(),
            "case_id": ann.case_id,
            "variant_id": ann.variant_id,
            "category": ann.category,
            "note": ann.note,
            "reviewer": ann.reviewer,
            "at": ann.at,
            "source": source,
            "prev": prev.map(|p| serde_json::json!({"category": p.category, "note": p.note})),
        }),
    };
    let obj = event.as_object_mut().unwrap();
    if let (Some(from), None) = (&ann.carried_from, resolves) {
        obj.insert(
            "carried_from".to_string(),
            serde_json::json!({"reviewer": from.reviewer, "at": from.at, "run": from.run}),
        );
    }
    if ann.nonce != 0 {
        obj.insert("n".to_string(), format!("{:016x}", ann.nonce).into());
    }
    event.to_string()
}

fn any_text() -> impl Strategy<Value = String> {
    "[a-z\"\\\\\n\t\u{1}é😀 ]{0,6}"
}

fn any_event() -> impl Strategy<Value = (Annotation, Option<Prev>, Option<Vec<Prior>>)> {
    let ann = (
        any::<[u8; 16]>(),
        (any_text(), any_text(), any_text(), any_text()),
        (prop::option::of(any_text()), prop::option::of(any_text())),
        any::<bool>(),
        prop::option::of((any_text(), any_text(), any_text())),
        prop_oneof![Just(0u64), any::<u64>()],
    )
        .prop_map(
            |(key, (case_id, variant_id, reviewer, at), (category, note), manual, from, nonce)| {
                Annotation {
                    key: RecordKey(key),
                    case_id: case_id.into(),
                    variant_id: variant_id.into(),
                    category: category.map(Name::from),
                    note,
                    reviewer: reviewer.into(),
                    at: at.into(),
                    source: if manual {
                        AnnotationSource::Manual
                    } else {
                        AnnotationSource::Suggestion
                    },
                    carried_from: from
                        .map(|(reviewer, at, run)| Box::new(Provenance { reviewer, at, run })),
                    nonce,
                }
            },
        );
    let prev = prop::option::of(
        (prop::option::of(any_text()), prop::option::of(any_text())).prop_map(
            |(category, note)| Prev {
                category: category.map(Name::from),
                note,
            },
        ),
    );
    let resolves = prop::option::of(prop::collection::vec(
        (any_text(), prop::option::of(any_text())).prop_map(|(reviewer, category)| Prior {
            reviewer: reviewer.into(),
            category: category.map(Name::from),
        }),
        0..3,
    ));
    (ann, prev, resolves)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn events_are_written_as_the_value_wrote_them_and_read_back(
        (ann, prev, resolves) in any_event()
    ) {
        let line = encode(&ann, prev.as_ref(), resolves.as_deref());
        prop_assert_eq!(
            &line,
            &encode_through_a_value(&ann, prev.as_ref(), resolves.as_deref())
        );
        match parse_line(line.as_bytes()) {
            Line::Event(back, back_prev, back_resolves) => {
                // Empty texts read as none, and a resolution keeps no
                // provenance nor what it replaced.
                let resolution = resolves.is_some();
                let want = Annotation {
                    category: non_empty(ann.category),
                    note: non_empty(ann.note.clone()),
                    carried_from: ann.carried_from.clone().filter(|_| !resolution),
                    ..ann.clone()
                };
                prop_assert_eq!(*back, want);
                prop_assert_eq!(back_prev, prev.filter(|_| !resolution));
                prop_assert_eq!(back_resolves, resolves);
            }
            _ => prop_assert!(false, "{line} is not read back as an event"),
        }
    }
}

#[test]
fn many_events_are_encoded_in_order_on_several_threads() {
    // More than two chunks, so the lines are encoded on rayon's threads.
    let n = 2 * journal::ENCODE_CHUNK + 1234;
    let events: Vec<(Annotation, Option<Prev>)> = (0..n)
        .map(|i| {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&(i as u64).to_le_bytes());
            let ann = Annotation {
                key: RecordKey(k),
                case_id: format!("case-{}", i / 3).into(),
                variant_id: format!("v-{i}").into(),
                category: (i % 4 != 0).then(|| Name::new(&format!("cat-{}", i % 5))),
                note: (i % 7 == 0).then(|| "a \"note\"\n".to_string()),
                reviewer: "ann".into(),
                at: now_rfc3339().into(),
                source: AnnotationSource::Suggestion,
                carried_from: None,
                nonce: i as u64 + 1,
            };
            let prev = (i % 2 == 0).then(|| Prev {
                category: Some("was".into()),
                note: None,
            });
            (ann, prev)
        })
        .collect();
    let text = journal::encode_lines(events.iter().map(|(a, p)| (a, p.as_ref(), None)));
    let mut want = String::new();
    for (a, p) in &events {
        want.push_str(&encode_through_a_value(a, p.as_ref(), None));
        want.push('\n');
    }
    assert_eq!(String::from_utf8(text).unwrap(), want);
}

#[test]
fn events_encoded_in_rounds_are_the_lines_in_order_and_stop_at_the_first_error() {
    // Five and a bit chunks, two at a time: three rounds, the last one short.
    let n = 5 * journal::ENCODE_CHUNK + 77;
    let events: Vec<Annotation> = (0..n)
        .map(|i| {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&(i as u64).to_le_bytes());
            Annotation {
                key: RecordKey(k),
                case_id: format!("case-{}", i / 3).into(),
                variant_id: format!("v-{i}").into(),
                category: (i % 4 != 0).then(|| Name::new(&format!("cat-{}", i % 5))),
                note: (i % 11 == 0).then(|| "a \"note\"\n".to_string()),
                reviewer: "ann".into(),
                at: now_rfc3339().into(),
                source: AnnotationSource::Manual,
                carried_from: None,
                nonce: i as u64 + 1,
            }
        })
        .collect();
    let mut text = Vec::new();
    let mut stretches = 0;
    journal::encode_in_rounds(events.iter().map(|a| (a, None, None)), 2, &mut |lines| {
        stretches += 1;
        text.extend_from_slice(lines);
        Ok(())
    })
    .unwrap();
    assert_eq!(stretches, 6, "one stretch per chunk");
    let mut want = String::new();
    for a in &events {
        want.push_str(&encode_through_a_value(a, None, None));
        want.push('\n');
    }
    assert_eq!(String::from_utf8(text).unwrap(), want);

    let mut calls = 0;
    let failed = journal::encode_in_rounds(events.iter().map(|a| (a, None, None)), 2, &mut |_| {
        calls += 1;
        match calls {
            3 => Err(io::Error::other("disk full")),
            _ => Ok(()),
        }
    });
    assert!(failed.is_err());
    assert_eq!(calls, 3, "nothing is handed on after the first error");
}

#[test]
fn a_save_of_many_decisions_appends_their_lines_in_order_and_replays_to_the_same_store() {
    many_decisions_append_in_order_and_replay(false);
}

/// The same, with the lines written around the page cache from the first
/// block boundary after the journal's end (a save of millions of decisions
/// is; `super::append`), where the system allows it.
#[test]
fn a_save_of_many_decisions_written_around_the_page_cache_reads_back_the_same() {
    many_decisions_append_in_order_and_replay(true);
}

fn many_decisions_append_in_order_and_replay(around_the_cache: bool) {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    store
        .apply(vec![change(1, "c-first", Some("a"), None)])
        .unwrap();
    if around_the_cache {
        store.journals[0].direct_from = 0;
    }
    // (The journal now ends mid-block, so the new lines begin there.)
    assert_ne!(fs::metadata(&path).unwrap().len() % 4096, 0);
    let first = lines(&path);
    // More than two chunks, so the lines are encoded on rayon's threads
    // and appended a stretch at a time.
    let n = 2 * journal::ENCODE_CHUNK + 321;
    let many: Vec<Change> = (0..n)
        .map(|i| {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&(i as u64 + 1000).to_le_bytes());
            Change {
                key: RecordKey(k),
                case_id: format!("case-{}", i / 4).into(),
                variant_id: format!("v-{i}").into(),
                category: Some(["a", "b", "c"][i % 3].into()),
                note: (i % 9 == 0).then(|| format!("note {i}")),
                source: AnnotationSource::Suggestion,
            }
        })
        .collect();
    let previous = store.apply(many.clone()).unwrap();
    assert!(previous.iter().all(Option::is_none));
    let written = lines(&path);
    assert_eq!(written.len(), 1 + n);
    assert_eq!(written[0], first[0]);
    for (line, c) in written[1..].iter().zip(&many) {
        let ann = store.mine(&c.key).expect("decided");
        assert_eq!(*line, encode_through_a_value(ann, None, None));
    }
    let read = AnnotationStore::read(&path).unwrap();
    assert_eq!(read.all(), store.all());
    assert_eq!(read.all().len(), 1 + n);
    // Each event of the save is told apart by its nonce.
    let nonces: HashSet<u64> = read.all().iter().map(|a| a.nonce).collect();
    assert_eq!(nonces.len(), 1 + n);
    assert!(!nonces.contains(&0));
}

#[test]
fn a_staged_decision_and_its_pending_event_share_one_annotation() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    fs::write(&path, format!("{}\n", event(1, "c1", Some("a"), None))).unwrap();
    // Read-only: the decision stays pending, applied in memory.
    let mut store = AnnotationStore::read(&path).unwrap();
    assert!(store.apply(vec![change(2, "c2", Some("b"), None)]).is_err());
    let j = &store.journals[0];
    let entry = j.live.slot(&(key(2), Some(Name::new("")))).unwrap();
    assert_eq!(entry.ann.category.as_deref(), Some("b"));
    assert_eq!(j.pending.len(), 1);
    assert!(Arc::ptr_eq(&entry.ann, &j.pending[0].ann));
}

/// The ids index of `live` rebuilt from what its pairs show.
fn ids_rebuilt(live: &Live) -> BTreeSet<(String, String, RecordKey)> {
    live.pairs
        .iter()
        .filter_map(|(k, p)| {
            p.shown()
                .map(|a| (a.case_id.to_string(), a.variant_id.to_string(), *k))
        })
        .collect()
}

fn ids_indexed(live: &Live) -> BTreeSet<(String, String, RecordKey)> {
    let mut out = BTreeSet::new();
    for (hash, k) in live.ids.filed() {
        let a = live
            .pairs
            .get(k)
            .and_then(Pair::shown)
            .expect("a key filed in the id index shows an annotation");
        assert_eq!(
            hash,
            IdIndex::hash_of(&a.case_id, &a.variant_id),
            "a key filed under ids it does not show"
        );
        assert!(
            out.insert((a.case_id.to_string(), a.variant_id.to_string(), *k)),
            "a key indexed twice"
        );
    }
    let shown = live.pairs.values().filter_map(Pair::shown);
    assert!(
        live.ids
            .counts_match(shown.map(|a| (&*a.case_id, &*a.variant_id))),
        "the counts by case and by variant are not those of the shown pairs"
    );
    out
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// However decisions, clears and resolutions by several reviewers
    /// follow each other, and whatever ids they carry, the ids index and
    /// the count of shown pairs are what the pairs show.
    #[test]
    fn the_ids_index_follows_what_each_pair_shows(
        events in prop::collection::vec(
            (0u8..4, 0u8..3, 0u8..2, 0u8..2, prop::option::of(0u8..3), any::<bool>(), 0u8..8),
            1..60,
        )
    ) {
        let mut live = Live::default();
        for (seq, (k, reviewer, case, variant, cat, noted, kind)) in events.into_iter().enumerate() {
            let ann = Annotation {
                key: key(k),
                case_id: format!("c{case}").into(),
                variant_id: format!("v{variant}").into(),
                category: cat.map(|c| Name::new(&format!("cat{c}"))),
                note: noted.then(|| "n".to_string()),
                reviewer: ["ann", "bob", "cy"][reviewer as usize].into(),
                at: now_rfc3339().into(),
                source: AnnotationSource::Manual,
                carried_from: None,
                nonce: seq as u64 + 1,
            };
            // One event in eight is a resolution settling nothing in particular.
            let resolves = (kind == 0).then(Vec::new);
            live.put(Arc::new(ann), None, resolves, seq as u64);
            prop_assert_eq!(ids_indexed(&live), ids_rebuilt(&live));
            let shown = live.pairs.values().filter(|p| p.shown().is_some()).count();
            prop_assert_eq!(live.shown, shown);
        }
    }

    /// Events put in batches, some with the id index held and filed again
    /// whole afterwards ([`Live::putting`], as the undo of a bulk step
    /// does), leave the index and the count of shown pairs as filing event
    /// by event does.
    #[test]
    fn the_ids_index_filed_again_whole_is_the_one_kept_up_event_by_event(
        batches in prop::collection::vec(
            (
                any::<bool>(),
                prop::collection::vec(
                    (0u8..6, 0u8..2, 0u8..3, 0u8..2, prop::option::of(0u8..2), any::<bool>()),
                    0..16,
                ),
            ),
            1..8,
        )
    ) {
        let (mut held, mut kept) = (Live::default(), Live::default());
        let mut seq = 0u64;
        for (hold, events) in batches {
            // (Told of more clears than the threshold, so that it holds.)
            let holding = hold && held.hold_filing(REFILE_MIN.max(2 * held.shown));
            prop_assert_eq!(holding, hold);
            for (k, reviewer, case, variant, cat, noted) in events {
                seq += 1;
                let ann = Arc::new(Annotation {
                    key: key(k),
                    case_id: format!("c{case}").into(),
                    variant_id: format!("v{variant}").into(),
                    category: cat.map(|c| Name::new(&format!("cat{c}"))),
                    note: noted.then(|| "n".to_string()),
                    reviewer: ["ann", "bob"][reviewer as usize].into(),
                    at: now_rfc3339().into(),
                    source: AnnotationSource::Manual,
                    carried_from: None,
                    nonce: seq,
                });
                held.put(ann.clone(), None, None, seq);
                kept.put(ann, None, None, seq);
                prop_assert_eq!(held.shown, kept.shown);
            }
            held.resume_filing(holding);
            prop_assert!(!held.unfiled);
            prop_assert_eq!(ids_indexed(&held), ids_indexed(&kept));
            prop_assert_eq!(ids_indexed(&held), ids_rebuilt(&held));
            prop_assert_eq!(held.slots, kept.slots);
        }
    }
}

#[test]
fn few_clears_or_fewer_than_half_the_shown_pairs_keep_the_ids_filed_event_by_event() {
    let mut live = Live::default();
    assert!(!live.hold_filing(REFILE_MIN - 1), "too few clears");
    live.shown = 4 * REFILE_MIN;
    assert!(
        !live.hold_filing(REFILE_MIN),
        "fewer than half the shown pairs"
    );
    assert!(live.hold_filing(2 * REFILE_MIN));
    assert!(!live.hold_filing(4 * REFILE_MIN), "already held");
}

/// What a line reads as, to compare two readings.
fn reading(line: Line) -> String {
    match line {
        Line::Event(ann, prev, resolves) => format!("event {ann:?} {prev:?} {resolves:?}"),
        Line::Newer => "newer".to_string(),
        Line::Bad(why) => format!("bad: {why}"),
    }
}

/// Ways to make an event's line into another line: other versions and
/// kinds, repeated or mistyped fields, unknown ones, a cut.
fn mutated_line() -> impl Strategy<Value = String> {
    let edits = prop::collection::vec(
        prop_oneof![
            (0u64..5).prop_map(|v| (r#""v":1"#.to_string(), format!(r#""v":{v}"#))),
            (0u64..5).prop_map(|v| (r#""v":2"#.to_string(), format!(r#""v":{v}"#))),
            prop_oneof![
                Just(r#""kind":"resolution","#),
                Just(r#""kind":"other","#),
                Just(r#""kind":5,"#),
                Just(r#""kind":null,"#),
                Just(r#""key":"00","#),
                Just(r#""key":7,"#),
                Just(r#""case_id":"again","#),
                Just(r#""extra":[1,{"a":2}],"#),
                Just(r#""v":"1","#),
                Just(r#""resolves":null,"#),
                Just(r#""source":"robot","#),
            ]
            .prop_map(|field| ("{".to_string(), format!("{{{field}"))),
        ],
        0..3,
    );
    (any_event(), edits, prop::option::of(0usize..400)).prop_map(
        |((ann, prev, resolves), edits, cut)| {
            let mut line = encode(&ann, prev.as_ref(), resolves.as_deref());
            for (from, to) in edits {
                line = line.replacen(&from, &to, 1);
            }
            if let Some(cut) = cut.filter(|&c| c < line.len() && line.is_char_boundary(c)) {
                line.truncate(cut);
            }
            line
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_line_read_in_one_pass_reads_as_read_in_parts(line in mutated_line()) {
        prop_assert_eq!(
            reading(parse_line(line.as_bytes())),
            reading(parse_line_by_parts(line.as_bytes()))
        );
    }
}

/// A change on the pair numbered `i` (its key's first 8 bytes), in case `c{i}`.
fn numbered(i: usize, cat: &str) -> Change {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&(i as u64).to_le_bytes());
    k[8] = 0xab;
    Change {
        key: RecordKey(k),
        case_id: format!("c{i}").into(),
        variant_id: "v1".into(),
        category: Some(cat.into()),
        note: None,
        source: AnnotationSource::Suggestion,
    }
}

#[test]
fn a_step_of_many_decisions_records_what_each_replaced_as_one_at_a_time_would() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    // Enough for the events to be built on every core.
    let n = PREPARE_PAR_MIN + 7;
    let first: Vec<Change> = (0..n)
        .map(|i| numbered(i, &format!("a{}", i % 5)))
        .collect();
    assert!(distinct_pairs(&first));
    let previous = store.apply(first.clone()).unwrap();
    assert!(previous.iter().all(Option::is_none));
    let second: Vec<Change> = (0..n).map(|i| numbered(i, "b")).collect();
    let previous = store.apply(second).unwrap();
    assert_eq!(previous.len(), n);
    for (i, p) in previous.iter().enumerate() {
        assert_eq!(
            p.as_ref().and_then(|a| a.category.as_deref()),
            Some(format!("a{}", i % 5).as_str()),
            "pair {i}"
        );
    }
    // Each event of the second step names what it replaced, in order.
    let written = lines(&path);
    assert_eq!(written.len(), 2 * n);
    for (i, line) in written[n..].iter().enumerate() {
        let Line::Event(ann, prev, _) = parse_line(line.as_bytes()) else {
            panic!("line {i} is not an event: {line}");
        };
        assert_eq!(&*ann.case_id, format!("c{i}"));
        assert_eq!(ann.category.as_deref(), Some("b"));
        assert_eq!(ann.reviewer, "ann");
        assert_eq!(
            prev.and_then(|p| p.category),
            Some(Name::new(&format!("a{}", i % 5))),
            "line {i}"
        );
    }
    // Every nonce is its own.
    let nonces: BTreeSet<u64> = written[n..]
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["n"].to_string())
        .map(|n| u64::from_str_radix(n.trim_matches('"'), 16).unwrap())
        .collect();
    assert_eq!(nonces.len(), n);

    // A pair twice in one step: the second change replaces the first.
    let mut third: Vec<Change> = (0..n).map(|i| numbered(i, "c")).collect();
    third.push(numbered(0, "d"));
    assert!(!distinct_pairs(&third));
    let previous = store.apply(third).unwrap();
    assert_eq!(previous[0].as_ref().unwrap().category.as_deref(), Some("b"));
    assert_eq!(previous[n].as_ref().unwrap().category.as_deref(), Some("c"));
    let last = lines(&path).pop().unwrap();
    let Line::Event(ann, prev, _) = parse_line(last.as_bytes()) else {
        panic!("not an event: {last}");
    };
    assert_eq!(ann.category.as_deref(), Some("d"));
    assert_eq!(prev.and_then(|p| p.category).as_deref(), Some("c"));
    assert_eq!(
        store.get(&numbered(0, "").key).unwrap().category.as_deref(),
        Some("d")
    );

    // Lent rather than given (a step the app keeps for undo): the same.
    let fourth: Vec<Change> = (0..n).map(|i| numbered(i, "e")).collect();
    let Saved::Done(previous) = store
        .save(fourth.as_slice(), &|_| Vec::new(), None)
        .unwrap()
    else {
        panic!("no conflict without an expectation");
    };
    let held = |i: usize| previous[i].as_ref().and_then(|a| a.category);
    assert_eq!(held(0).as_deref(), Some("d"));
    assert!((1..n).all(|i| held(i).as_deref() == Some("c")));
    assert_eq!(lines(&path).len(), 4 * n + 1);
    assert!((0..n).all(|i| store.get(&fourth[i].key).unwrap().category.as_deref() == Some("e")));
}

/// What a decided pair costs in the store's map: its first decision lives
/// in the pair, not in a second allocation.
#[test]
fn a_pair_holds_its_first_decision_inline() {
    let mut pair = Pair::default();
    assert!(!pair.decisions.spilled());
    let ann = Arc::new(Annotation {
        key: RecordKey([1; 16]),
        case_id: "c".into(),
        variant_id: "v".into(),
        category: Some(Name::new("x")),
        note: None,
        reviewer: Name::new("ana"),
        at: Name::new("2026-12-03T00:00:00Z"),
        source: AnnotationSource::Manual,
        carried_from: None,
        nonce: 1,
    });
    let entry = |ann: Arc<Annotation>| Entry {
        ann,
        prev: None,
        resolves: None,
        seq: 1,
    };
    assert!(!pair.put_decision(entry(ann.clone())));
    assert!(!pair.decisions.spilled(), "one reviewer: inline");
    let other = Arc::new(Annotation {
        reviewer: Name::new("bo"),
        ..Annotation::clone(&ann)
    });
    assert!(!pair.put_decision(entry(other)));
    assert_eq!(pair.decisions.len(), 2);
    assert!(pair.put_decision(entry(ann)), "the same reviewer replaces");
    // (88 bytes on 64-bit targets: the entry, the resolution, the view,
    // the agreement and the newest tick.)
    assert!(std::mem::size_of::<Pair>() <= 96);
}

/// A step of many decisions, each on its own pair: applied in memory
/// while its events are written. Whatever the write meets, every decision
/// takes effect, and a failed write keeps them all pending.
#[test]
fn a_step_of_many_decisions_takes_effect_when_its_write_fails_and_is_retried() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    store.apply(vec![numbered(0, "a")]).unwrap();
    // Root can write anything, so break the journal by making it a folder.
    fs::remove_file(&path).unwrap();
    fs::create_dir(&path).unwrap();
    let n = PREPARE_PAR_MIN + 3;
    let step: Vec<Change> = (1..=n).map(|i| numbered(i, "b")).collect();
    assert!(distinct_pairs(&step));
    let err = store.apply(step.clone()).unwrap_err();
    assert!(matches!(err, SaveError::Io { pending, .. } if pending == n));
    assert_eq!(store.pending(), n);
    assert!(
        step.iter()
            .all(|c| store.get(&c.key).unwrap().category.as_deref() == Some("b")),
        "in memory all the same"
    );
    assert_eq!(store.all().len(), n + 1);
    // An undo of it while the journal is still broken: applied, pending.
    let undo: Vec<Change> = (1..=n).map(|i| numbered(i, "")).collect();
    let guarded = store.save(undo.as_slice(), &|_| Vec::new(), Some(&step));
    assert!(guarded.is_err());
    assert_eq!(store.all().len(), 1);
    // The journal is gone now: the retry writes everything known, the
    // clears included.
    fs::remove_dir(&path).unwrap();
    store.retry_pending().unwrap();
    assert_eq!(store.pending(), 0);
    drop(store);
    let read = AnnotationStore::read(&path).unwrap();
    assert_eq!(read.all().len(), 1);
    assert_eq!(
        read.get(&numbered(0, "").key).unwrap().category.as_deref(),
        Some("a")
    );
    assert!(read.get(&numbered(1, "").key).is_none());
}

/// The same step when the journal was deleted under the store: written
/// whole from memory, with every decision of the step in it.
#[test]
fn a_step_of_many_decisions_on_a_deleted_journal_writes_them_all() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut store = AnnotationStore::open(&path, "ann").unwrap();
    store.apply(vec![numbered(0, "a")]).unwrap();
    fs::remove_file(&path).unwrap();
    let n = PREPARE_PAR_MIN + 5;
    let step: Vec<Change> = (1..=n).map(|i| numbered(i, "b")).collect();
    store.apply(step.clone()).unwrap();
    assert_eq!(store.pending(), 0);
    assert_eq!(lines(&path).len(), n + 1);
    drop(store);
    let read = AnnotationStore::read(&path).unwrap();
    assert_eq!(read.all().len(), n + 1);
    assert!(
        step.iter()
            .all(|c| read.get(&c.key).unwrap().category.as_deref() == Some("b"))
    );
}

/// This triage's decisions of a big step are remembered as its own, and
/// in the order it made them: a journal put back from a copy that holds
/// only its earlier decisions gets the later ones again. (A decision
/// another triage made since, in a compacted file, is no loss and stays.)
#[test]
fn a_step_of_many_decisions_is_written_again_after_a_put_back_of_an_earlier_copy() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut a = AnnotationStore::open(&path, "ann").unwrap();
    let n = PREPARE_PAR_MIN + 11;
    a.apply((0..n).map(|i| numbered(i, "a")).collect()).unwrap();
    let older = fs::read(&path).unwrap();
    a.apply((0..n).map(|i| numbered(i, "b")).collect()).unwrap();
    // Another triage decides pair 7 since, and compacts (a new file).
    let mut b = AnnotationStore::open(&path, "bo").unwrap();
    b.apply(vec![numbered(7, "z")]).unwrap();
    b.compact().unwrap();
    drop(b);
    assert_eq!(a.refresh().unwrap(), 1);
    assert_eq!(a.restored(), 0, "the compacted file holds every decision");
    assert_eq!(a.decisions(&numbered(7, "").key).len(), 2);
    // As `git checkout` does: a new file with the first step only.
    let copy = dir.path().join("copy");
    fs::write(&copy, &older).unwrap();
    fs::rename(&copy, &path).unwrap();
    a.refresh().unwrap();
    assert_eq!(a.restored(), n, "every decision of the second step");
    drop(a);
    let read = AnnotationStore::read(&path).unwrap();
    for i in 0..n {
        assert_eq!(
            read.decision_of(&numbered(i, "").key, "ann")
                .and_then(|d| d.category.as_deref()),
            Some("b"),
            "pair {i}"
        );
    }
}

/// An undo of a big step: each pair's decision is looked up once, for the
/// check against what the step wrote and for what the undo replaces. One
/// pair decided since by another triage stops it all; otherwise every
/// event names what it replaced, whether or not the step and the check
/// list the pairs in the same order.
#[test]
fn an_undo_of_many_decisions_checks_each_pair_and_names_what_it_replaces() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut a = AnnotationStore::open(&path, "ann").unwrap();
    let n = PREPARE_PAR_MIN + 9;
    let before: Vec<Change> = (0..n).map(|i| numbered(i, "")).collect();
    let after: Vec<Change> = (0..n)
        .map(|i| numbered(i, &format!("b{}", i % 3)))
        .collect();
    a.apply(after.clone()).unwrap();
    // The same reviewer in another triage changes pair 42 since.
    let mut b = AnnotationStore::open(&path, "ann").unwrap();
    b.apply(vec![numbered(42, "z")]).unwrap();
    drop(b);
    let lines_before = lines(&path).len();
    let Saved::Conflict(conflicts) = a
        .save(before.as_slice(), &|_| Vec::new(), Some(&after))
        .unwrap()
    else {
        panic!("pair 42 changed since");
    };
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].key, numbered(42, "").key);
    assert_eq!(
        conflicts[0]
            .now
            .as_ref()
            .and_then(|a| a.category.as_deref()),
        Some("z")
    );
    assert_eq!(lines(&path).len(), lines_before, "nothing written");
    assert_eq!(
        a.get(&numbered(0, "").key).unwrap().category.as_deref(),
        Some("b0")
    );

    // Pair 42 back as the step left it: the undo goes through.
    a.apply(vec![after[42].clone()]).unwrap();
    let Saved::Done(previous) = a
        .save(before.as_slice(), &|_| Vec::new(), Some(&after))
        .unwrap()
    else {
        panic!("no pair changed since");
    };
    for (i, p) in previous.iter().enumerate() {
        let was = p.as_ref().and_then(|a| a.category.as_deref());
        assert_eq!(was, Some(format!("b{}", i % 3).as_str()), "pair {i}");
    }
    assert_eq!(a.all().len(), 0);
    let written = lines(&path);
    for (i, line) in written[written.len() - n..].iter().enumerate() {
        let Line::Event(ann, prev, _) = parse_line(line.as_bytes()) else {
            panic!("not an event: {line}");
        };
        assert!(ann.is_empty());
        let was = prev.and_then(|p| p.category);
        assert_eq!(
            was.as_deref(),
            Some(format!("b{}", i % 3).as_str()),
            "{line}"
        );
    }
    // A redo whose check lists the pairs the other way round.
    let reversed: Vec<Change> = before.iter().rev().cloned().collect();
    let Saved::Done(previous) = a
        .save(after.as_slice(), &|_| Vec::new(), Some(&reversed))
        .unwrap()
    else {
        panic!("no pair changed since");
    };
    assert!(previous.iter().all(Option::is_none));
    assert_eq!(a.all().len(), n);
    let written = lines(&path);
    for line in &written[written.len() - n..] {
        let Line::Event(ann, prev, _) = parse_line(line.as_bytes()) else {
            panic!("not an event: {line}");
        };
        assert!(ann.category.is_some_and(|c| c.starts_with('b')));
        assert_eq!(prev.and_then(|p| p.category), None, "{line}");
    }
}

/// What an undo's events replaced is shared among them, one per category
/// when there is no note (a million alike would each be an allocation);
/// a note keeps its own.
#[test]
fn an_undo_of_many_decisions_shares_what_they_replaced() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut a = AnnotationStore::open(&path, "ann").unwrap();
    let n = PREPARE_PAR_MIN + 13;
    let mut after: Vec<Change> = (0..n)
        .map(|i| numbered(i, &format!("b{}", i % 3)))
        .collect();
    after[5].note = Some("kept".to_string());
    a.apply(after.clone()).unwrap();
    let before: Vec<Change> = (0..n).map(|i| numbered(i, "")).collect();
    let saved = a.save(before.as_slice(), &|_| Vec::new(), Some(&after));
    assert!(matches!(saved, Ok(Saved::Done(_))));
    let prevs: Vec<&Arc<Prev>> = a.journals[0]
        .live
        .pairs
        .values()
        .flat_map(|p| p.decisions.iter())
        .filter_map(|e| e.prev.as_ref())
        .collect();
    assert_eq!(prevs.len(), n);
    let distinct: BTreeSet<*const Prev> = prevs.iter().map(|p| Arc::as_ptr(p)).collect();
    assert!(
        distinct.len() < n / 100,
        "{} distinct of {n}",
        distinct.len()
    );
    let with_note: Vec<_> = prevs.iter().filter(|p| p.note.is_some()).collect();
    assert_eq!(with_note.len(), 1);
    assert_eq!(with_note[0].note.as_deref(), Some("kept"));
    assert_eq!(with_note[0].category.as_deref(), Some("b2"));
}

/// A write that fails (a full disk) leaves its events pending, and no trace
/// of them in the order of what the file holds: once written after another
/// triage's decision on the pair, this triage's is the newer one, and a
/// copy put back with only the other's gets it again. (Listed from the
/// failed write, it would seem the older one and be lost.)
#[cfg(target_os = "linux")]
#[test]
fn a_decision_whose_write_failed_counts_as_written_when_it_is_written() {
    let dir = TempDir::new().unwrap();
    let Some((path, mut a)) = store_on_a_full_disk(&dir) else {
        return;
    };
    assert!(a.apply(vec![numbered(1, "ours")]).is_err());
    assert_eq!(a.pending(), 1);
    fs::remove_file(&path).unwrap();
    fs::write(&path, "").unwrap();
    // The same reviewer in a second triage decides the pair meanwhile.
    let mut b = AnnotationStore::open(&path, "ann").unwrap();
    b.apply(vec![numbered(1, "theirs")]).unwrap();
    drop(b);
    let theirs_only = fs::read(&path).unwrap();
    a.retry_pending().unwrap();
    assert_eq!(lines(&path).len(), 2, "theirs, then ours");
    // As `git checkout` does: a new file with their decision only.
    let copy = dir.path().join("copy");
    fs::write(&copy, &theirs_only).unwrap();
    fs::rename(&copy, &path).unwrap();
    a.refresh().unwrap();
    assert_eq!(a.restored(), 1, "ours came after theirs");
    drop(a);
    let read = AnnotationStore::read(&path).unwrap();
    assert_eq!(
        read.get(&numbered(1, "").key)
            .and_then(|d| d.category.as_deref()),
        Some("ours")
    );
}

/// Decisions another triage wrote just before a big step on the same pairs
/// are replaced by it at once: nothing to tell the reviewer about. One on
/// a pair the step leaves alone is.
#[test]
fn a_step_of_many_decisions_replaces_what_arrived_just_before_it_silently() {
    let dir = TempDir::new().unwrap();
    let path = journal(&dir);
    let mut a = AnnotationStore::open(&path, "ann").unwrap();
    a.apply(vec![numbered(0, "a")]).unwrap();
    let mut b = AnnotationStore::open(&path, "ann").unwrap();
    let n = PREPARE_PAR_MIN + 7;
    b.apply(vec![numbered(3, "theirs"), numbered(n + 1, "theirs")])
        .unwrap();
    drop(b);
    let step: Vec<Change> = (1..=n).map(|i| numbered(i, "b")).collect();
    assert!(distinct_pairs(&step));
    a.apply(step).unwrap();
    assert_eq!(a.refresh().unwrap(), 1, "only the pair the step left alone");
    assert_eq!(
        a.get(&numbered(3, "").key)
            .and_then(|d| d.category.as_deref()),
        Some("b")
    );
}

/// A large step put in the order of the store's table keeps every change,
/// keeps the changes on one pair in their order, says where its first
/// change went, and decides as the step in its own order does. A small step
/// is left as it is.
#[test]
fn a_large_step_in_the_tables_order_decides_as_in_its_own() {
    let dir = TempDir::new().unwrap();
    let mut store = AnnotationStore::open(&journal(&dir), "ann").unwrap();
    let small: Vec<Change> = (0..10).map(|i| numbered(i, "a")).collect();
    let mut same = small.clone();
    assert_eq!(store.order_for_lookups(&mut same), 0);
    assert_eq!(same, small);

    let n = PREPARE_PAR_MIN + 7;
    // Pair n twice: "a" first, "b" last.
    let mut given: Vec<Change> = (0..n).map(|i| numbered(n - i, "a")).collect();
    given.push(numbered(n, "b"));
    let mut step = given.clone();
    let lead = store.order_for_lookups(&mut step);
    assert_eq!(step[lead], given[0]);
    assert_ne!(step, given, "put in another order");
    let sorted = |v: &[Change]| {
        let mut v: Vec<(RecordKey, Option<Name>)> = v.iter().map(|c| (c.key, c.category)).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(sorted(&step), sorted(&given), "every change, once");
    let on_n: Vec<Option<&str>> = step
        .iter()
        .filter(|c| c.key == numbered(n, "").key)
        .map(|c| c.category.as_deref())
        .collect();
    assert_eq!(on_n, [Some("a"), Some("b")]);

    let other_dir = TempDir::new().unwrap();
    let mut other = AnnotationStore::open(&journal(&other_dir), "ann").unwrap();
    store.apply(step).unwrap();
    other.apply(given).unwrap();
    let category = |s: &AnnotationStore, i: usize| {
        s.get(&numbered(i, "").key)
            .and_then(|a| a.category.map(String::from))
    };
    for i in 0..=n {
        assert_eq!(category(&store, i), category(&other, i), "pair {i}");
    }
    assert_eq!(category(&store, n).as_deref(), Some("b"));

    // Once the table holds them, a step on the same pairs is ordered as it
    // sits: its first change is found again.
    let mut again: Vec<Change> = (1..=n).map(|i| numbered(i, "c")).collect();
    let first = again[0].clone();
    let lead = store.order_for_lookups(&mut again);
    assert_eq!(again[lead], first);
}
