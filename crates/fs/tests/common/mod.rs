//! Shared helpers of the file-system tests: a tiny host-managed drive and path helpers.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use tegula_device::{profile, Disk, OpenOptions, ZonedDevice};
use tegula_fs::{Fs, FsOptions, Kind, ROOT};

/// A small host-managed drive: `zones` zones of `zone_mib` MiB, two conventional.
pub fn disk(zones: u64, zone_mib: u64) -> Arc<Disk> {
    let mut cfg = profile("hm-smr").unwrap();
    cfg.capacity = zones * (zone_mib << 20);
    cfg.zones.zone_size = zone_mib << 20;
    cfg.zones.conventional_zones = Some(2);
    Arc::new(Disk::in_memory(cfg).unwrap())
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
    let disk = Disk::open_image(img, OpenOptions { read_only: true }).unwrap();
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
