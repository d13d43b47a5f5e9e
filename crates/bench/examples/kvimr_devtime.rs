//! Where the device time of SMRDB-LOC on the zoned adapter goes: loads random 1 KB records
//! (the `tegula bench paper kvimr` small scale: a 3 GiB `imr-paper` drive, 16 MiB SSTables,
//! levels of 4 × 10^n bands, inline compaction) to a share of the data tracks, with a tracer
//! between the engine and the adapter that charges every engine call's modelled device time,
//! media operations and mechanical counters (seeks, rotation, transfer) to what it was:
//!
//! * `band read`: reads of data zones (compaction inputs; band opens and GETs, none in a load),
//!   with a histogram of their sizes;
//! * `band write`: appends to data zones (buffered by the store; persisted at the next
//!   `hint`, at a zone's end or at a sync);
//! * `hint`: the engine opening its next output band, which persists the previous one;
//! * `log write`, `meta write`/`meta read`: the write-ahead log's safe files and the raw area;
//! * `sync`: the engine's device flushes (the store's sync: persists, the drive's flush, the
//!   map write);
//! * `reset`: deletes.
//!
//! `cargo run --release -p tegula-bench --example kvimr_devtime -- [seq|three-phase|kvimr-n|kvimr-m|cmr] [load_share] [capacity_mib]`
//! Environment: `READ_AHEAD` (the engine's `read_ahead_bytes`), `COMPACTION_READ_AHEAD` (its
//! `compaction_read_ahead_bytes`), `PAGE_CACHE` (the adapter's `page_cache_bytes`).
#![allow(clippy::unwrap_used, clippy::print_stdout, missing_docs)]

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex;
use tegula_device::{
    profile, BlockDevice, Completion, DeviceInfo, Disk, IoDone, Nanos, Request, Result, Stats,
    WriteFlags, Zone, ZoneAction, ZoneFilter, ZoneHint, ZoneSpace, ZoneTarget, ZonedDevice,
};
use tegula_kvimr::{Options, Policy, RmwMode, ZonedAdapter, ZonedOptions};
use tegula_smrdb::{Db, FormatOptions, Options as DbOptions};

/// Totals of one kind of engine call.
#[derive(Default, Clone)]
struct Kind {
    calls: u64,
    bytes: u64,
    ns: u64,
    media_reads: u64,
    media_writes: u64,
    media_read_bytes: u64,
    media_write_bytes: u64,
    seeks: u64,
    seek_ns: u64,
    rotation_ns: u64,
    transfer_ns: u64,
    flushes: u64,
    /// Call sizes (KiB, rounded up to a power of two) → count.
    sizes: BTreeMap<u64, u64>,
}

struct Tracer {
    inner: Arc<ZonedAdapter>,
    disk: Arc<Disk>,
    conv: u32,
    logs: Mutex<HashSet<u32>>,
    kinds: Mutex<BTreeMap<&'static str, Kind>>,
    /// Nesting depth: only the outermost call is charged.
    depth: Mutex<u32>,
    /// The engine call under way (the raw tracer charges its commands to it).
    current: Arc<Mutex<&'static str>>,
}

/// The raw device under the adapter: charges every host command to the engine call under way,
/// split by direction and by whether the command waited for the write cache's destage.
struct Raw {
    disk: Arc<Disk>,
    current: Arc<Mutex<&'static str>>,
    kinds: Mutex<BTreeMap<String, Kind>>,
}

impl Raw {
    fn charge<T>(&self, op: &str, bytes: u64, f: impl FnOnce() -> T) -> T {
        let (t0, s0) = (self.disk.now(), self.disk.stats());
        let r = f();
        let (t1, s1) = (self.disk.now(), self.disk.stats());
        let destage =
            if op != "flush" && s1.media_writes - s0.media_writes > u64::from(op == "write") {
                " + destage"
            } else {
                ""
            };
        let key = format!("{} / {op}{destage}", *self.current.lock().unwrap());
        let mut ks = self.kinds.lock().unwrap();
        add(ks.entry(key).or_default(), bytes, t1 - t0, &s0, &s1);
        r
    }
}

