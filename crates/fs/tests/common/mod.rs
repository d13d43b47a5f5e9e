//! Shared helpers of the file-system tests: a tiny host-managed drive, path helpers, and
//! a FUSE mount of an image (with the reason to skip where FUSE is unavailable).
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tegula_device::{profile, Disk, DiskConfig, OpenOptions, ZonedDevice};
use tegula_fs::{Fs, FsOptions, Kind, ROOT};

/// Whether the tests run on the ZNS profile (`TEGULA_TEST_PROFILE=zns`, which `.ci/run` runs
/// the whole suite with too) rather than host-managed SMR (unset or `hm-smr`; anything else
/// fails the test).
pub fn zns() -> bool {
    match std::env::var("TEGULA_TEST_PROFILE").as_deref() {
        Err(_) | Ok("hm-smr") => false,
        Ok("zns") => true,
        Ok(p) => panic!("TEGULA_TEST_PROFILE={p}: hm-smr or zns"),
    }
}

/// The test drive's configuration: host-managed, `mib` MiB in zones of `zone_mib` MiB, the
/// first `conventional` of them conventional. On the ZNS profile the same room for data: as
/// many sequential zones, each with `zone_mib` MiB of capacity in a zone twice that size, no
/// conventional zone, and the zones the file system's emulated conventional zone takes for
/// its log ([`tegula_device::ConvZones`]).
pub fn hm_smr(mib: u64, zone_mib: u64, conventional: u32) -> DiskConfig {
    if zns() {
        let seq = mib / zone_mib - u64::from(conventional);
        let mut cfg = profile("zns").unwrap();
        cfg.zones.zone_size = (2 * zone_mib) << 20;
        cfg.zones.zone_capacity = Some(zone_mib << 20);
        let ss = u64::from(cfg.sector_size);
        let log = u64::from(tegula_device::convzones::log_zones_for(
            cfg.zones.zone_size / ss,
            (zone_mib << 20) / ss,
        ));
        cfg.capacity = (seq + log) * cfg.zones.zone_size;
        return cfg;
    }
    let mut cfg = profile("hm-smr").unwrap();
    cfg.capacity = mib << 20;
    cfg.zones.zone_size = zone_mib << 20;
    cfg.zones.conventional_zones = Some(conventional);
    cfg
}

/// A small host-managed drive: `zones` zones of `zone_mib` MiB, two conventional.
pub fn disk(zones: u64, zone_mib: u64) -> Arc<Disk> {
    Arc::new(Disk::in_memory(hm_smr(zones * zone_mib, zone_mib, 2)).unwrap())
}

/// Options with small buffers so that tests exercise extents and splitting.
pub fn small_opts() -> FsOptions {
    FsOptions {
        buffer_bytes: 64 << 10,
        dirty_limit: 512 << 10,
        max_extent: 256 << 10,
        commit_bytes: 16 << 10,
        ..FsOptions::default()
    }
}

/// The device as the file system sees `d` (on ZNS, with the conventional zone it emulates),
/// opened afresh, for a test that reads what the file system wrote; never written to.
pub fn seen(d: &Arc<Disk>) -> Arc<dyn ZonedDevice> {
    tegula_device::ConvZones::wrap_if_needed(d.clone()).unwrap()
}

/// The LBA of `d` that holds sector `lba` as the file system sees the device (on ZNS, where
/// the newest copy of a sector of its emulated conventional zone lives).
pub fn raw_lba(d: &Arc<Disk>, lba: u64) -> u64 {
    if !zns() {
        return lba;
    }
    tegula_device::ConvZones::open(d.clone(), 1)
        .unwrap()
        .device_lba(lba)
        .expect("a sector the file system wrote")
}

/// The first LBA of `zone` as the file system sees the device.
pub fn zone_start(d: &Arc<Disk>, zone: u32) -> u64 {
    seen(d).zone(zone).unwrap().start_lba
}

/// Changes sector `lba` (as the file system sees the device) on the media behind the zone
/// rules, with `f`.
pub fn damage(d: &Arc<Disk>, lba: u64, f: impl FnOnce(&mut [u8])) {
    let mut s = vec![0u8; tegula_device::BlockDevice::info(&**d).sector_size as usize];
    tegula_device::BlockDevice::read(&*seen(d), lba, &mut s).unwrap();
    f(&mut s);
    let raw = raw_lba(d, lba);
    d.with_media(|m| m.write(raw, &s, true)).unwrap();
}

