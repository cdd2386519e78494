//! Appending a large save's lines around the page cache.
//!
//! A save of millions of decisions (`Y y` on a run of ten million pairs,
//! its undo) appends hundreds of megabytes of journal lines. Written
//! through the page cache, each page is first found and cleared by the
//! kernel, then filled by a copy, then written out by `fsync`; on this
//! project's test machine (a virtual machine whose host takes idle memory
//! back) 650 MB took 1.9–2.4 s of the kernel's time that way, and 0.4–0.5 s
//! written directly (`dd oflag=direct`), with the disk writing straight
//! from the process's buffer. So an append of many lines opens the journal
//! a second time with `O_DIRECT` and writes whole aligned blocks through it:
//! the bytes up to the first block boundary after the journal's end, and
//! the last partial block, go through the page cache as before, so no byte
//! before the journal's end is ever written again.
//!
//! The lines land in the file in order either way, so what a crash leaves
//! is the journal followed by a prefix of the new lines (the replay sets a
//! torn last line aside), and the caller's `fsync` (of the inode: data
//! written either way, and the file's new length) makes them durable.
//! Where the system refuses a direct write (not Linux, no `/proc`, a
//! filesystem without `O_DIRECT`, an alignment it does not take) the lines
//! go through the page cache.

use std::fs::File;
use std::io::{self, Write};

use crate::core::load::direct::{ALIGN, Block, as_bytes, as_bytes_mut, reopen_direct};

/// From this many bytes expected, an append goes around the page cache.
/// Below it, a direct write saves less than it costs: the kernel's copy of a
/// few megabytes into the cache is quicker than the disk.
pub(super) const DIRECT_MIN: usize = 32 << 20;

/// How many bytes are gathered before they are written directly.
const GATHER: usize = 8 << 20;

/// Appends bytes to a journal opened for appending: whole aligned blocks
/// through a second, direct handle on the same file where it can.
pub(super) struct Appender<'f> {
    /// The journal, opened to append.
    file: &'f mut File,
    /// The same file opened with `O_DIRECT`; `None`: every byte goes
    /// through `file`.
    direct: Option<File>,
    /// Where the next byte lands: the file's end, the gathered bytes not
    /// counted. Aligned while bytes are gathered.
    end: u64,
    /// Gathered bytes, `fill` of them, waiting to be written at `end`.
    blocks: Vec<Block>,
    fill: usize,
}

