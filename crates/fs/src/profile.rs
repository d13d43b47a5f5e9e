//! The workload profiler (ShingledFS §5.5.2, §7.3): per FUSE operation, how many calls the
//! kernel made, how many failed, how many bytes they moved (reads and writes) and how long
//! they took (from the request's arrival to its reply). Counting is lock-free; a dump takes
//! the counters and resets them, as the paper's profiler does on SIGUSR1.
//!
//! The dump's JSON is stable (`docs/guides/fs.md`, "Workload profiler"): an object with
//! `format` = `"tegula-fs-profile"`, `version` = 1, `source` (`tegula` or `passthrough`),
//! `started_unix_ns`, `ended_unix_ns`, `total_calls`, and `ops`: one object per operation in
//! a fixed order (every operation, zeros included) with `op`, `calls`, `errors`, `bytes` and
//! `time_ns`. New fields may be added; none is renamed or removed within a version.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The FUSE operations the profiler counts, in the order of the dump.
pub const OPS: [&str; 35] = [
    "init",
    "destroy",
    "lookup",
    "forget",
    "batch_forget",
    "getattr",
    "setattr",
    "readlink",
    "mknod",
    "mkdir",
    "unlink",
    "rmdir",
    "symlink",
    "rename",
    "link",
    "open",
    "read",
    "write",
    "flush",
    "release",
    "fsync",
    "opendir",
    "readdir",
    "releasedir",
    "fsyncdir",
    "statfs",
    "setxattr",
    "getxattr",
    "listxattr",
    "removexattr",
    "access",
    "create",
    "fallocate",
    "lseek",
    "copy_file_range",
];

/// Index of an operation in [`OPS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op(usize);

impl Op {
    /// The operation named `name` (one of [`OPS`]).
    pub fn named(name: &str) -> Option<Op> {
        OPS.iter().position(|&n| n == name).map(Op)
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        OPS[self.0]
    }
}

/// Shorthands for the operations, as [`Op`]s.
#[allow(missing_docs)]
pub mod op {
    use super::Op;
    pub const INIT: Op = Op(0);
    pub const DESTROY: Op = Op(1);
    pub const LOOKUP: Op = Op(2);
    pub const FORGET: Op = Op(3);
    pub const BATCH_FORGET: Op = Op(4);
    pub const GETATTR: Op = Op(5);
    pub const SETATTR: Op = Op(6);
    pub const READLINK: Op = Op(7);
    pub const MKNOD: Op = Op(8);
    pub const MKDIR: Op = Op(9);
    pub const UNLINK: Op = Op(10);
    pub const RMDIR: Op = Op(11);
    pub const SYMLINK: Op = Op(12);
    pub const RENAME: Op = Op(13);
    pub const LINK: Op = Op(14);
    pub const OPEN: Op = Op(15);
    pub const READ: Op = Op(16);
    pub const WRITE: Op = Op(17);
    pub const FLUSH: Op = Op(18);
    pub const RELEASE: Op = Op(19);
    pub const FSYNC: Op = Op(20);
    pub const OPENDIR: Op = Op(21);
    pub const READDIR: Op = Op(22);
    pub const RELEASEDIR: Op = Op(23);
    pub const FSYNCDIR: Op = Op(24);
    pub const STATFS: Op = Op(25);
    pub const SETXATTR: Op = Op(26);
    pub const GETXATTR: Op = Op(27);
    pub const LISTXATTR: Op = Op(28);
    pub const REMOVEXATTR: Op = Op(29);
    pub const ACCESS: Op = Op(30);
    pub const CREATE: Op = Op(31);
    pub const FALLOCATE: Op = Op(32);
    pub const LSEEK: Op = Op(33);
    pub const COPY_FILE_RANGE: Op = Op(34);
}

#[derive(Default)]
struct Counter {
    calls: AtomicU64,
    errors: AtomicU64,
    bytes: AtomicU64,
    time_ns: AtomicU64,
}

/// Counters of every operation since the last dump.
pub struct Profiler {
    source: &'static str,
    ops: Vec<Counter>,
    since: Mutex<SystemTime>,
}

/// One operation's numbers in a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpStats {
    /// Operation name (one of [`OPS`]).
    pub op: &'static str,
    /// Calls.
    pub calls: u64,
    /// Calls that failed.
    pub errors: u64,
    /// Bytes read or written.
    pub bytes: u64,
    /// Time from arrival to reply, summed over the calls.
    pub time_ns: u64,
}

