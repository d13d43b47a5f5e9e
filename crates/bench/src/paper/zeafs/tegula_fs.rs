//! tegula fs on the `hm-smr` drive, mounted with FUSE in this process.

use super::probe::{delta, disk_counters, Clock, Probe, MIB};
use super::run::{bench_all, finish, size_text, Run};
use super::ZeafsOptions;
use crate::error::{Error, Result};
use crate::observer::Observer;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::Duration;
use tegula_device::{profile, BlockDevice, Disk, ZonedDevice};
use tegula_fs::fuse::FuseFs;
use tegula_fs::{Fs, FsOptions};

/// The configuration's name in the tables.
const NAME: &str = "tegula fs on hm-smr";

fn fs_err(what: &'static str) -> impl Fn(tegula_fs::FsError) -> Error {
    move |e| Error::engine(format!("tegula fs {what}"), e)
}

/// Makes tegula fs on a fresh `hm-smr` drive, mounts it, runs db_bench on it, unmounts, and
/// notes what the run left on the drive.
pub(super) fn run(a: &ZeafsOptions, tmp: &Path, obs: &dyn Observer) -> Result<Run> {
    let mut cfg = profile("hm-smr").map_err(|e| Error::invalid(e.to_string()))?;
    cfg.capacity = a.capacity;
    let disk =
        Arc::new(Disk::in_memory(cfg).map_err(|e| Error::device("creating the hm-smr drive", e))?);
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    let fs = Fs::mkfs(dev.clone(), FsOptions::default()).map_err(fs_err("mkfs"))?;
    let mp = tmp.join("tegula");
    std::fs::create_dir_all(&mp).map_err(|e| Error::io(format!("creating {}", mp.display()), e))?;
    let (tx, rx) = mpsc::channel();
    let opts = [fuser::MountOption::FSName("tegula-figure4".into())];
    let session = fuser::Session::new(FuseFs::new(fs, tx), &mp, &opts)
        .map_err(|e| Error::io("FUSE mount", e))?
        .spawn()
        .map_err(|e| Error::io("FUSE mount", e))?;
    let d = disk.clone();
    let probe: Probe = Arc::new(move || {
        let s = d.stats();
        Clock {
            now: d.now(),
            busy: s.busy_ns,
            read: s.bytes_read,
            written: s.bytes_written,
        }
    });
    let mut c0 = BTreeMap::new();
    disk_counters(&disk, &mut c0);
    let res = bench_all(NAME, &mp, &probe, a, tmp, obs);
    // Dropping the session unmounts; the file system reports when everything is written.
    drop(session);
    rx.recv_timeout(Duration::from_secs(600))
        .map_err(|e| Error::internal(format!("waiting for the unmount: {e}")))?
        .map_err(|e| Error::engine("tegula fs unmount", e))?;
    let mut r = finish(
        NAME,
        format!("hm-smr, {}", size_text(a.capacity)),
        res?,
        &probe,
        a.window,
    )?;
    let mut c1 = BTreeMap::new();
    disk_counters(&disk, &mut c1);
    r.counters = delta(&c0, &c1);
    // What the run left on the drive.
    let fs = Fs::open(
        dev,
        FsOptions {
            read_only: true,
            ..FsOptions::default()
        },
    )
    .map_err(fs_err("open"))?;
    let zs = fs.zone_stats();
    let used = zs.iter().filter(|z| z.used > 0).count();
    let dead: u64 = zs.iter().map(|z| z.dead).sum();
    let live: u64 = zs.iter().map(|z| z.live).sum();
    r.notes.push(format!(
        "zones in use at the end: {used} of {} ({:.0} MiB live, {:.0} MiB dead); zone resets \
         by the cleaner are among the `zone_ops`",
        zs.len(),
        live as f64 / MIB,
        dead as f64 / MIB
    ));
    Ok(r)
}
