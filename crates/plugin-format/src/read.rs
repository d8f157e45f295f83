//! Reading the stream: the framing (a magic, then 8-byte little-endian words, read straight
//! into [`Record`]s whatever the reads' sizes), a whole recorded stream at once, and the
//! cutting of records into runs of one thread each ([`Demux`]).

use std::io::Read;

use crate::{END_TOP, MAGIC, MARKER_TOP, Record, SKIP_BYTES, SKIP_TOP};

/// Records per read buffer (1 MiB).
const STREAM_BUF: usize = 1 << 17;

/// Why a stream could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// A read failed.
    Io(std::io::Error),
    /// The stream does not start with the expected magic (too short for one included).
    Header,
    /// A recorded stream ends inside a record: this many bytes after the header, not a
    /// multiple of 8.
    Partial(usize),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "reading the memory stream: {e}"),
            ReadError::Header => f.write_str("the memory stream lacks the plugin's header"),
            ReadError::Partial(n) => write!(
                f,
                "the memory stream ends inside a record ({n} bytes after the header, not a multiple of 8)"
            ),
        }
    }
}

impl std::error::Error for ReadError {}

/// Reads a stream of header `magic` ([`crate::MAGIC`] or [`crate::RING_MAGIC`]), then 8-byte
/// little-endian words, and hands the words to `each` in batches, in order; returns the
/// number of words read. A stream that ends inside a word leaves that word out.
pub fn read_words(
    mut f: impl Read,
    magic: &[u8; 8],
    each: &mut impl FnMut(&[Record]),
) -> Result<u64, ReadError> {
    // Records are read straight into 8-byte words. A read may end inside a record: its
    // first bytes move to the front and the next read completes it.
    let mut buf = vec![Record(0); STREAM_BUF];
    let mut filled = 0usize; // bytes held in `buf`
    let mut header = false;
    let mut records = 0u64;
    loop {
        // SAFETY: `Record` is a `u64` (repr(transparent)); every byte pattern is a valid
        // `u64`, and the byte view lives only until the records are handed out.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), buf.len() * 8) };
        let n = match f.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::Io(e)),
        };
        filled += n;
        let mut start = 0;
        if !header {
            if filled < magic.len() {
                continue;
            }
            if &bytes[..magic.len()] != magic {
                return Err(ReadError::Header);
            }
            header = true;
            start = magic.len() / 8;
        }
        let whole = filled / 8;
        let rest = filled - whole * 8;
        let recs = &mut buf[start..whole];
        if cfg!(target_endian = "big") {
            // The plugin writes little-endian records.
            recs.iter_mut().for_each(|r| r.0 = u64::from_le(r.0));
        }
        records += recs.len() as u64;
        if !recs.is_empty() {
            each(recs);
        }
        // SAFETY: as above.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), buf.len() * 8) };
        bytes.copy_within(whole * 8..filled, 0);
        filled = rest;
    }
    Ok(records)
}

/// The records of a whole recorded stream (`memout=`): its header, then whole records.
pub fn records(bytes: &[u8]) -> Result<Vec<Record>, ReadError> {
    if bytes.len() < 8 || &bytes[..8] != MAGIC {
        return Err(ReadError::Header);
    }
    if !(bytes.len() - 8).is_multiple_of(8) {
        return Err(ReadError::Partial(bytes.len() - 8));
    }
    Ok(bytes[8..]
        .chunks_exact(8)
        .map(|w| Record(u64::from_le_bytes(w.try_into().expect("8 bytes"))))
        .collect())
}

/// What a buffer of the stream holds, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Records of a thread (possibly none: a thread's marker alone, when it starts).
    Run(u32, usize, usize),
    /// A thread exited.
    Ended(u32),
    /// The plugin left out this many accesses of a thread (set sampling).
    Skipped(u32, u64),
    /// ... and this many bytes.
    SkippedBytes(u32, u64),
}

/// Cuts the records of a buffer into runs of one thread each, at the thread markers; the
/// thread of the last marker carries over to the next buffer. Returns the access records
/// (markers left out).
#[derive(Debug, Default)]
pub struct Demux {
    thread: u32,
    /// Skip records seen (a stream gated by set sampling).
    pub skips: u64,
}

impl Demux {
    /// The events of buffer `recs` into `events` (cleared first); returns the number of
    /// access records in it.
    pub fn split(&mut self, recs: &[Record], events: &mut Vec<Event>) -> u64 {
        events.clear();
        let mut start = 0;
        let mut markers = 0u64;
        // A marker opens a run even if no record follows it (a thread that starts).
        let mut open = false;
        for (i, r) in recs.iter().enumerate() {
            let top = r.0 >> 56;
            if top == SKIP_TOP {
                // After the thread's marker: the run it opened goes on after this record.
                if i > start {
                    events.push(Event::Run(self.thread, start, i));
                    open = false;
                }
                let n = r.0 & (SKIP_BYTES - 1);
                events.push(if r.0 & SKIP_BYTES != 0 {
                    Event::SkippedBytes(self.thread, n)
                } else {
                    Event::Skipped(self.thread, n)
                });
                self.skips += 1;
                markers += 1;
                start = i + 1;
                continue;
            }
            if top == MARKER_TOP || top == END_TOP {
                if i > start || open {
                    events.push(Event::Run(self.thread, start, i));
                }
                markers += 1;
                start = i + 1;
                if top == MARKER_TOP {
                    self.thread = r.0 as u32;
                    open = true;
                } else {
                    events.push(Event::Ended(r.0 as u32));
                    open = false;
                }
            }
        }
        if recs.len() > start || open {
            events.push(Event::Run(self.thread, start, recs.len()));
        }
        recs.len() as u64 - markers
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RING_MAGIC, end_marker, skip_record, thread_marker};

