//! The synchronous part of a checkpoint, at the barrier: what the upload will put.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Instant;

use super::files::{NativeFiles, Put, native_checkpoint, spawn_upload};
use super::snapshot::{SstFile, live_ssts, write_full};
use super::store::Upload;
use super::{
    CheckpointError, CheckpointRecord, Checkpointer, FULL_STATE, InFlight, JobMeta, Metadata,
    SNAPSHOT_WAIT, UploadResult, io,
};
use crate::backend::StateBackend;
use crate::config::profile::CheckpointKind;
use crate::pipeline::timers::raw;

impl Checkpointer {
    /// The synchronous part of checkpoint `next_id()`, after the caller flushed its timers and
    /// pre-committed its sink: writes its raw keyed states (HEAP timers: each such operator's
    /// index and stream), takes the RocksDB snapshot (full) or native checkpoint (incremental)
    /// and starts the upload. `barrier` is when the caller's part began.
    pub fn trigger(
        &mut self,
        job: JobMeta,
        changes: Option<Vec<u8>>,
        raw_keyed_state: &[(usize, Vec<u8>)],
        barrier: Instant,
        run_secs: f64,
    ) -> Result<u64, CheckpointError> {
        let id = self.next_id;
        self.next_id += 1;
        self.last_trigger = barrier;
        let mut record = CheckpointRecord {
            id,
            kind: self.config.kind.name().to_string(),
            started_at_secs: run_secs,
            ..CheckpointRecord::default()
        };
        let mut upload = self.store.begin(id)?;
        put_raw_keyed_states(&mut upload, raw_keyed_state)?;
        let cancel = Arc::new(AtomicBool::new(false));
        upload.cancel_with(Arc::clone(&cancel));
        let (tx, done) = mpsc::channel();
        let mut metadata = Metadata {
            id,
            kind: self.config.kind,
            job,
            ssts: BTreeMap::new(),
            op_ssts: Vec::new(),
            materialization: None,
            changelog: Vec::new(),
        };
        let mut materializing = false;
        let thread = match self.config.kind {
            CheckpointKind::Full => self.start_full(id, upload, Arc::clone(&cancel), tx)?,
            CheckpointKind::Incremental => {
                let (mut puts, dir, names) = self.native_files(id, false)?;
                metadata.ssts = names;
                // A chain's other databases, under the same id, in the checkpoint's `op<i>/`.
                for op in 1..self.backends.len() {
                    let (op_puts, names) = self.operator_files(op, &dir)?;
                    puts.extend(op_puts);
                    metadata.op_ssts.push(names);
                }
                spawn_upload(upload, puts, Some(dir), Arc::clone(&cancel), tx)?
            }
            CheckpointKind::Changelog => {
                let changes = changes.unwrap_or_default();
                let (puts, dir) =
                    self.changelog_files(id, &changes, barrier, &mut metadata, &mut record)?;
                materializing = dir.is_some();
                spawn_upload(upload, puts, dir, Arc::clone(&cancel), tx)?
            }
        };
        // After the native checkpoint's flush: this checkpoint's own flushed SSTs count here.
        for op in 0..self.backends.len().max(1) {
            let ssts = match self.backends.get(op) {
                Some(b) => live_ssts(b)?,
                None => live_ssts(self.backend()?)?,
            };
            self.classify_new(op, &ssts, &mut record);
        }
        let sync_done = Instant::now();
        record.sync_ms = sync_done.duration_since(barrier).as_secs_f64() * 1e3;
        self.in_flight = Some(InFlight {
            id,
            started: barrier,
            sync_done,
            metadata,
            record,
            cancel,
            done,
            thread: Some(thread),
            timed_out: false,
            materializing,
        });
        Ok(id)
    }

    /// New SST files since the last barrier, by what wrote them: level 0 is a flush's new
    /// data, deeper levels a compaction's rewrite.
    pub(super) fn classify_new(
        &mut self,
        op: usize,
        ssts: &[SstFile],
        record: &mut CheckpointRecord,
    ) {
        if self.last_ssts.len() <= op {
            self.last_ssts.resize_with(op + 1, HashSet::new);
        }
        if self.uploaded.len() <= op {
            self.uploaded.resize_with(op + 1, HashMap::new);
        }
        for f in ssts
            .iter()
            .filter(|f| !self.last_ssts[op].contains(&f.name))
        {
            if f.level == 0 {
                record.new_flush_bytes += f.size;
            } else {
                record.new_compaction_bytes += f.size;
            }
        }
        self.last_ssts[op] = ssts.iter().map(|f| f.name.clone()).collect();
        // Files compacted away are never uploaded again: their names can go. (A name stays
        // while the store may lack its file: `put_shared` uploads whatever it does not hold.)
        let live = &self.last_ssts[op];
        self.uploaded[op].retain(|local, _| live.contains(local));
    }

