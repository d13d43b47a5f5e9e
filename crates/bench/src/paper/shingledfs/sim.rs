//! One run of the cleaning experiment: a fresh tegula fs on an in-memory `hm-smr` drive, the
//! workload driven through [`Fs`]'s API on this thread, and the cleaners called between
//! requests and during think time as the mount's background cleaner would call them.

use super::{CleaningOptions, CleaningRun, RunSpec, Trigger, Workload};
use crate::error::{Error, Result};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::sync::Arc;
use tegula_device::{profile, BlockDevice, Disk, ZonedDevice};
use tegula_fs::{CleanStep, Fs, FsError, FsOptions, Triggers, Urgency, ROOT};

/// Size of each file of the overwrite workload.
const DB_FILE: u64 = 8 << 20;

/// An error of the file system while doing `what`.
fn fs_err(what: &str) -> impl FnOnce(FsError) -> Error + '_ {
    move |e| Error::engine(what, e)
}

/// The drive of a run: hm-smr's mechanics, `capacity` in `zone`-sized zones, one
/// conventional zone for metadata, in memory on the virtual clock.
fn drive(capacity: u64, zone: u64) -> Result<Arc<Disk>> {
    let mut cfg = profile("hm-smr").map_err(|e| Error::device("profile hm-smr", e))?;
    cfg.capacity = capacity;
    cfg.zones.zone_size = zone;
    cfg.zones.conventional_zones = Some(1);
    Ok(Arc::new(Disk::in_memory(cfg).map_err(|e| {
        Error::device("creating the in-memory drive", e)
    })?))
}

/// A size from a source tree's distribution: 70 % up to 16 KiB, 25 % up to 256 KiB, 5 % up
/// to 4 MiB (at most `max`).
fn file_size(rng: &mut SmallRng, max: u64) -> u64 {
    let s = match rng.gen_range(0..100) {
        0..=69 => rng.gen_range(512..16 << 10),
        70..=94 => rng.gen_range(16 << 10..256 << 10),
        _ => rng.gen_range(256 << 10..4 << 20),
    };
    s.min(max)
}

struct Sim {
    fs: Fs,
    dev: Arc<Disk>,
    trigger: Trigger,
    t: Triggers,
    think_gap: u64,
    think: u64,
    user: u64,
    enospc: u64,
    series: Vec<(f64, f64)>,
    start: u64,
}

/// Counts ENOSPC as a refused request; other errors end the run.
fn refused(r: tegula_fs::Result<()>, enospc: &mut u64, what: &str) -> Result<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(FsError::NoSpace(_)) => {
            *enospc += 1;
            Ok(false)
        }
        Err(e) => Err(Error::engine(what, e)),
    }
}

impl Sim {
    fn secs(&self) -> f64 {
        (self.dev.now() - self.start) as f64 / 1e9
    }

    fn step(&mut self) -> Result<CleanStep> {
        self.fs
            .clean_step(self.t.step_bytes)
            .map_err(fs_err("cleaning"))
    }

    /// After a request: the threshold cleaners, as the mount's background thread runs them
    /// (high priority until the drive is out of danger, low priority one step).
    fn after_request(&mut self) -> Result<()> {
        self.series.push((self.secs(), self.user as f64));
        if !self.trigger.thresholds() {
            return Ok(());
        }
        loop {
            match self.fs.urgency(&self.t, 0) {
                Urgency::High => {
                    if self.step()? == CleanStep::Nothing {
                        break;
                    }
                }
                Urgency::Low => {
                    self.step()?;
                    break;
                }
                _ => break,
            }
        }
        Ok(())
    }