/// Makes `n` sectors from `lba` (as the file system sees the device) unreadable.
pub fn inject(d: &Arc<Disk>, lba: u64, n: u64) {
    d.inject_media_error(raw_lba(d, lba), n).unwrap();
}

pub fn zoned(d: &Arc<Disk>) -> Arc<dyn ZonedDevice> {
    d.clone()
}

/// Resolves a slash-separated path from the root.
pub fn resolve(fs: &Fs, path: &str) -> Option<u64> {
    let mut ino = ROOT;
    for c in path.split('/').filter(|c| !c.is_empty()) {
        ino = fs.lookup(ino, c.as_bytes()).ok()?.ino;
    }
    Some(ino)
}

/// Every path in the file system with its contents (None for directories).
pub fn dump(fs: &mut Fs) -> std::collections::BTreeMap<String, Option<Vec<u8>>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![(ROOT, String::new())];
    while let Some((ino, path)) = stack.pop() {
        for (name, c, kind) in fs.readdir(ino).unwrap() {
            let p = format!("{path}/{}", String::from_utf8_lossy(&name));
            match kind {
                Kind::Dir => {
                    out.insert(p.clone(), None);
                    stack.push((c, p));
                }
                _ => {
                    let size = fs.getattr(c).unwrap().size;
                    let data = fs.read(c, 0, size as usize).unwrap();
                    assert_eq!(data.len() as u64, size, "{p}");
                    out.insert(p, Some(data));
                }
            }
        }
    }
    out
}

/// Opens the file system on the image at `img` read-only (after an unmount).
pub fn open_read_only(img: &Path) -> Fs {
    let disk = Disk::open_image(
        img,
        OpenOptions {
            read_only: true,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    let dev: Arc<dyn ZonedDevice> = Arc::new(disk);
    Fs::open(
        dev,
        FsOptions {
            read_only: true,
            ..FsOptions::default()
        },
    )
    .unwrap()
}

/// An image `fs.img` in `dir` of a fresh, closed file system on a 256 MiB drive in zones of
/// `zone_mib` MiB.
pub fn image(dir: &Path, zone_mib: u64) -> PathBuf {
    let path = dir.join("fs.img");
    let disk = Disk::create_image(&path, hm_smr(256, zone_mib, 1)).unwrap();
    let dev: Arc<dyn ZonedDevice> = Arc::new(disk);
    Fs::mkfs(dev, FsOptions::default())
        .unwrap()
        .close()
        .unwrap();
    path
}

/// Runs `script` with `sh -e` in `cwd`, asserts that it succeeded and returns its output.
pub fn sh(cwd: &Path, script: &str) -> String {
    let out = Command::new("sh")
        .arg("-ec")
        .arg(script)
        .current_dir(cwd)
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "script failed: {script}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Why FUSE mounts cannot be tested here (no `/dev/fuse` or no `fusermount3`), if so.
pub fn fuse_missing() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing".into());
    }
    if Command::new("fusermount3").arg("-V").output().is_err() {
        return Some("fusermount3 is not installed".into());
    }
    None
}

/// A FUSE mount of a test image (through [`tegula_fs::mount`], whose unmount retries a busy
/// mount instead of leaving it mounted).
pub struct FuseMount(tegula_fs::Mounted);

/// Mounts the file system of `image` at `mp`, with or without the kernel's writeback cache.
pub fn mount_image(image: &Path, mp: &Path, writeback: bool) -> Result<FuseMount, String> {
    let disk = Disk::open_image(image, OpenOptions::default()).map_err(|e| e.to_string())?;
    let dev: Arc<dyn ZonedDevice> = Arc::new(disk);
    let fs = Fs::open(dev, FsOptions::default()).map_err(|e| e.to_string())?;
    let opts = tegula_fs::MountOptions {
        writeback_cache: writeback,
        ..tegula_fs::MountOptions::default()
    };
    tegula_fs::mount(fs, mp, &opts)
        .map(FuseMount)
        .map_err(|e| e.to_string())
}

impl FuseMount {
    /// Unmounts and waits for the file system to write everything (panics if it did not).
    pub fn unmount(self) {
        self.0
            .unmount(Duration::from_secs(60))
            .expect("unmount wrote everything");
    }
}