    /// Full: the upload thread takes a RocksDB snapshot (the job waits only for that) and
    /// writes every key from it.
    pub(super) fn start_full(
        &mut self,
        id: u64,
        mut upload: Upload,
        cancel: Arc<AtomicBool>,
        tx: mpsc::Sender<UploadResult>,
    ) -> Result<JoinHandle<()>, CheckpointError> {
        let backend = Arc::clone(self.backend()?);
        let others: Vec<Arc<StateBackend>> = self.backends.iter().skip(1).cloned().collect();
        let scratch = self.local.join(format!("chk-{id}.full"));
        let (taken_tx, taken) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("statebench-ckpt".to_string())
            .spawn(move || {
                // Every database's snapshot at the barrier, before the job goes on.
                let snapshot = backend.snapshot();
                let op_snapshots: Vec<_> = others.iter().map(|b| b.snapshot()).collect();
                let _ = taken_tx.send(());
                let mut result = write_full(&backend, &snapshot, &scratch, &cancel)
                    .map_err(|e| e.to_string())
                    .and_then(|_| {
                        upload
                            .put_private(&scratch, FULL_STATE)
                            .map_err(|e| e.to_string())
                    });
                drop(snapshot);
                let _ = std::fs::remove_file(&scratch);
                // A chain's other databases: their streams in the checkpoint's `op<i>/`.
                for (i, (b, snap)) in others.iter().zip(&op_snapshots).enumerate() {
                    result = result.and_then(|_| {
                        write_full(b, snap, &scratch, &cancel)
                            .map_err(|e| e.to_string())
                            .and_then(|_| {
                                upload
                                    .put_private(&scratch, &format!("op{}/{FULL_STATE}", i + 1))
                                    .map_err(|e| e.to_string())
                            })
                    });
                    let _ = std::fs::remove_file(&scratch);
                }
                drop(op_snapshots);
                let _ = tx.send(match result {
                    Ok(_) => Ok(upload),
                    Err(why) => Err((Some(upload), why)),
                });
            })
            .map_err(io("start a checkpoint's upload thread"))?;
        match taken.recv_timeout(SNAPSHOT_WAIT) {
            Ok(()) => Ok(thread),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                Err(CheckpointError::UploadThread(id))
            }
        }
    }

    /// A chain's operator `op` >= 1: RocksDB's native checkpoint of its database into
    /// `dir/op<op>`; its SST files go shared (named `<incarnation>-op<op>-<file>`), its other
    /// files private into the checkpoint's `op<op>/`.
    pub(super) fn operator_files(
        &mut self,
        op: usize,
        dir: &std::path::Path,
    ) -> Result<(Vec<Put>, BTreeMap<String, String>), CheckpointError> {
        let backend = self
            .backends
            .get(op)
            .ok_or_else(|| CheckpointError::Metadata {
                dir: dir.display().to_string(),
                why: format!("no database for operator {op}"),
            })?;
        let files = native_checkpoint(backend, &dir.join(format!("op{op}")))?;
        if self.uploaded.len() <= op {
            self.uploaded.resize_with(op + 1, HashMap::new);
        }
        let mut puts = Vec::new();
        let mut names = BTreeMap::new();
        for (path, local) in files {
            if local.ends_with(".sst") {
                let shared = self.uploaded[op]
                    .entry(local.clone())
                    .or_insert_with(|| format!("{}-op{op}-{local}", self.incarnation))
                    .clone();
                names.insert(shared.clone(), local);
                puts.push(Put::Shared(path, shared));
            } else {
                puts.push(Put::Private(path, format!("op{op}/{local}")));
            }
        }
        Ok((puts, names))
    }

    /// RocksDB writes a native checkpoint (memtables flushed, SST files hard-linked) into
    /// scratch space: its SST files go to the shared folder (those the store holds are only
    /// referenced); its other files go private, or shared under a name of their own for a
    /// materialization (later checkpoints reference them).
    pub(super) fn native_files(
        &mut self,
        id: u64,
        all_shared: bool,
    ) -> Result<NativeFiles, CheckpointError> {
        let dir = self.local.join(format!("chk-{id}"));
        let files = native_checkpoint(self.backend()?, &dir)?;
        let mut puts = Vec::new();
        let mut names = BTreeMap::new();
        for (path, local) in files {
            if local.ends_with(".sst") {
                if self.uploaded.is_empty() {
                    self.uploaded.push(HashMap::new());
                }
                let shared = self.uploaded[0]
                    .entry(local.clone())
                    .or_insert_with(|| format!("{}-{local}", self.incarnation))
                    .clone();
                names.insert(shared.clone(), local);
                puts.push(Put::Shared(path, shared));
            } else if all_shared {
                let shared = format!("{}-m{id}-{local}", self.incarnation);
                names.insert(shared.clone(), local);
                puts.push(Put::Shared(path, shared));
            } else {
                puts.push(Put::Private(path, local));
            }
        }
        Ok((puts, dir, names))
    }
}

/// Writes a checkpoint's raw keyed states (each operator with HEAP timers: its index and its
/// stream) into its upload, synchronously: Flink writes the legacy timer snapshot in the
/// checkpoint's synchronous part.
fn put_raw_keyed_states(
    upload: &mut Upload,
    raw: &[(usize, Vec<u8>)],
) -> Result<(), super::store::StoreError> {
    for (op, bytes) in raw {
        upload.put_private_bytes(&raw::file_name(*op), bytes)?;
    }
    Ok(())
}
