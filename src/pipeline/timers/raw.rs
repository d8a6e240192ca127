//! HEAP timers in a checkpoint: Flink's raw keyed state stream of the timer service.
//!
//! With HEAP timers on the RocksDB backend, `RocksDBKeyedStateBackend
//! .requiresLegacySynchronousTimerSnapshots` is true for checkpoints, so
//! `StreamOperatorStateHandler.snapshotState` has `InternalTimeServiceManagerImpl
//! .snapshotToRawKeyedState` write every key group's timers, in the checkpoint's synchronous
//! part, into the operator's raw keyed state stream. Per key group
//! (`InternalTimerServiceSerializationProxy.write`, version 2):
//! `PostVersionedIOReadableWritable`'s magic (4 bytes) and version (int), the number of timer
//! services (int), and per service its name (`writeUTF`), its key and namespace serializers'
//! snapshots (`TypeSerializerSnapshot.writeVersionedSnapshot`: class name, version, no data for
//! the simple ones), then `InternalTimersSnapshotWriterV2`'s event-time timers (count, then
//! `LegacyTimerSerializer`: key, namespace, timestamp as 8 bytes) and processing-time timers
//! (count 0: no job here registers any).
//!
//! A restore reads the stream back and adds every timer to the heap
//! (`restoreTimersForKeyGroup`), so each fires once after the restore.

use std::path::{Path, PathBuf};

use super::HeapTimers;
use crate::backend::keys::{self, MAX_PARALLELISM};
use crate::pipeline::PipelineError;

/// The checkpoint's private file that holds the stream.
pub const RAW_KEYED_STATE: &str = "timers.raw-keyed-state";
/// `PostVersionedIOReadableWritable.VERSIONED_IDENTIFIER`.
const MAGIC: [u8; 4] = [0xF1, 0xCD, 0x85, 0x9F];
/// `InternalTimerServiceSerializationProxy.VERSION`.
const PROXY_VERSION: i32 = 2;
/// `SimpleTypeSerializerSnapshot.getCurrentVersion()`.
const SIMPLE_SNAPSHOT_VERSION: i32 = 3;
const STRING_SERIALIZER: &str =
    "org.apache.flink.api.common.typeutils.base.StringSerializer$StringSerializerSnapshot";

/// The timers' namespace serializer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamespaceKind {
    /// `VoidNamespaceSerializer`: one byte.
    Void,
    /// `TimeWindow.Serializer`: start and end, 16 bytes.
    TimeWindow,
    /// `StringSerializer`.
    String,
}

impl NamespaceKind {
    /// The serializer of a namespace serialized as `ns`.
    pub fn of(ns: &[u8]) -> NamespaceKind {
        match ns.len() {
            1 if ns[0] == keys::VOID_NAMESPACE => NamespaceKind::Void,
            16 => NamespaceKind::TimeWindow,
            _ => NamespaceKind::String,
        }
    }

    fn snapshot_class(self) -> &'static str {
        match self {
            NamespaceKind::Void => {
                "org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot"
            }
            NamespaceKind::TimeWindow => {
                "org.apache.flink.streaming.api.windowing.windows.TimeWindow$Serializer$TimeWindowSerializerSnapshot"
            }
            NamespaceKind::String => STRING_SERIALIZER,
        }
    }

    fn from_class(class: &str) -> Option<NamespaceKind> {
        [
            NamespaceKind::Void,
            NamespaceKind::TimeWindow,
            NamespaceKind::String,
        ]
        .into_iter()
        .find(|k| k.snapshot_class() == class)
    }
}

