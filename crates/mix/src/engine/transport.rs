//! How a record stream travels from the program's engine to hpcscope: through a pipe (the
//! records themselves), or in a shared ring with a notice per batch through the pipe. The
//! records and the framing are `hpcscope_plugin_format`'s; an engine that writes them (the
//! QEMU plugin, `memfd=` and `memring=`) hands its reader a [`RecordStream`].

use std::io::Read;

use hpcscope_cachesim::PackedAccess;
use hpcscope_plugin_format::{MAGIC, RING_MAGIC, RING_SLOT_RECORDS, ReadError, notice_parts};

use crate::error::MixError;

/// How the memory stream travels from the plugin to the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// The records through a pipe (the plugin's `memfd=`).
    Pipe,
    /// The records in a shared ring, a notice per batch through the pipe (`memring=`);
    /// the default. Where the ring cannot be made (no `memfd_create`), the pipe.
    Ring,
}

impl Transport {
    /// `HPCSCOPE_MIX_STREAM=pipe` picks the pipe (to compare the two); otherwise the ring.
    pub fn from_env() -> Transport {
        match std::env::var("HPCSCOPE_MIX_STREAM").as_deref() {
            Ok("pipe") => Transport::Pipe,
            _ => Transport::Ring,
        }
    }
}

/// A pipe for a record stream: `[read, write]`, the write end inherited by the engine's
/// child (no close-on-exec), the read end ours alone (close-on-exec).
pub(crate) fn stream_pipe() -> Result<[i32; 2], MixError> {
    let mut fds = [-1i32; 2];
    // SAFETY: pipe() fills the two descriptors; fcntl on our own descriptor.
    unsafe {
        if libc::pipe(fds.as_mut_ptr()) != 0 {
            return Err(MixError::Run(format!(
                "cannot create a pipe: {}",
                std::io::Error::last_os_error()
            )));
        }
        libc::fcntl(fds[0], libc::F_SETFD, libc::FD_CLOEXEC);
    }
    Ok(fds)
}

/// Slots of the ring (8 MiB): a batch being simulated, the next ones written meanwhile.
const RING_SLOTS: u32 = 16;

/// A shared mapping, unmapped when dropped.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; which slot each process may touch is settled by the
// tokens (see [`RingReader`]).
unsafe impl Send for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: a mapping of ours, not used after this.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// The ring before QEMU starts: the memfd and the plugin's end of the token socket, which
/// QEMU inherits, and ours.
pub(crate) struct RingSetup {
    pub(crate) fd: i32,
    pub(crate) token_read: i32,
    token_write: i32,
    map: Option<Mapping>,
}

impl RingSetup {
    /// A ring of [`RING_SLOTS`] slots, every slot's token already sent; `None` where the
    /// system cannot make one (the pipe is used instead).
    pub(crate) fn new() -> Option<RingSetup> {
        let len = RING_SLOTS as usize * RING_SLOT_RECORDS * 8;
        // SAFETY: plain system calls on descriptors created here; each is closed by
        // `Drop` on every path.
        unsafe {
            // Inherited by QEMU: no close-on-exec.
            let fd = libc::memfd_create(c"hpcscope-mix-ring".as_ptr(), 0);
            if fd < 0 {
                return None;
            }
            let mut setup = RingSetup {
                fd,
                token_read: -1,
                token_write: -1,
                map: None,
            };
            if libc::ftruncate(fd, len as libc::off_t) != 0 {
                return None;
            }
            let ptr = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            );
            if ptr == libc::MAP_FAILED {
                return None;
            }
            setup.map = Some(Mapping {
                ptr: ptr.cast(),
                len,
            });
            // A socket rather than a pipe: a token sent after QEMU died fails with EPIPE
            // (MSG_NOSIGNAL) instead of raising SIGPIPE, which hpcscope does not ignore.
            let mut sv = [-1; 2];
            if libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr()) != 0 {
                return None;
            }
            (setup.token_read, setup.token_write) = (sv[0], sv[1]);
            libc::fcntl(setup.token_write, libc::F_SETFD, libc::FD_CLOEXEC);
            for slot in 0..RING_SLOTS {
                if !send_token(setup.token_write, slot) {
                    return None;
                }
            }
            Some(setup)
        }
    }

    /// QEMU started with its copies: the reader keeps the mapping and the token socket.
    pub(crate) fn into_reader(mut self) -> RingReader {
        let tokens = std::mem::replace(&mut self.token_write, -1);
        RingReader {
            tokens,
            map: self.map.take().expect("a mapped ring"),
        }
    }
}

