//! Reading spans of a run larger than memory around the page cache.
//!
//! A text search, or `Y` on millions of failures, reads most of a run again
//! in spans of a few MiB ([`crate::core::index::RunIndex::for_each_line`]).
//! Read through the page cache, every page of a file larger than memory is
//! first added to the cache (evicting another, and charging it to the
//! process), then copied to the reader, then given back
//! ([`super::drop_behind`]): on this project's 23 GB test machine, `wc -l`
//! on a 27 GB run spent 13 to 45 s in the kernel depending on what the
//! cache held, while `dd iflag=direct` read the same file in 20 to 29 s
//! with 1 s in the kernel. So on a file larger than memory, span reads
//! open the file a second time with `O_DIRECT` and read into aligned
//! buffers: the disk writes straight into them. A file that fits in memory
//! is read as before, through the cache that keeps it for the next read.
//!
//! A direct read has no read-ahead, so the caller keeps the next span's
//! read in flight while it works on the current one
//! (`RunIndex::for_each_line` reads on a thread of its own). Where the
//! system cannot read a file directly (not Linux, no `/proc`, a filesystem
//! that refuses `O_DIRECT` or an alignment), reads go through the cache.
//!
//! The aligned blocks and the second, direct handle also serve a large
//! save's journal lines (`core::annotations::append`).

use std::fs::File;
use std::io;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

/// Direct reads and writes start, end and land on multiples of this many
/// bytes: a multiple of the block size of every disk and filesystem Linux
/// reads and writes directly.
pub(crate) const ALIGN: usize = 4096;

/// One aligned block of a buffer for direct reads or writes.
#[repr(C, align(4096))]
#[derive(Clone, Copy)]
pub(crate) struct Block(pub(crate) [u8; ALIGN]);

impl Block {
    pub(crate) const ZERO: Block = Block([0; ALIGN]);
}

/// Blocks as the bytes they hold.
pub(crate) fn as_bytes(blocks: &[Block]) -> &[u8] {
    // SAFETY: `Block` is `repr(C)` around a byte array, so the blocks are
    // `len * ALIGN` initialised bytes in one allocation.
    unsafe { std::slice::from_raw_parts(blocks.as_ptr().cast::<u8>(), blocks.len() * ALIGN) }
}

/// Blocks as the bytes they hold, to fill.
pub(crate) fn as_bytes_mut(blocks: &mut [Block]) -> &mut [u8] {
    // SAFETY: as in `as_bytes`; the borrow keeps the blocks alive and unshared.
    unsafe {
        std::slice::from_raw_parts_mut(blocks.as_mut_ptr().cast::<u8>(), blocks.len() * ALIGN)
    }
}

/// A reusable buffer for reading spans: plain bytes for reads through the
/// page cache, aligned blocks for direct ones.
#[derive(Default)]
pub struct SpanBuf {
    plain: Vec<u8>,
    blocks: Vec<Block>,
    /// Which of the two holds the last span read, where it begins there,
    /// and its length.
    direct: bool,
    at: usize,
    len: usize,
}

impl SpanBuf {
    /// The span last read into this buffer ([`super::open::RunFile::read_span`]).
    pub fn bytes(&self) -> &[u8] {
        let held = if self.direct {
            self.aligned()
        } else {
            &self.plain
        };
        &held[self.at..self.at + self.len]
    }

    /// The bytes this buffer holds on to.
    pub fn capacity(&self) -> usize {
        self.plain.capacity() + self.blocks.capacity() * ALIGN
    }

    fn aligned(&self) -> &[u8] {
        as_bytes(&self.blocks)
    }

    /// At least `len` aligned bytes (the blocks kept for the next read).
    fn aligned_mut(&mut self, len: usize) -> &mut [u8] {
        let n = len.div_ceil(ALIGN);
        if self.blocks.len() < n {
            self.blocks.resize(n, Block::ZERO);
        }
        as_bytes_mut(&mut self.blocks)
    }

    /// Read `len` bytes at `offset` of `file` through the page cache.
    pub(super) fn read_plain(&mut self, file: &File, offset: u64, len: usize) -> io::Result<()> {
        self.plain.resize(len, 0);
        super::open::read_exact_at(file, &mut self.plain, offset)?;
        (self.direct, self.at, self.len) = (false, 0, len);
        Ok(())
    }

    /// Read `len` bytes at `offset` of `file`, opened with `O_DIRECT`: the
    /// aligned blocks around them. A file that ends before them is an
    /// error, as [`super::open::read_exact_at`] gives.
    fn read_direct(&mut self, file: &File, offset: u64, len: usize) -> io::Result<()> {
        let start = offset & !(ALIGN as u64 - 1);
        let skip = (offset - start) as usize;
        let want = skip + len;
        let buf = self.aligned_mut(want);
        let buf = &mut buf[..want.next_multiple_of(ALIGN)];
        let got = super::open::read_some_at(file, buf, start)?;
        if got < want {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file ends before the lines it had",
            ));
        }
        (self.direct, self.at, self.len) = (true, skip, len);
        Ok(())
    }
}

/// Whether span reads of one file go around the page cache.
#[derive(Debug, Default)]
pub(crate) struct Direct {
    /// The file opened again with `O_DIRECT`, at the first span read
    /// ([`Direct::read`]); `None` when the file fits in memory or cannot be
    /// read directly.
    handle: OnceLock<Option<File>>,
    /// [`AUTO`], [`ALWAYS`] or [`NEVER`].
    mode: AtomicU8,
}