/// `DataOutput.writeUTF` of an ASCII string.
fn write_utf(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn write_versioned_snapshot(out: &mut Vec<u8>, class: &str) {
    write_utf(out, class);
    out.extend_from_slice(&SIMPLE_SNAPSHOT_VERSION.to_be_bytes());
}

/// Every key group's section of the raw keyed state stream of `timers`.
pub fn snapshot(timers: &HeapTimers) -> Vec<u8> {
    let mut out = Vec::new();
    let ns = timers.namespace_kind();
    for kg in 0..MAX_PARALLELISM {
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&PROXY_VERSION.to_be_bytes());
        out.extend_from_slice(&1i32.to_be_bytes());
        write_utf(&mut out, timers.service());
        write_versioned_snapshot(&mut out, STRING_SERIALIZER);
        write_versioned_snapshot(&mut out, ns.snapshot_class());
        let group = timers.key_group_timers(kg);
        out.extend_from_slice(&(group.len() as i32).to_be_bytes());
        for bytes in group {
            // LegacyTimerSerializer: key, namespace (as the timer key holds them), timestamp.
            out.extend_from_slice(&bytes[keys::KEY_GROUP_PREFIX_BYTES + 8..]);
            out.extend_from_slice(&keys::timer_timestamp(bytes).to_be_bytes());
        }
        // Processing-time timers.
        out.extend_from_slice(&0i32.to_be_bytes());
    }
    out
}

/// Where operator `op`'s raw keyed state is in a checkpoint or savepoint: the first operator's
/// at its root, operator i's in its `op<i>/` beside that operator's other private files.
pub fn file_name(op: usize) -> String {
    match op {
        0 => RAW_KEYED_STATE.to_string(),
        i => format!("op{i}/{RAW_KEYED_STATE}"),
    }
}

/// Writes operator `op`'s `raw` into folder `dir` for a savepoint; the file and its name there.
pub fn write_file(dir: &Path, op: usize, raw: &[u8]) -> std::io::Result<(PathBuf, String)> {
    let name = file_name(op);
    let path = dir.join(&name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&path, raw)?;
    Ok((path, name))
}

/// A reader over the stream; every error names what it was reading.
struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl<'b> Reader<'b> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'b [u8], String> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!("the stream ends inside {what} at byte {}", self.at));
        };
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn int(&mut self, what: &str) -> Result<i32, String> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn utf(&mut self, what: &str) -> Result<String, String> {
        let len = self.take(2, what)?;
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        let text = self.take(len, what)?;
        String::from_utf8(text.to_vec()).map_err(|_| format!("{what} is not UTF-8"))
    }

    /// A 7-bit varint as `StringValue` writes lengths and characters; the bytes it used.
    fn varint(&mut self, what: &str) -> Result<(u32, usize), String> {
        let start = self.at;
        let mut value = 0u32;
        let mut shift = 0;
        loop {
            let b = self.take(1, what)?[0];
            if shift > 28 {
                return Err(format!("{what}: a length or character too long"));
            }
            value |= u32::from(b & 0x7F) << shift;
            if b < 0x80 {
                return Ok((value, self.at - start));
            }
            shift += 7;
        }
    }

    /// A `StringSerializer` value's bytes.
    fn string(&mut self, what: &str) -> Result<&'b [u8], String> {
        let start = self.at;
        let (len_plus_one, _) = self.varint(what)?;
        for _ in 1..len_plus_one {
            self.varint(what)?;
        }
        Ok(&self.bytes[start..self.at])
    }
}

/// Adds every timer of a raw keyed state stream to `timers` (`restoreTimersForKeyGroup`).
/// The error says what is wrong.
pub fn restore(timers: &mut HeapTimers, bytes: &[u8]) -> Result<u64, PipelineError> {
    restore_stream(timers, bytes).map_err(PipelineError::CorruptTimer)
}

