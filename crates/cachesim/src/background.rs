//! A simulator on its own thread, so the thread producing accesses (an emulator callback)
//! only copies them into a buffer.
//!
//! The producer fills fixed-size buffers (`Vec<Access>`) and sends each full one through
//! a bounded channel (`queue_depth` buffers in flight: when the worker falls behind, the
//! producer blocks instead of using unbounded memory). The worker simulates a buffer in
//! every hierarchy, clears it and sends it back for reuse, so steady state allocates
//! nothing. Checkpoints sent between buffers cut the counters into labelled segments
//! (e.g. program regions).

use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};

use crate::Access;
use crate::config::HierarchyConfig;
use crate::error::{BackgroundError, ConfigError};
use crate::multi::MultiSim;
use crate::stats::HierarchyStats;

/// Buffer and queue sizes of a [`BackgroundSim`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackgroundOptions {
    /// Accesses per buffer (16 bytes each).
    pub batch_len: usize,
    /// Full buffers that may wait for the worker before the producer blocks.
    pub queue_depth: usize,
}

impl Default for BackgroundOptions {
    /// 64 Ki accesses (1 MiB) per buffer, 4 buffers queued.
    fn default() -> Self {
        Self {
            batch_len: 1 << 16,
            queue_depth: 4,
        }
    }
}

/// Counters between two checkpoints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// The label given to [`BackgroundSim::checkpoint`].
    pub label: String,
    /// Counters of each hierarchy over the accesses since the previous checkpoint.
    pub stats: Vec<HierarchyStats>,
}

/// Everything a [`BackgroundSim`] measured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackgroundReport {
    /// Counters of each hierarchy over the whole stream.
    pub totals: Vec<HierarchyStats>,
    /// Counters per checkpoint, in order; accesses after the last checkpoint are only in
    /// `totals`.
    pub segments: Vec<Segment>,
}

enum Msg {
    Batch(Vec<Access>),
    Checkpoint(String),
}

/// Handle to a worker thread that owns a [`MultiSim`].
///
/// ```
/// use hpcscope_cachesim::{Access, BackgroundSim, CacheConfig, HierarchyConfig};
///
/// let cfg = HierarchyConfig::new("toy", vec![CacheConfig::new("L1", 32 << 10, 64, 8)]);
/// let mut sim = BackgroundSim::new(vec![cfg])?;
/// for i in 0..100_000u64 {
///     sim.push(Access::read(8 * i, 8)); // only copies into a buffer
/// }
/// let stats = sim.finish()?;
/// assert_eq!(stats[0].accesses, 100_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BackgroundSim {
    tx: Option<SyncSender<Msg>>,
    recycled: Receiver<Vec<Access>>,
    current: Vec<Access>,
    batch_len: usize,
    worker: Option<JoinHandle<BackgroundReport>>,
}

impl BackgroundSim {
    /// Starts a worker simulating `configs` with default buffer sizes.
    pub fn new(configs: Vec<HierarchyConfig>) -> Result<Self, ConfigError> {
        let sim = MultiSim::new(configs)?;
        Ok(Self::spawn(sim, BackgroundOptions::default()))
    }