impl BlockDevice for Raw {
    fn info(&self) -> DeviceInfo {
        self.disk.info()
    }
    fn read(&self, lba: u64, buf: &mut [u8]) -> Result<IoDone> {
        let n = buf.len() as u64;
        self.charge("read", n, || self.disk.read(lba, buf))
    }
    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
        self.charge("write", data.len() as u64, || {
            self.disk.write_with(lba, data, flags)
        })
    }
    fn flush(&self) -> Result<IoDone> {
        self.charge("flush", 0, || self.disk.flush())
    }
    fn discard(&self, lba: u64, sectors: u64) -> Result<IoDone> {
        self.charge("discard", 0, || self.disk.discard(lba, sectors))
    }
    fn submit(&self, reqs: Vec<Request>) -> Vec<Result<Completion>> {
        self.charge("submit", 0, || self.disk.submit(reqs))
    }
    fn now(&self) -> Nanos {
        self.disk.now()
    }
    fn idle(&self, d: Nanos) {
        self.disk.idle(d)
    }
}

impl Tracer {
    fn charge<T>(&self, what: &'static str, bytes: u64, f: impl FnOnce() -> T) -> T {
        {
            let mut d = self.depth.lock().unwrap();
            *d += 1;
            if *d > 1 {
                drop(d);
                let r = f();
                *self.depth.lock().unwrap() -= 1;
                return r;
            }
        }
        *self.current.lock().unwrap() = what;
        let (t0, s0) = (self.disk.now(), self.disk.stats());
        let r = f();
        let (t1, s1) = (self.disk.now(), self.disk.stats());
        *self.current.lock().unwrap() = "outside";
        *self.depth.lock().unwrap() -= 1;
        let mut ks = self.kinds.lock().unwrap();
        let k = ks.entry(what).or_default();
        add(k, bytes, t1 - t0, &s0, &s1);
        r
    }

    fn zone_kind(&self, zone: u32, write: bool) -> &'static str {
        if zone < self.conv {
            if write {
                "meta write"
            } else {
                "meta read"
            }
        } else if self.logs.lock().unwrap().contains(&zone) {
            if write {
                "log write"
            } else {
                "log read"
            }
        } else if write {
            "band write"
        } else {
            "band read"
        }
    }

    fn zone_of(&self, lba: u64) -> u32 {
        (lba / self.inner.info().zone_sectors) as u32
    }
}

fn add(k: &mut Kind, bytes: u64, ns: Nanos, a: &Stats, b: &Stats) {
    k.calls += 1;
    k.bytes += bytes;
    k.ns += ns;
    k.media_reads += b.media_reads - a.media_reads;
    k.media_writes += b.media_writes - a.media_writes;
    k.media_read_bytes += b.media_bytes_read - a.media_bytes_read;
    k.media_write_bytes += b.media_bytes_written - a.media_bytes_written;
    k.seeks += b.mech.seeks - a.mech.seeks;
    k.seek_ns += b.mech.seek_ns - a.mech.seek_ns;
    k.rotation_ns += b.mech.rotation_ns - a.mech.rotation_ns;
    k.transfer_ns += b.mech.transfer_ns - a.mech.transfer_ns;
    k.flushes += b.flushes - a.flushes;
    if bytes > 0 {
        *k.sizes
            .entry(bytes.div_ceil(1024).next_power_of_two())
            .or_default() += 1;
    }
}

impl BlockDevice for Tracer {
    fn info(&self) -> DeviceInfo {
        self.inner.info()
    }
    fn read(&self, lba: u64, buf: &mut [u8]) -> Result<IoDone> {
        let kind = self.zone_kind(self.zone_of(lba), false);
        let n = buf.len() as u64;
        self.charge(kind, n, || self.inner.read(lba, buf))
    }
    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
        let kind = self.zone_kind(self.zone_of(lba), true);
        self.charge(kind, data.len() as u64, || {
            self.inner.write_with(lba, data, flags)
        })
    }
    fn flush(&self) -> Result<IoDone> {
        self.charge("sync", 0, || self.inner.flush())
    }
    fn discard(&self, lba: u64, sectors: u64) -> Result<IoDone> {
        self.charge("discard", 0, || self.inner.discard(lba, sectors))
    }
    fn submit(&self, reqs: Vec<Request>) -> Vec<Result<Completion>> {
        self.charge("submit", 0, || self.inner.submit(reqs))
    }
    fn now(&self) -> Nanos {
        self.inner.now()
    }
    fn idle(&self, d: Nanos) {
        self.inner.idle(d)
    }
}