    /// The host thinks: the drive idles; once it has been idle for the idle trigger's time
    /// the idle cleaner runs in steps until the next request is due.
    fn think(&mut self) -> Result<()> {
        let gap = self.think_gap;
        let t0 = self.dev.now();
        if self.trigger.idle() && self.t.idle_after > 0 && self.t.idle_after < gap {
            self.dev.idle(self.t.idle_after);
            while self.dev.now() - t0 < gap {
                if self.fs.urgency(&self.t, self.dev.now() - t0) == Urgency::None {
                    break;
                }
                if self.step()? == CleanStep::Nothing {
                    break;
                }
            }
        }
        let used = self.dev.now() - t0;
        if used < gap {
            self.dev.idle(gap - used);
        }
        self.think += gap;
        self.series.push((self.secs(), self.user as f64));
        Ok(())
    }

    /// Writes a new file of `size` bytes in 1 MiB requests; false if the drive refused.
    fn write_file(&mut self, ino: u64, size: u64, fill: u8) -> Result<bool> {
        let chunk = vec![fill; size.min(1 << 20) as usize];
        let mut off = 0;
        while off < size {
            let n = (size - off).min(chunk.len() as u64);
            let r = self
                .fs
                .write(ino, off, &chunk[..n as usize], false)
                .map(|_| ());
            if !refused(r, &mut self.enospc, "writing")? {
                return Ok(false);
            }
            self.user += n;
            off += n;
            self.after_request()?;
        }
        Ok(true)
    }

    /// Repeated untar and delete: trees of `tree_bytes`, the oldest deleted while the live
    /// data would exceed `target` with the next tree.
    fn trees(&mut self, rng: &mut SmallRng, target: u64, volume: u64, tree: u64) -> Result<()> {
        let mut trees: VecDeque<(Vec<u8>, u64)> = VecDeque::new();
        let mut live = 0u64;
        let mut n = 0u64;
        while self.user < volume {
            while live > target.saturating_sub(tree) {
                let Some((name, bytes)) = trees.pop_front() else {
                    break;
                };
                let dir = self.fs.lookup(ROOT, &name).map_err(fs_err("lookup"))?.ino;
                let names: Vec<Vec<u8>> = self
                    .fs
                    .readdir(dir)
                    .map_err(fs_err("readdir"))?
                    .into_iter()
                    .map(|e| e.0)
                    .collect();
                for f in names {
                    self.fs.unlink(dir, &f).map_err(fs_err("unlink"))?;
                }
                self.fs.rmdir(ROOT, &name).map_err(fs_err("rmdir"))?;
                self.fs.commit().map_err(fs_err("commit"))?;
                live -= bytes;
                self.after_request()?;
            }
            let name = format!("tree{n}").into_bytes();
            n += 1;
            let dir = self
                .fs
                .mkdir(ROOT, &name, 0o755, 0, 0)
                .map_err(fs_err("mkdir"))?
                .ino;
            let mut bytes = 0u64;
            let mut i = 0;
            while bytes < tree {
                let size = file_size(rng, tree);
                let ino = self
                    .fs
                    .create(dir, format!("f{i}").as_bytes(), 0o644, 0, 0)
                    .map_err(fs_err("create"))?
                    .ino;
                i += 1;
                self.fs.open_file(ino).map_err(fs_err("open"))?;
                self.write_file(ino, size, (n % 251) as u8)?;
                self.fs.release(ino).map_err(fs_err("release"))?;
                // A refused file still holds what was written of it until its tree goes.
                bytes += size;
                self.after_request()?;
            }
            let r = self.fs.sync_all();
            refused(r, &mut self.enospc, "sync")?;
            trees.push_back((name, bytes));
            live += bytes;
            self.think()?;
        }
        Ok(())
    }