    /// Starts a worker that owns `sim`. Panics only if the OS cannot create a thread
    /// (see [`BackgroundSim::try_spawn`]).
    pub fn spawn(sim: MultiSim, options: BackgroundOptions) -> Self {
        match Self::try_spawn(sim, options) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        }
    }

    /// Starts a worker that owns `sim`.
    pub fn try_spawn(sim: MultiSim, options: BackgroundOptions) -> Result<Self, BackgroundError> {
        let batch_len = options.batch_len.max(1);
        let (tx, rx) = mpsc::sync_channel::<Msg>(options.queue_depth.max(1));
        let (ret_tx, recycled) = mpsc::channel::<Vec<Access>>();
        let worker = std::thread::Builder::new()
            .name("cachesim".into())
            .spawn(move || run_worker(sim, &rx, &ret_tx))
            .map_err(|e| BackgroundError::Spawn(e.to_string()))?;
        Ok(Self {
            tx: Some(tx),
            recycled,
            current: Vec::with_capacity(batch_len),
            batch_len,
            worker: Some(worker),
        })
    }

    /// Records one access; sends the buffer to the worker when it is full. If the worker
    /// has died the access is dropped, and [`BackgroundSim::finish`] reports why.
    #[inline]
    pub fn push(&mut self, a: Access) {
        self.current.push(a);
        if self.current.len() >= self.batch_len {
            self.send_current();
        }
    }

    /// Records many accesses (copied into the buffers).
    pub fn extend_from_slice(&mut self, accesses: &[Access]) {
        let mut rest = accesses;
        while !rest.is_empty() {
            let room = self.batch_len - self.current.len();
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.current.extend_from_slice(now);
            rest = later;
            if self.current.len() >= self.batch_len {
                self.send_current();
            }
        }
    }

    /// An empty buffer from the pool (or a new one) for [`BackgroundSim::submit`].
    pub fn take_buffer(&mut self) -> Vec<Access> {
        self.recycled
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(self.batch_len))
    }

    /// Sends a filled buffer to the worker after the accesses already pushed; blocks while
    /// `queue_depth` buffers are waiting.
    pub fn submit(&mut self, batch: Vec<Access>) -> Result<(), BackgroundError> {
        self.send_current();
        self.send(Msg::Batch(batch))
    }

    /// Cuts a segment: the counters since the previous checkpoint (or the start) are
    /// reported under `label`.
    pub fn checkpoint(&mut self, label: impl Into<String>) -> Result<(), BackgroundError> {
        self.send_current();
        self.send(Msg::Checkpoint(label.into()))
    }

    /// Waits for the worker to simulate everything sent and returns each hierarchy's totals.
    pub fn finish(self) -> Result<Vec<HierarchyStats>, BackgroundError> {
        Ok(self.finish_report()?.totals)
    }

    /// Waits for the worker to simulate everything sent and returns totals and segments.
    pub fn finish_report(mut self) -> Result<BackgroundReport, BackgroundError> {
        self.send_current();
        self.tx = None; // closes the channel: the worker drains it and returns
        let worker = self.worker.take().ok_or(BackgroundError::Disconnected)?;
        worker.join().map_err(|p| {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_string());
            BackgroundError::WorkerPanicked(msg)
        })
    }

    fn send_current(&mut self) {
        if self.current.is_empty() {
            return;
        }
        let fresh = self.take_buffer();
        let full = std::mem::replace(&mut self.current, fresh);
        // A dead worker is reported by finish(); dropping the accesses here keeps the
        // producer's hot path free of error handling.
        let _ = self.send(Msg::Batch(full));
    }

    fn send(&self, msg: Msg) -> Result<(), BackgroundError> {
        let tx = self.tx.as_ref().ok_or(BackgroundError::Disconnected)?;
        tx.send(msg).map_err(|_| BackgroundError::Disconnected)
    }
}

impl Drop for BackgroundSim {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

fn run_worker(
    mut sim: MultiSim,
    rx: &Receiver<Msg>,
    recycle: &mpsc::Sender<Vec<Access>>,
) -> BackgroundReport {
    let mut segments = Vec::new();
    let mut before = sim.stats();
    for msg in rx {
        match msg {
            Msg::Batch(mut batch) => {
                sim.access_batch(&batch);
                batch.clear();
                // The producer may be gone or have enough buffers; either is fine.
                let _ = recycle.send(batch);
            }
            Msg::Checkpoint(label) => {
                let now = sim.stats();
                let stats = now.iter().zip(&before).map(|(n, b)| n.since(b)).collect();
                segments.push(Segment { label, stats });
                before = now;
            }
        }
    }
    BackgroundReport {
        totals: sim.stats(),
        segments,
    }
}