/// Direct reads for a file larger than memory.
const AUTO: u8 = 0;
/// Direct reads whatever the file's size (tests).
const ALWAYS: u8 = 1;
/// Reads through the page cache (after a direct read was refused).
const NEVER: u8 = 2;

impl Direct {
    /// Read direct whatever the size of the file (tests: their files fit in
    /// memory). Before the first span read.
    #[cfg(test)]
    pub(crate) fn always(&self) {
        self.mode.store(ALWAYS, Ordering::Relaxed);
    }

    /// The direct handle on `reader`'s file, if its spans are read directly.
    fn handle(&self, reader: &File) -> Option<&File> {
        let mode = self.mode.load(Ordering::Relaxed);
        if mode == NEVER {
            return None;
        }
        self.handle
            .get_or_init(|| {
                let wanted = mode == ALWAYS
                    || (mode == AUTO && super::drop_behind::larger_than_memory(reader));
                wanted.then(|| open_direct(reader)).flatten()
            })
            .as_ref()
    }

    /// Whether span reads of `reader`'s file go around the page cache.
    pub(crate) fn active(&self, reader: &File) -> bool {
        self.handle(reader).is_some()
    }

    /// Read `len` bytes at `offset` into `buf`: directly when the file's
    /// spans are read so, else (or when the system refuses it, from then
    /// on) through the page cache. Whether the read was direct.
    pub(crate) fn read(
        &self,
        reader: &File,
        buf: &mut SpanBuf,
        offset: u64,
        len: usize,
    ) -> io::Result<bool> {
        if let Some(direct) = self.handle(reader) {
            match buf.read_direct(direct, offset, len) {
                Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                    // An alignment this filesystem does not take: never again.
                    self.mode.store(NEVER, Ordering::Relaxed);
                }
                done => return done.map(|()| true),
            }
        }
        buf.read_plain(reader, offset, len).map(|()| false)
    }
}

/// `reader`'s file opened again for direct reads.
fn open_direct(reader: &File) -> Option<File> {
    reopen_direct(reader, false)
}

/// `file` opened again with `O_DIRECT`, to read or (`write`) to write at
/// given offsets, through `/proc/self/fd` so that it is the same file even
/// if its path now names another one. `None` where the system cannot.
#[cfg(target_os = "linux")]
pub(crate) fn reopen_direct(file: &File, write: bool) -> Option<File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let path = format!("/proc/self/fd/{}", file.as_raw_fd());
    let direct = std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .ok()?;
    let (a, b) = (file.metadata().ok()?, direct.metadata().ok()?);
    (a.dev() == b.dev() && a.ino() == b.ino()).then_some(direct)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn reopen_direct(_: &File, _: bool) -> Option<File> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    fn file_of(data: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(data).unwrap();
        f.flush().unwrap();
        f
    }

    /// Whether this system reads files in the temporary folder directly:
    /// where it does not, the tests below check the fallback instead.
    fn direct_here() -> bool {
        let f = file_of(b"x");
        open_direct(f.as_file()).is_some()
    }

    proptest! {
        /// Any span, aligned or not, up to the end of the file: the same
        /// bytes directly as through the page cache.
        #[test]
        fn a_direct_read_gives_the_bytes_of_a_plain_one(
            size in 1usize..20_000,
            picks in proptest::collection::vec((0usize..20_000, 0usize..9_000), 1..12),
        ) {
            let data: Vec<u8> = (0..size).map(|i| (i * 31 % 253) as u8).collect();
            let f = file_of(&data);
            let direct = Direct::default();
            direct.always();
            prop_assert_eq!(direct.active(f.as_file()), direct_here());
            let mut buf = SpanBuf::default();
            for (offset, len) in picks {
                let offset = offset % size;
                let len = len.min(size - offset);
                let read_direct = direct.read(f.as_file(), &mut buf, offset as u64, len).unwrap();
                prop_assert_eq!(read_direct, direct_here());
                prop_assert_eq!(buf.bytes(), &data[offset..offset + len]);
            }
        }
    }

    /// Past the end of the file (it was cut short under the index): an
    /// error, as a plain read gives.
    #[test]
    fn a_span_past_the_end_is_an_error_either_way() {
        let f = file_of(&[7u8; 5000]);
        for always in [true, false] {
            let direct = Direct::default();
            if always {
                direct.always();
            }
            let mut buf = SpanBuf::default();
            let e = direct.read(f.as_file(), &mut buf, 4000, 2000).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
            direct.read(f.as_file(), &mut buf, 4000, 1000).unwrap();
            assert_eq!(buf.bytes(), &[7u8; 1000][..]);
        }
    }

    /// A file that fits in memory is read through the page cache unless told otherwise.
    #[test]
    fn a_small_file_is_read_through_the_cache() {
        let f = file_of(b"hello");
        assert!(!Direct::default().active(f.as_file()));
    }

    /// The direct handle is the file the index opened, even after its path
    /// was given to another file.
    #[test]
    fn the_direct_handle_is_the_opened_file_not_the_path() {
        if !direct_here() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        std::fs::write(&path, vec![b'a'; 8192]).unwrap();
        let reader = File::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, vec![b'b'; 8192]).unwrap();
        let direct = Direct::default();
        direct.always();
        let mut buf = SpanBuf::default();
        direct.read(&reader, &mut buf, 100, 5000).unwrap();
        assert!(buf.bytes().iter().all(|&b| b == b'a'));
    }
}