    /// db_bench overwrite: random 64 KiB-1 MiB rewrites of `target / 8 MiB` files, an fsync
    /// every 16 writes, think time every `burst` bytes.
    fn overwrite(
        &mut self,
        rng: &mut SmallRng,
        target: u64,
        volume: u64,
        burst: u64,
    ) -> Result<()> {
        let files: Vec<u64> = (0..(target / DB_FILE).max(1))
            .map(|i| {
                self.fs
                    .create(ROOT, format!("db{i}").as_bytes(), 0o644, 0, 0)
                    .map(|a| a.ino)
                    .map_err(fs_err("create"))
            })
            .collect::<Result<_>>()?;
        for &f in &files {
            self.write_file(f, DB_FILE, 1)?;
            let r = self.fs.fsync(f);
            refused(r, &mut self.enospc, "fsync")?;
        }
        let mut since_think = 0u64;
        let mut ops = 0u64;
        let mut buf = vec![0u8; 1 << 20];
        while self.user < volume {
            let f = files[rng.gen_range(0..files.len())];
            let len = rng.gen_range(64u64 << 10..1 << 20);
            let off = rng.gen_range(0..DB_FILE - len) / 4096 * 4096;
            buf[..len as usize].fill(rng.gen());
            let r = self
                .fs
                .write(f, off, &buf[..len as usize], false)
                .map(|_| ());
            if refused(r, &mut self.enospc, "writing")? {
                self.user += len;
                since_think += len;
            }
            ops += 1;
            if ops.is_multiple_of(16) {
                let r = self.fs.fsync(f);
                refused(r, &mut self.enospc, "fsync")?;
            }
            self.after_request()?;
            if since_think >= burst {
                since_think = 0;
                self.think()?;
            }
        }
        Ok(())
    }
}

/// Runs `spec` on a fresh drive.
pub(super) fn run_one(opts: &CleaningOptions, spec: RunSpec) -> Result<CleaningRun> {
    let dev = drive(opts.capacity, opts.zone)?;
    let zdev: Arc<dyn ZonedDevice> = dev.clone();
    let fs = Fs::mkfs(
        zdev,
        FsOptions {
            placement: Some(spec.placement),
            clean: spec.clean,
            ..FsOptions::default()
        },
    )
    .map_err(fs_err("mkfs"))?;
    let st = fs.statfs();
    let cap = st.blocks * st.block_size;
    let target = (opts.fill * cap as f64) as u64;
    let volume = (opts.volume * cap as f64) as u64;
    let start = dev.now();
    let mut sim = Sim {
        fs,
        dev: dev.clone(),
        trigger: spec.trigger,
        t: Triggers::default(),
        think_gap: opts.think,
        think: 0,
        user: 0,
        enospc: 0,
        series: Vec::new(),
        start,
    };
    let mut rng = SmallRng::seed_from_u64(opts.seed);
    match spec.workload {
        Workload::Tree => sim.trees(&mut rng, target, volume, opts.tree_bytes)?,
        Workload::Overwrite => sim.overwrite(&mut rng, target, volume, opts.tree_bytes)?,
    }
    let r = sim.fs.sync_all();
    refused(r, &mut sim.enospc, "sync")?;
    let m = sim.fs.meta_stats();
    let device_secs = sim.secs();
    let think_secs = sim.think as f64 / 1e9;
    let busy = (device_secs - think_secs).max(1e-9);
    let g = sim.fs.gc_estimate(opts.fill);
    let est = g.at_write_rate(g.written as f64 / device_secs.max(1e-9));
    Ok(CleaningRun {
        workload: spec.workload,
        placement: spec.placement.name().to_string(),
        clean: spec.clean.name().to_string(),
        trigger: spec.trigger,
        user_bytes: sim.user,
        moved_bytes: g.moved,
        reclaimed_bytes: m.reclaimed_bytes,
        write_amplification: if sim.user == 0 {
            1.0
        } else {
            (sim.user + g.moved) as f64 / sim.user as f64
        },
        cleanings: m.cleanings,
        tail_cleanings: m.tail_cleanings,
        device_secs,
        think_secs,
        throughput_mb_s: sim.user as f64 / busy / 1e6,
        enospc: sim.enospc,
        live_bytes: g.live,
        dead_bytes: g.dead,
        measured_clean_rate: m.reclaimed_bytes as f64 / device_secs.max(1e-9),
        estimated_clean_rate: est.clean_rate,
        space_overhead: g.space_overhead,
        series: sim.series,
    })
}
