//! Helpers shared by the middleware's tests: tiny interlaced drives, stores on them, file
//! contents that name their file and offset, and checks that every file reads back.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{profile, BlockDevice, Disk, DiskConfig, TrackLayout};
use tegula_kvimr::{FormatOptions, NewFile, Options, Store};

/// Sector size.
pub const SS: u64 = 4096;

/// A tiny imr drive: 2 heads, bottom tracks of `bottom` sectors (tops ≈ 0.8 of that), one
/// recording zone, `capacity_kib` KiB, write cache on or off.
pub fn config(bottom: u64, capacity_kib: u64, cache: bool) -> DiskConfig {
    // Resolving a built-in profile sizes its full drive; do it once.
    static IMR: std::sync::OnceLock<DiskConfig> = std::sync::OnceLock::new();
    let mut c = IMR.get_or_init(|| profile("imr").unwrap()).clone();
    c.media.heads = 2;
    c.media.cylinders = 400;
    c.media.od_track_bytes = bottom * SS;
    c.media.od_id_ratio = 1.0;
    c.media.recording_zones = 1;
    c.zones.zone_size = 256 << 10;
    c.capacity = capacity_kib << 10;
    c.cache.write_cache = cache;
    c.cache.size = 4 << 20;
    c
}

/// A drive from `cfg`, in memory.
pub fn disk(cfg: DiskConfig) -> Arc<Disk> {
    Arc::new(Disk::in_memory(cfg).unwrap())
}

/// The track layout of a drive.
pub fn tracks(d: &Disk) -> TrackLayout {
    d.track_layout().unwrap().clone()
}

/// Small format options for tiny drives with tracks of at most `max_track` sectors.
pub fn small_format(max_track: u64, file_bytes: u64) -> FormatOptions {
    FormatOptions {
        map_slot_bytes: 32 << 10,
        staging_bytes: (2 * max_track + 8) * SS,
        file_bytes,
        ..FormatOptions::default()
    }
}

/// Formats `d`.
pub fn format(d: &Arc<Disk>, fmt: FormatOptions, opts: Options) -> Store {
    let dev: Arc<dyn BlockDevice> = d.clone();
    Store::format(dev, &tracks(d), fmt, opts).unwrap()
}

/// Opens `d` again.
pub fn reopen(d: &Arc<Disk>, opts: Options) -> Store {
    let dev: Arc<dyn BlockDevice> = d.clone();
    Store::open(dev, &tracks(d), opts).unwrap()
}

/// `len` bytes that identify file `tag` and each 8-byte word's offset (memoized: tests
/// build the same contents over and over, and unoptimized builds are slow at it).
pub fn content(tag: u64, len: usize) -> Vec<u8> {
    thread_local! {
        static MEMO: std::cell::RefCell<std::collections::HashMap<(u64, usize), Vec<u8>>> =
            Default::default();
    }
    MEMO.with(|m| {
        m.borrow_mut()
            .entry((tag, len))
            .or_insert_with(|| {
                let k = tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                let mut v: Vec<u8> = (0..len.div_ceil(8) as u64)
                    .flat_map(|i| (i.wrapping_mul(k) ^ tag).to_le_bytes())
                    .collect();
                v.truncate(len);
                v
            })
            .clone()
    })
}

/// Writes a whole file (create, append, seal) and returns its id.
pub fn put(s: &Store, name: u32, level: Option<u8>, data: &[u8]) -> u64 {
    let id = s.create(name, NewFile::Data { level }).unwrap();
    s.append(id, data).unwrap();
    s.seal(id).unwrap();
    id
}

/// Reads a whole file.
pub fn get(s: &Store, id: u64) -> tegula_kvimr::Result<Vec<u8>> {
    let len = s.file(id)?.len as usize;
    let mut b = vec![0u8; len];
    s.read(id, 0, &mut b)?;
    Ok(b)
}

/// Checks that the store holds exactly the files of `model` (by name), byte for byte, and
/// that its map is consistent.
pub fn verify(s: &Store, model: &BTreeMap<u32, Vec<u8>>) {
    s.check().unwrap();
    let files = s.files();
    let names: Vec<u32> = files.iter().map(|f| f.name).collect();
    let want: Vec<u32> = model.keys().copied().collect();
    assert_eq!(names.len(), want.len(), "files {names:?}, model {want:?}");
    for f in files {
        let data = model
            .get(&f.name)
            .unwrap_or_else(|| panic!("file {} (name {}) not in the model", f.id, f.name));
        let got = get(s, f.id).unwrap_or_else(|e| panic!("file {} unreadable: {e}", f.name));
        assert!(got == *data, "file {} differs", f.name);
    }
}

/// SMRDB-LOC's options for the engine-side tests on tiny stores: inline compaction, a 64 KiB
/// log buffer kept in the process (these stores are sized for it: written through, each
/// 1-3 KiB record of `smrdb_power.rs` takes a padded sector of its own, the log grew from 25.1
/// to 34.1 MB for the same writes and the store ran out of free bands), levels of 2 bands
/// growing fourfold.
pub fn db_opts() -> tegula_smrdb::Options {
    tegula_smrdb::Options {
        background_compaction: false,
        log_buffer_bytes: 64 << 10,
        log_write_through: Some(false),
        loc_level1_bands: 2,
        loc_level_multiplier: 4,
        ..tegula_smrdb::Options::default()
    }
}

/// The zoned view of those tests: 1 MiB zones, one conventional, 10 log zones, 4 MiB of
/// staging.
pub fn zoned_1mib() -> tegula_kvimr::ZonedOptions {
    tegula_kvimr::ZonedOptions {
        zone_bytes: 1 << 20,
        conventional_zones: 1,
        log_zones: 10,
        staging_bytes: 4 << 20,
    }
}