impl Drop for RingSetup {
    fn drop(&mut self) {
        for fd in [self.fd, self.token_read, self.token_write] {
            if fd >= 0 {
                // SAFETY: descriptors this setup created and still owns.
                unsafe { libc::close(fd) };
            }
        }
    }
}

/// Returns a slot to the plugin; false when it is gone.
fn send_token(fd: i32, slot: u32) -> bool {
    let b = slot.to_le_bytes();
    // SAFETY: sending 4 bytes from a local buffer on our socket.
    let n = unsafe { libc::send(fd, b.as_ptr().cast(), b.len(), libc::MSG_NOSIGNAL) };
    // A stream socket with room for every token (at most RING_SLOTS are out) sends the 4
    // bytes whole.
    n == b.len() as isize
}

/// The reader's side of the ring: the mapped slots, and the socket on which it returns a
/// slot once it has read it. The plugin writes a slot only between taking its token and
/// sending its notice, the reader reads it only between the notice and giving the token
/// back.
pub struct RingReader {
    tokens: i32,
    map: Mapping,
}

impl Drop for RingReader {
    fn drop(&mut self) {
        // SAFETY: our descriptor; the plugin waiting for a token reads end of file.
        unsafe { libc::close(self.tokens) };
    }
}

impl RingReader {
    /// The `n` records of slot `slot`.
    fn slot(&self, slot: u32, n: usize) -> Result<&[PackedAccess], MixError> {
        if slot >= RING_SLOTS || n > RING_SLOT_RECORDS {
            return Err(MixError::Run(format!(
                "the memory stream's notice names {n} records in slot {slot}, beyond the ring's {RING_SLOTS} slots of {RING_SLOT_RECORDS}: the plugin and hpcscope come from different versions"
            )));
        }
        // SAFETY: inside the mapping (checked above); 8-byte aligned (page-aligned base,
        // slots a multiple of 8 bytes); the plugin does not write the slot until its token
        // comes back; `PackedAccess` is a `u64`, any bits valid.
        Ok(unsafe {
            std::slice::from_raw_parts(
                self.map
                    .ptr
                    .cast::<PackedAccess>()
                    .add(slot as usize * RING_SLOT_RECORDS),
                n,
            )
        })
    }
}

/// A record stream as an engine delivers it: the records in batches, in order, each
/// guest thread's after its marker.
pub enum RecordStream<R = std::fs::File> {
    /// The records themselves (a pipe, a file, bytes).
    Records(R),
    /// The notices of a ring, and the ring.
    Ring(R, RingReader),
}

impl<R: Read> RecordStream<R> {
    /// Hands the stream's records to `each` in batches, in order (thread markers
    /// included); returns the number of records read.
    pub fn for_each_batch(self, each: impl FnMut(&[PackedAccess])) -> Result<u64, MixError> {
        match self {
            RecordStream::Records(f) => for_each_batch(f, each),
            RecordStream::Ring(f, ring) => for_each_ring_batch(f, &ring, each),
        }
    }
}