fn restore_stream(timers: &mut HeapTimers, bytes: &[u8]) -> Result<u64, String> {
    let mut r = Reader { bytes, at: 0 };
    let mut restored = 0;
    let mut key = Vec::new();
    for kg in 0..MAX_PARALLELISM {
        let at = format!("key group {kg}");
        if r.take(4, &at)? != MAGIC {
            return Err(format!("{at} does not start with Flink's versioned magic"));
        }
        let version = r.int(&at)?;
        if version != PROXY_VERSION {
            return Err(format!("{at}: version {version}, expected {PROXY_VERSION}"));
        }
        let services = r.int(&at)?;
        for _ in 0..services {
            let name = r.utf(&at)?;
            let key_class = r.utf(&at)?;
            r.int(&at)?;
            if key_class != STRING_SERIALIZER {
                return Err(format!(
                    "{at}: key serializer '{key_class}' is not a String's"
                ));
            }
            let ns_class = r.utf(&at)?;
            r.int(&at)?;
            let ns = NamespaceKind::from_class(&ns_class)
                .ok_or_else(|| format!("{at}: unknown namespace serializer '{ns_class}'"))?;
            let mine = name == timers.service();
            for queue in ["event-time", "processing-time"] {
                let what = format!("{at}, service '{name}', {queue} timers");
                let count = r.int(&what)?;
                for _ in 0..count.max(0) {
                    let user_key = r.string(&what)?;
                    let namespace = match ns {
                        NamespaceKind::Void => r.take(1, &what)?,
                        NamespaceKind::TimeWindow => r.take(16, &what)?,
                        NamespaceKind::String => r.string(&what)?,
                    };
                    let ts = r.take(8, &what)?;
                    let ts = i64::from_be_bytes([
                        ts[0], ts[1], ts[2], ts[3], ts[4], ts[5], ts[6], ts[7],
                    ]);
                    if mine && queue == "event-time" {
                        // The timer key the heap keeps: key group, sign-flipped timestamp, key,
                        // namespace.
                        key.clear();
                        key.extend_from_slice(
                            &kg.to_be_bytes()[2 - keys::KEY_GROUP_PREFIX_BYTES..],
                        );
                        key.extend_from_slice(&((ts as u64) ^ (1 << 63)).to_be_bytes());
                        key.extend_from_slice(user_key);
                        key.extend_from_slice(namespace);
                        timers.add_bytes(kg, ts, &key);
                        restored += 1;
                    }
                }
            }
        }
    }
    if r.at != bytes.len() {
        return Err(format!(
            "{} bytes after the last key group",
            bytes.len() - r.at
        ));
    }
    Ok(restored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::keys::{CompositeKey, time_window_namespace};

    #[test]
    fn a_snapshot_restores_every_timer_and_holds_flinks_bytes_per_timer() {
        let mut heap = HeapTimers::new("window-timers");
        let mut key = CompositeKey::default();
        for u in 0..50 {
            key.set_key_ns(&format!("user-{u}"), &time_window_namespace(0, 60_000));
            heap.register(&key, 59_999);
            heap.register(&key, 60_000 + u);
        }
        // The same service with no timers left (its namespace serializer known).
        let mut none_left = HeapTimers::new("window-timers");
        key.set_key_ns("user-0", &time_window_namespace(0, 60_000));
        none_left.register(&key, 1);
        assert!(none_left.remove(&key, &time_window_namespace(0, 60_000), 1));
        let empty = snapshot(&none_left);
        let full = snapshot(&heap);
        // LegacyTimerSerializer per timer: the key ("user-N": 1 length byte + 6 or 7 chars),
        // the window (16 bytes) and the timestamp (8 bytes).
        let key_bytes: usize = (0..50).map(|u| 1 + format!("user-{u}").len()).sum();
        assert_eq!(full.len() - empty.len(), 2 * (key_bytes + 50 * (16 + 8)));
        let mut back = HeapTimers::new("window-timers");
        assert_eq!(restore(&mut back, &full).unwrap(), 100);
        let mut a = Vec::new();
        while let Some(t) = heap.poll_due(i64::MAX).unwrap() {
            a.push((t.timestamp, t.key, t.namespace));
        }
        let mut b = Vec::new();
        while let Some(t) = back.poll_due(i64::MAX).unwrap() {
            b.push((t.timestamp, t.key, t.namespace));
        }
        a.sort();
        b.sort();
        assert_eq!(a, b);
    }

    #[test]
    fn a_truncated_stream_is_an_error_naming_where() {
        let mut heap = HeapTimers::new("user-timers");
        let mut key = CompositeKey::default();
        key.set_key("user-1");
        heap.register(&key, 5);
        let bytes = snapshot(&heap);
        let err = restore(
            &mut HeapTimers::new("user-timers"),
            &bytes[..bytes.len() - 3],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("key group 255"), "{err}");
    }
}