impl<'f> Appender<'f> {
    /// Append to `file`, which ends at `end`; around the page cache when
    /// `around` (the caller expects [`DIRECT_MIN`] bytes or more) and the
    /// system allows it.
    pub(super) fn new(file: &'f mut File, end: u64, around: bool) -> Appender<'f> {
        let direct = around.then(|| reopen_direct(file, true)).flatten();
        Appender::with(file, end, direct, GATHER)
    }

    /// Append to `file`, which ends at `end`, through `direct` if given,
    /// gathering `gather` bytes (whole blocks) between direct writes.
    fn with(file: &'f mut File, end: u64, direct: Option<File>, gather: usize) -> Appender<'f> {
        let blocks = match direct {
            Some(_) => vec![Block::ZERO; gather.div_ceil(ALIGN).max(1)],
            None => Vec::new(),
        };
        Appender {
            file,
            direct,
            end,
            blocks,
            fill: 0,
        }
    }

    /// Append these bytes (after those given before).
    pub(super) fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        if self.direct.is_none() {
            self.file.write_all(bytes)?;
            self.end += bytes.len() as u64;
            return Ok(());
        }
        // Up to the first block boundary, through the cache.
        if self.fill == 0 {
            let head = (self.end.next_multiple_of(ALIGN as u64) - self.end) as usize;
            let head = head.min(bytes.len());
            self.file.write_all(&bytes[..head])?;
            self.end += head as u64;
            bytes = &bytes[head..];
        }
        let gather = self.blocks.len() * ALIGN;
        while !bytes.is_empty() {
            let room = gather - self.fill;
            let take = room.min(bytes.len());
            let fill = self.fill;
            as_bytes_mut(&mut self.blocks)[fill..fill + take].copy_from_slice(&bytes[..take]);
            self.fill += take;
            bytes = &bytes[take..];
            if self.fill == gather {
                self.write_blocks()?;
            }
        }
        Ok(())
    }

    /// Write what is gathered: the whole blocks directly, the rest (less
    /// than a block) through the cache. The file then ends at [`Self::end`].
    pub(super) fn finish(mut self) -> io::Result<u64> {
        self.write_blocks()?;
        if self.fill > 0 {
            let fill = self.fill;
            self.file.write_all(&as_bytes(&self.blocks)[..fill])?;
            self.end += fill as u64;
            self.fill = 0;
        }
        Ok(self.end)
    }

    /// Write the whole blocks gathered at the file's end, directly; keep
    /// the rest.
    fn write_blocks(&mut self) -> io::Result<()> {
        let whole = self.fill / ALIGN * ALIGN;
        if whole == 0 {
            return Ok(());
        }
        let Some(direct) = &self.direct else {
            return Ok(());
        };
        match write_all_at(direct, &as_bytes(&self.blocks)[..whole], self.end) {
            Ok(()) => {
                self.end += whole as u64;
                let fill = self.fill;
                as_bytes_mut(&mut self.blocks).copy_within(whole..fill, 0);
                self.fill -= whole;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                // An alignment this filesystem does not take: the rest goes
                // through the cache, if nothing of this write landed.
                if self.file.metadata()?.len() != self.end {
                    return Err(e);
                }
                self.direct = None;
                let fill = std::mem::take(&mut self.fill);
                let gathered = std::mem::take(&mut self.blocks);
                let bytes = &as_bytes(&gathered)[..fill];
                self.file.write_all(bytes)?;
                self.end += fill as u64;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(unix)]
fn write_all_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

#[cfg(not(unix))]
fn write_all_at(_: &File, _: &[u8], _: u64) -> io::Result<()> {
    unreachable!("no direct handle is opened off Unix")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::fs::OpenOptions;

    /// A file holding `start`, opened to append as a journal is, and a
    /// direct handle on it where the system gives one.
    fn journal_of(start: &[u8]) -> (tempfile::TempDir, std::path::PathBuf, File, Option<File>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        std::fs::write(&path, start).unwrap();
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&path)
            .unwrap();
        let direct = reopen_direct(&file, true);
        (dir, path, file, direct)
    }

    proptest! {
        /// Whatever the journal's length before (aligned or not), however
        /// the bytes come (pieces smaller and larger than a block or the
        /// gathering buffer, empty ones), and directly or not: the file
        /// ends up as the journal followed by the bytes, and says where it
        /// ends.
        #[test]
        fn an_append_leaves_the_journal_then_the_bytes(
            start in 0usize..10_000,
            pieces in proptest::collection::vec(0usize..20_000, 0..12),
            gather_blocks in 1usize..4,
            direct in any::<bool>(),
        ) {
            let before: Vec<u8> = (0..start).map(|i| b'a' + (i % 26) as u8).collect();
            let (_dir, path, mut file, handle) = journal_of(&before);
            let handle = handle.filter(|_| direct);
            let mut expected = before.clone();
            let mut appender = Appender::with(&mut file, start as u64, handle, gather_blocks * ALIGN);
            for (n, len) in pieces.iter().enumerate() {
                let piece: Vec<u8> = (0..*len).map(|i| (i * 7 + n) as u8).collect();
                appender.write(&piece).unwrap();
                expected.extend_from_slice(&piece);
            }
            let end = appender.finish().unwrap();
            prop_assert_eq!(end, expected.len() as u64);
            let got = std::fs::read(&path).unwrap();
            prop_assert_eq!(got.len(), expected.len());
            prop_assert!(got == expected, "the file differs from the journal and the bytes");
        }
    }

    /// The direct handle is the journal that was opened, even after its
    /// path was given to another file (a copy put back).
    #[test]
    fn the_direct_handle_is_the_opened_journal_not_the_path() {
        let (_dir, path, mut file, handle) = journal_of(&[b'a'; 5000]);
        if handle.is_none() {
            return;
        }
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"other\n").unwrap();
        let mut appender = Appender::new(&mut file, 5000, true);
        appender.write(&[b'b'; 20_000]).unwrap();
        assert_eq!(appender.finish().unwrap(), 25_000);
        assert_eq!(std::fs::read(&path).unwrap(), b"other\n");
        let mut held = Vec::new();
        use std::io::{Read, Seek, SeekFrom};
        file.seek(SeekFrom::Start(0)).unwrap();
        file.read_to_end(&mut held).unwrap();
        assert_eq!(held.len(), 25_000);
        assert!(held[..5000].iter().all(|&b| b == b'a'));
        assert!(held[5000..].iter().all(|&b| b == b'b'));
    }
}