/// Reads the notices of a ring: the words between notices (thread markers written alone)
/// go to `each` as they are, a notice's slot goes whole and its token back to the plugin.
fn for_each_ring_batch(
    f: impl Read,
    ring: &RingReader,
    mut each: impl FnMut(&[PackedAccess]),
) -> Result<u64, MixError> {
    let mut records = 0u64;
    let mut err = None;
    let mut gone = false;
    let mut notices = |words: &[PackedAccess]| {
        if err.is_some() {
            return;
        }
        let mut start = 0;
        for (i, w) in words.iter().enumerate() {
            let Some((slot, n)) = notice_parts(w.0) else {
                continue;
            };
            if i > start {
                records += (i - start) as u64;
                each(&words[start..i]);
            }
            start = i + 1;
            match ring.slot(slot, n) {
                Ok(recs) => {
                    records += n as u64;
                    if cfg!(target_endian = "big") {
                        let v: Vec<PackedAccess> = recs
                            .iter()
                            .map(|r| PackedAccess(u64::from_le(r.0)))
                            .collect();
                        each(&v);
                    } else if n > 0 {
                        each(recs);
                    }
                }
                Err(e) => {
                    err = Some(e);
                    return;
                }
            }
            // QEMU gone: the notices left are read all the same.
            if !gone && !send_token(ring.tokens, slot) {
                gone = true;
            }
        }
        if words.len() > start {
            records += (words.len() - start) as u64;
            each(&words[start..]);
        }
    };
    read_words(f, RING_MAGIC, &mut notices)?;
    match err {
        Some(e) => Err(e),
        None => Ok(records),
    }
}

/// Reads the plugin's stream (header, then 8-byte records) and hands the records to `f` in
/// batches, in order (thread markers included); returns the number of records read.
fn for_each_batch(f: impl Read, mut each: impl FnMut(&[PackedAccess])) -> Result<u64, MixError> {
    read_words(f, MAGIC, &mut each)
}

/// [`hpcscope_plugin_format::read_words`], its errors in mix's words.
fn read_words(
    f: impl Read,
    magic: &[u8; 8],
    each: &mut impl FnMut(&[PackedAccess]),
) -> Result<u64, MixError> {
    hpcscope_plugin_format::read_words(f, magic, each).map_err(|e| match e {
        ReadError::Header => MixError::Run(
            "the memory stream does not start with the hpcscope header: the plugin and hpcscope come from different versions".into(),
        ),
        e => MixError::Run(e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpcscope_plugin_format::{notice, thread_marker};

    #[test]
    fn ring_notices_give_the_plain_stream_in_order() {
        let Some(setup) = RingSetup::new() else {
            eprintln!("skipping: no memfd_create here");
            return;
        };
        let ring = setup.into_reader();
        let m = |t: u32| thread_marker(t);
        let a = |x: u64| PackedAccess::new(x, 8, false).expect("small").0;
        let put = |slot: usize, recs: &[u64]| {
            // SAFETY: slot inside the mapping; nobody else uses it in this test.
            let dst = unsafe { ring.map.ptr.cast::<u64>().add(slot * RING_SLOT_RECORDS) };
            for (i, r) in recs.iter().enumerate() {
                // SAFETY: as above.
                unsafe { *dst.add(i) = r.to_le() };
            }
        };
        put(3, &[m(1), a(0x10), a(0x18)]);
        put(0, &[m(0), a(0x20)]);
        // Thread 0 starts (its marker alone), slot 3, thread 2 starts, slot 0.
        let words = [m(0), notice(3, 3), m(2), notice(0, 2)];
        let mut s = RING_MAGIC.to_vec();
        for w in words {
            s.extend_from_slice(&w.to_le_bytes());
        }
        let mut seen = Vec::new();
        // One byte at a time: notices cut anywhere by short reads.
        let n = for_each_ring_batch(OneByte(&s), &ring, |b| seen.extend(b.iter().map(|r| r.0)))
            .unwrap();
        let plain = [m(0), m(1), a(0x10), a(0x18), m(2), m(0), a(0x20)];
        assert_eq!(seen, plain);
        assert_eq!(n, plain.len() as u64);
        // A notice beyond the ring is an error, not a read outside it.
        let mut bad = RING_MAGIC.to_vec();
        bad.extend_from_slice(&notice(RING_SLOTS, 1).to_le_bytes());
        let e = for_each_ring_batch(&bad[..], &ring, |_| {}).unwrap_err();
        assert!(e.to_string().contains("beyond the ring"), "{e}");
    }

    /// A reader that returns one byte per read.
    struct OneByte<'a>(&'a [u8]);
    impl Read for OneByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((b, rest)), Some(d)) => {
                    *d = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }
}