    #[test]
    fn markers_cut_the_stream_into_thread_runs() {
        let m = |t: u32| Record(thread_marker(t));
        let end = |t: u32| Record(end_marker(t));
        let a = |x: u64| Record::new(x, 8, false).expect("small");
        let mut d = Demux::default();
        let mut ev = Vec::new();
        use Event::{Ended, Run};
        // Thread 0's records, then thread 3's, cut in the middle of thread 3's batch.
        let b1 = [m(0), a(1), a(2), m(3), a(4)];
        assert_eq!(d.split(&b1, &mut ev), 3);
        assert_eq!(ev, [Run(0, 1, 3), Run(3, 4, 5)]);
        // The next buffer goes on with thread 3; thread 1 starts (its marker alone), thread
        // 3 ends, thread 2 sends a record.
        let b2 = [a(5), a(6), m(1), end(3), m(2), a(7)];
        assert_eq!(d.split(&b2, &mut ev), 3);
        assert_eq!(ev, [Run(3, 0, 2), Run(1, 3, 3), Ended(3), Run(2, 5, 6)]);
        assert_eq!(d.split(&[], &mut ev), 0);
        assert!(ev.is_empty());
    }

    #[test]
    fn skip_records_count_for_the_thread_of_their_batch() {
        let m = |t: u32| Record(thread_marker(t));
        let skip = |n: u64| Record(skip_record(n, false));
        let skip_bytes = |n: u64| Record(skip_record(n, true));
        let a = |x: u64| Record::new(x, 8, false).expect("small");
        let mut d = Demux::default();
        let mut ev = Vec::new();
        use Event::{Run, Skipped, SkippedBytes};
        // A batch of thread 2 after 5 accesses (36 bytes) left out; then one of thread 0
        // with none left out; then thread 2's counts alone (its last accesses all left out).
        let b = [m(2), skip(5), skip_bytes(36), a(1), a(2), m(0), a(3)];
        assert_eq!(d.split(&b, &mut ev), 3);
        assert_eq!(
            ev,
            [
                Skipped(2, 5),
                SkippedBytes(2, 36),
                Run(2, 3, 5),
                Run(0, 6, 7)
            ]
        );
        assert_eq!(d.split(&[m(2), skip(1), skip_bytes(8)], &mut ev), 0);
        assert_eq!(ev, [Skipped(2, 1), SkippedBytes(2, 8), Run(2, 3, 3)]);
        assert_eq!(d.skips, 4);
    }

    #[test]
    fn words_are_read_whole_whatever_the_reads() {
        let words = [thread_marker(1), 0x1234, u64::MAX, 7];
        let mut s = MAGIC.to_vec();
        for w in words {
            s.extend_from_slice(&w.to_le_bytes());
        }
        // A partial word at the end is left out.
        s.extend_from_slice(&[1, 2, 3]);
        let mut seen = Vec::new();
        // Reads of 5 bytes at most: words and the header cut anywhere.
        let short = s
            .chunks(5)
            .fold(Box::new(std::io::empty()) as Box<dyn Read>, |r, c| {
                Box::new(r.chain(c))
            });
        let n = read_words(short, MAGIC, &mut |b: &[Record]| {
            seen.extend(b.iter().map(|r| r.0))
        })
        .unwrap();
        assert_eq!(n, 4);
        assert_eq!(seen, words);
        assert!(matches!(
            read_words(&s[..], RING_MAGIC, &mut |_: &[Record]| {}),
            Err(ReadError::Header)
        ));
        // Shorter than the header: no words, no error.
        assert_eq!(
            read_words(&s[..5], MAGIC, &mut |_: &[Record]| {}).unwrap(),
            0
        );
    }

    #[test]
    fn a_recorded_stream_is_whole_records() {
        let mut s = MAGIC.to_vec();
        s.extend_from_slice(&thread_marker(0).to_le_bytes());
        assert_eq!(records(&s).unwrap(), [Record(thread_marker(0))]);
        assert!(matches!(records(RING_MAGIC), Err(ReadError::Header)));
        assert!(matches!(records(b"HPCS"), Err(ReadError::Header)));
        s.push(0);
        assert!(matches!(records(&s), Err(ReadError::Partial(9))));
    }
}