impl ZonedDevice for Tracer {
    fn report_zones(&self, filter: ZoneFilter) -> Vec<Zone> {
        self.inner.report_zones(filter)
    }
    fn zone(&self, index: u32) -> Result<Zone> {
        self.inner.zone(index)
    }
    fn zone_action(&self, action: ZoneAction, target: ZoneTarget) -> Result<IoDone> {
        if let (ZoneAction::Reset, ZoneTarget::One(z)) = (action, target) {
            self.logs.lock().unwrap().remove(&z);
        }
        self.charge("reset/zone action", 0, || {
            self.inner.zone_action(action, target)
        })
    }
    fn hint_zone(&self, index: u32, hint: ZoneHint) {
        if hint == ZoneHint::Log {
            self.logs.lock().unwrap().insert(index);
        }
        self.charge("hint (persist)", 0, || self.inner.hint_zone(index, hint))
    }
    fn zone_space(&self) -> Option<ZoneSpace> {
        self.inner.zone_space()
    }
    fn append(&self, index: u32, data: &[u8]) -> Result<(u64, IoDone)> {
        let kind = self.zone_kind(index, true);
        self.charge(kind, data.len() as u64, || self.inner.append(index, data))
    }
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let scheme = args.get(1).map_or("cmr", String::as_str).to_string();
    let share: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0.85);
    let cap_mib: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3072);
    let (policy, rmw) = match scheme.as_str() {
        "seq" => (Policy::Seq, RmwMode::Naive),
        "three-phase" | "cmr" => (Policy::ThreePhase, RmwMode::Naive),
        "kvimr-n" => (Policy::CompactionAware, RmwMode::Naive),
        _ => (Policy::CompactionAware, RmwMode::Merged),
    };
    let mut cfg = profile("imr-paper").unwrap();
    cfg.capacity = cap_mib << 20;
    cfg.zones.zone_size = 16 << 20;
    if scheme == "cmr" {
        cfg = cfg.cmr_twin();
    }
    let disk = Arc::new(Disk::in_memory(cfg).unwrap());
    let tracks = disk.track_layout().unwrap().clone();
    let current = Arc::new(Mutex::new("format"));
    let raw = Arc::new(Raw {
        disk: disk.clone(),
        current: current.clone(),
        kinds: Mutex::new(BTreeMap::new()),
    });
    let dev: Arc<dyn BlockDevice> = raw.clone();
    let zo = ZonedOptions {
        zone_bytes: 16 << 20,
        conventional_zones: 1,
        log_zones: 3,
        staging_bytes: 20 << 20,
    };
    let opts = Options {
        policy,
        rmw,
        ..Options::default()
    };
    let a = Arc::new(ZonedAdapter::format(dev, &tracks, zo, opts).unwrap());
    let layout = a.store().layout();
    let data_bytes = layout.data_sectors * layout.ss;
    let tracer = Arc::new(Tracer {
        conv: a.info().conventional_zones,
        inner: a.clone(),
        disk: disk.clone(),
        logs: Mutex::new(HashSet::new()),
        kinds: Mutex::new(BTreeMap::new()),
        depth: Mutex::new(0),
        current,
    });
    let mut dbo = DbOptions {
        background_compaction: false,
        loc_level1_bands: 4,
        loc_level_multiplier: 10,
        ..DbOptions::default()
    };
    if let Some(n) = env_usize("READ_AHEAD") {
        dbo.read_ahead_bytes = n;
    }
    if let Some(n) = env_usize("COMPACTION_READ_AHEAD") {
        dbo.compaction_read_ahead_bytes = n;
    }
    let t_start = disk.now();
    let db = Db::create(tracer.clone(), FormatOptions::loc(), dbo).unwrap();
    let mut inserted = 0u64;
    let target = (share * data_bytes as f64) as u64;
    let mut value = vec![0u8; 1000];
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut k = 0u64;
    while inserted < target {
        let h = k.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17);
        let key = format!("user{h:016x}");
        for b in value.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = b.len();
            b.copy_from_slice(&x.to_le_bytes()[..n]);
        }
        if let Err(e) = db.put(key.as_bytes(), &value) {
            println!("stopped: {e}");
            break;
        }
        inserted += (key.len() + value.len()) as u64;
        k += 1;
    }
    let total = disk.now() - t_start;
    let ds = db.stats();
    let st = a.store().stats();
    let dstat = disk.stats();
    let s = |ns: u64| ns as f64 / 1e9;
    let mib = |b: u64| b as f64 / 1048576.0;
    println!(
        "{scheme}: {k} puts, {:.1}% of {:.0} MiB data tracks inserted, {:.1} device s, {:.0} ops/s",
        inserted as f64 / data_bytes as f64 * 100.0,
        mib(data_bytes),
        s(total),
        k as f64 / s(total)
    );
    println!(
        "engine: compactions {}, flushes {}, log {:.0} MiB, flush {:.0} MiB, compaction read {:.0} MiB, written {:.0} MiB, manifest {:.1} MiB, LSM WA {:.2}",
        ds.compactions,
        ds.flushes,
        mib(ds.log_bytes),
        mib(ds.flush_bytes),
        mib(ds.compaction_bytes_read),
        mib(ds.compaction_bytes_written),
        mib(ds.manifest_bytes),
        ds.write_amplification
    );
    println!(
        "store: persist {:.1} s (RMW {:.1} s), sync {:.1} s, syncs {}, map writes {} ({:.1} MiB)",
        s(st.persist_ns),
        s(st.rmw_ns),
        s(st.sync_ns),
        st.syncs,
        st.map_writes,
        mib(st.map_bytes),
    );
    println!(
        "disk: reads {} writes {} flushes {}; media reads {} ({:.0} MiB) writes {} ({:.0} MiB); seeks {} ({:.1} s), head switches {}, track switches {}, rotation {:.1} s, transfer {:.1} s, read-ahead hits {}",
        dstat.reads,
        dstat.writes,
        dstat.flushes,
        dstat.media_reads,
        mib(dstat.media_bytes_read),
        dstat.media_writes,
        mib(dstat.media_bytes_written),
        dstat.mech.seeks,
        s(dstat.mech.seek_ns),
        dstat.mech.head_switches,
        dstat.mech.track_switches,
        s(dstat.mech.rotation_ns),
        s(dstat.mech.transfer_ns),
        dstat.mech.read_ahead_hits,
    );
    println!("\n| call | calls | MiB | device s | media reads | MiB read | media writes | MiB written | seeks | seek s | rotation s | transfer s | drive flushes |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let ks = tracer.kinds.lock().unwrap().clone();
    let mut sum = 0u64;
    for (name, k) in &ks {
        sum += k.ns;
        println!(
            "| {name} | {} | {:.0} | {:.1} | {} | {:.0} | {} | {:.0} | {} | {:.1} | {:.1} | {:.1} | {} |",
            k.calls,
            mib(k.bytes),
            s(k.ns),
            k.media_reads,
            mib(k.media_read_bytes),
            k.media_writes,
            mib(k.media_write_bytes),
            k.seeks,
            s(k.seek_ns),
            s(k.rotation_ns),
            s(k.transfer_ns),
            k.flushes
        );
    }
    println!("| all traced | | | {:.1} | of {:.1} |", s(sum), s(total));
    println!("\n| engine call / device command | commands | MiB | device s | media reads | MiB read | media writes | MiB written | seeks | seek s | rotation s | transfer s |");
    println!(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for (name, k) in raw.kinds.lock().unwrap().iter() {
        println!(
            "| {name} | {} | {:.0} | {:.1} | {} | {:.0} | {} | {:.0} | {} | {:.1} | {:.1} | {:.1} |",
            k.calls,
            mib(k.bytes),
            s(k.ns),
            k.media_reads,
            mib(k.media_read_bytes),
            k.media_writes,
            mib(k.media_write_bytes),
            k.seeks,
            s(k.seek_ns),
            s(k.rotation_ns),
            s(k.transfer_ns),
        );
    }
    for (name, k) in &ks {
        if !k.sizes.is_empty() {
            let h: Vec<String> = k
                .sizes
                .iter()
                .map(|(kib, n)| format!("≤{kib}K:{n}"))
                .collect();
            println!("{name} sizes: {}", h.join(" "));
        }
    }
}