/// A dump of the counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// What was profiled: `tegula` (the file system) or `passthrough`.
    pub source: &'static str,
    /// Start of the period (the mount, or the previous dump), ns since the epoch.
    pub started_unix_ns: u64,
    /// End of the period, ns since the epoch.
    pub ended_unix_ns: u64,
    /// Every operation, in the order of [`OPS`].
    pub ops: Vec<OpStats>,
}

fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl Profiler {
    /// Zeroed counters; `source` names what is profiled in the dumps.
    pub fn new(source: &'static str) -> Self {
        Profiler {
            source,
            ops: OPS.iter().map(|_| Counter::default()).collect(),
            since: Mutex::new(SystemTime::now()),
        }
    }

    /// Counts the arrival of a call of `op` (before it is served, so that a caller who got
    /// the reply always finds it counted).
    pub fn arrive(&self, op: Op) {
        if let Some(c) = self.ops.get(op.0) {
            c.calls.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records how a call of `op` that [`Profiler::arrive`] counted went: whether it
    /// failed, the bytes it moved and the time it took.
    pub fn record(&self, op: Op, ok: bool, bytes: u64, took: Duration) {
        let Some(c) = self.ops.get(op.0) else {
            return;
        };
        if !ok {
            c.errors.fetch_add(1, Ordering::Relaxed);
        }
        c.bytes.fetch_add(bytes, Ordering::Relaxed);
        c.time_ns
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Takes the counters and resets them (SIGUSR1, `tegula fs profile`).
    pub fn take(&self) -> Profile {
        let now = SystemTime::now();
        let mut since = self.since.lock().unwrap_or_else(|e| e.into_inner());
        let started = *since;
        *since = now;
        drop(since);
        let ops = OPS
            .iter()
            .zip(&self.ops)
            .map(|(&op, c)| OpStats {
                op,
                calls: c.calls.swap(0, Ordering::Relaxed),
                errors: c.errors.swap(0, Ordering::Relaxed),
                bytes: c.bytes.swap(0, Ordering::Relaxed),
                time_ns: c.time_ns.swap(0, Ordering::Relaxed),
            })
            .collect();
        Profile {
            source: self.source,
            started_unix_ns: unix_ns(started),
            ended_unix_ns: unix_ns(now),
            ops,
        }
    }
}

impl Profile {
    /// Calls of every operation together.
    pub fn total_calls(&self) -> u64 {
        self.ops.iter().map(|o| o.calls).sum()
    }

    /// The numbers of `op`.
    pub fn get(&self, op: &str) -> Option<&OpStats> {
        self.ops.iter().find(|o| o.op == op)
    }

    /// The stable JSON form (one line).
    pub fn to_json(&self) -> String {
        let mut s = format!(
            "{{\"format\":\"tegula-fs-profile\",\"version\":1,\"source\":\"{}\",\"started_unix_ns\":{},\"ended_unix_ns\":{},\"total_calls\":{},\"ops\":[",
            self.source,
            self.started_unix_ns,
            self.ended_unix_ns,
            self.total_calls()
        );
        for (i, o) in self.ops.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!(
                "{{\"op\":\"{}\",\"calls\":{},\"errors\":{},\"bytes\":{},\"time_ns\":{}}}",
                o.op, o.calls, o.errors, o.bytes, o.time_ns
            ));
        }
        s.push_str("]}");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_reset_at_each_dump() {
        let p = Profiler::new("tegula");
        for (o, ok, b, us) in [
            (op::WRITE, true, 4096, 3),
            (op::WRITE, false, 0, 1),
            (op::LOOKUP, true, 0, 2),
        ] {
            p.arrive(o);
            p.record(o, ok, b, Duration::from_micros(us));
        }
        let d = p.take();
        let w = d.get("write").unwrap();
        assert_eq!((w.calls, w.errors, w.bytes, w.time_ns), (2, 1, 4096, 4000));
        assert_eq!(d.total_calls(), 3);
        assert_eq!(d.ops.len(), OPS.len());
        assert!(d
            .to_json()
            .starts_with("{\"format\":\"tegula-fs-profile\",\"version\":1,"));
        assert!(d.to_json().contains(
            "{\"op\":\"write\",\"calls\":2,\"errors\":1,\"bytes\":4096,\"time_ns\":4000}"
        ));
        assert_eq!(p.take().total_calls(), 0);
        for (i, name) in OPS.iter().enumerate() {
            assert_eq!(Op::named(name), Some(Op(i)));
        }
        assert_eq!(op::COPY_FILE_RANGE.name(), "copy_file_range");
        assert_eq!(op::FSYNC.name(), "fsync");
        assert_eq!(op::STATFS.name(), "statfs");
    }
}
