//! Reading a run larger than the machine's memory without filling the page
//! cache with it.
//!
//! The loader reads each file once, front to back, and keeps nothing of the
//! bytes it has parsed. On a file larger than memory, the kernel would keep
//! every page read until memory is full, and from then on every allocation
//! of the viewer (a sort's keys, a query's view, the summary's tables) would
//! wait while the kernel reclaims pages of a file nobody reads again. So the
//! pages behind the reader are given back as it goes
//! (`posix_fadvise(POSIX_FADV_DONTNEED)`), and the kernel is told the file
//! is read in order (`POSIX_FADV_SEQUENTIAL`, a larger read-ahead). A text
//! search or the reading of many record keys reads the lines again in
//! spans, and gives each span's pages back once read ([`give_back_range`]).
//! A file that fits in memory keeps its pages: reading a line again for the
//! detail or a text search then needs no disk.

use std::fs::File;
use std::io::{self, Read};

/// Pages are given back in steps of this many bytes behind the reader.
const STEP: u64 = if cfg!(test) { 4096 } else { 64 << 20 };

/// A file read front to back, its pages given back behind the reader.
pub(crate) struct DropBehind {
    file: File,
    /// Bytes read so far.
    pos: u64,
    /// Bytes given back so far (from the start of the file).
    dropped: u64,
}

impl DropBehind {
    /// `file` as the loader reads it: with its pages given back behind the
    /// reader when it is larger than the machine's memory, as it is
    /// otherwise. Read in order either way.
    pub(crate) fn wrap(file: File) -> Box<dyn Read + Send> {
        advise(&file, 0, 0, Advice::Sequential);
        if larger_than_memory(&file) {
            Box::new(DropBehind::new(file))
        } else {
            Box::new(file)
        }
    }

    fn new(file: File) -> DropBehind {
        DropBehind {
            file,
            pos: 0,
            dropped: 0,
        }
    }
}

impl Read for DropBehind {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.pos += n as u64;
        if self.pos - self.dropped >= STEP {
            advise(
                &self.file,
                self.dropped,
                self.pos - self.dropped,
                Advice::DontNeed,
            );
            self.dropped = self.pos;
        }
        Ok(n)
    }
}

/// Give the pages of `len` bytes of `file` from `offset` back to the
/// kernel if the file is larger than the machine's memory, after a pass
/// read them (a text search, or the record keys of many rows, read in
/// spans: the page cache then never fills with a run read once).
pub(crate) fn give_back_range(file: &File, offset: u64, len: u64) {
    if len > 0 && larger_than_memory(file) {
        advise(file, offset, len, Advice::DontNeed);
    }
}

/// Ask the kernel to start reading `len` bytes of `file` from `offset`
/// into the page cache now, while the reader works on what it has.
pub(crate) fn read_ahead(file: &File, offset: u64, len: u64) {
    if len > 0 {
        advise(file, offset, len, Advice::WillNeed);
    }
}

pub(super) fn larger_than_memory(file: &File) -> bool {
    file.metadata()
        .is_ok_and(|m| m.is_file() && physical_memory().is_some_and(|mem| m.len() > mem))
}

/// What the kernel is told about a range of a file.
#[derive(Debug, Clone, Copy)]
enum Advice {
    /// The file is read in order.
    Sequential,
    /// The range will not be read again soon.
    DontNeed,
    /// The range will be read soon.
    WillNeed,
}

/// Tell the kernel about `len` bytes of `file` from `offset` (0: to the
/// end). Advice only: where it is not supported, or fails, nothing changes.
#[cfg(target_os = "linux")]
fn advise(file: &File, offset: u64, len: u64, advice: Advice) {
    use std::os::fd::AsRawFd;
    let advice = match advice {
        Advice::Sequential => libc::POSIX_FADV_SEQUENTIAL,
        Advice::DontNeed => libc::POSIX_FADV_DONTNEED,
        Advice::WillNeed => libc::POSIX_FADV_WILLNEED,
    };
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return;
    };
    // SAFETY: the descriptor is open for the life of `file`; the call reads
    // no memory of ours.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), offset, len, advice);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_: &File, _: u64, _: u64, _: Advice) {}

/// The machine's memory in bytes, if known.
fn physical_memory() -> Option<u64> {
    #[cfg(unix)]
    {
        // SAFETY: sysconf reads no memory of ours.
        let (pages, size) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        (pages > 0 && size > 0).then(|| pages as u64 * size as u64)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Giving pages back changes nothing of what is read, in reads of any
    /// size, across the steps.
    #[test]
    fn reads_the_same_bytes_while_giving_pages_back() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let data: Vec<u8> = (0..5 * STEP as usize + 123)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        f.write_all(&data).unwrap();
        f.flush().unwrap();
        for chunk in [1usize, 100, 4096, 10_000, 1 << 20] {
            let mut r = DropBehind::new(File::open(f.path()).unwrap());
            let mut got = Vec::new();
            let mut buf = vec![0u8; chunk];
            loop {
                let n = r.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            assert_eq!(got, data, "reads of {chunk} bytes");
            assert_eq!(r.pos, data.len() as u64);
            assert!(r.dropped > 0 && r.dropped <= r.pos, "{}", r.dropped);
        }
    }

    /// A file that fits in memory is read as it is.
    #[test]
    fn a_small_file_is_read_as_it_is() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"{}\n{}\n").unwrap();
        f.flush().unwrap();
        let mut r = DropBehind::wrap(File::open(f.path()).unwrap());
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        assert_eq!(s, "{}\n{}\n");
        assert!(physical_memory().is_some_and(|m| m > 6));
    }
}
