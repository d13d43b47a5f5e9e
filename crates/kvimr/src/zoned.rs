//! The store seen as a zoned device, so that an engine written for host-managed SMR (SMRDB's
//! LevelDB-style mode: one SSTable per band) runs on interlaced media unchanged but for one
//! call: [`ZonedDevice::hint_zone`] with the band's level when it opens an output band.
//!
//! * Conventional zones (the engine's superblock and manifest) are the store's raw area.
//! * A sequential zone is an SSTable slot: its first write creates a file, placed by the level
//!   hint given before (a zone hinted [`ZoneHint::Log`] becomes a safe file: a write-ahead log
//!   lives where read-modify-write cannot damage it). Writes must come at the write pointer.
//!   A data zone's writes are buffered by the store and persisted when the engine opens its
//!   next output band (the previous one is complete), when the zone fills, or at a flush.
//! * Reset deletes the file; flush is the store's sync (data, then the map).
//! * The zones are **thin-provisioned**: a file owns whole tracks for the bytes written to it
//!   (a zone is not backed by a zone's worth of tracks), so there are as many sequential
//!   zones as there are data tracks (a written file holds at least one) plus the safe slots,
//!   far more than the media could fill at once. The free space is what
//!   [`ZonedDevice::zone_space`] reports: the store's room on the data tracks. A write whose
//!   data finds no tracks fails with [`DeviceError::NoSpace`], and the zone can be reset.
//!
//! After a reopen a zone's write pointer is the durable length the map records: for a data
//! zone what its last sync persisted, for a log zone (a safe file) its length at the last
//! sync, so that no sector below it missed the media (a sync whose log grew writes a map
//! copy); appends go on from there.

use crate::error::Error;
use crate::map::Place;
use crate::options::{FormatOptions, Options};
use crate::store::{NewFile, Store};
use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::sync::Arc;
use tegula_device::api::transfer_sectors;
use tegula_device::{
    BlockDevice, Completion, DeviceError, DeviceInfo, IoDone, Nanos, Request, TrackLayout,
    WriteFlags, Zone, ZoneAction, ZoneCondition, ZoneFilter, ZoneHint, ZoneSpace, ZoneTarget,
    ZoneType, ZonedDevice,
};

/// Shape of the zoned view (fixed at format: recorded in the store's format options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZonedOptions {
    /// Zone (SSTable slot) size in bytes. Default 64 MiB (the paper's SSTable size).
    pub zone_bytes: u64,
    /// Conventional zones at the start (the engine's superblock and manifest). Default 1.
    pub conventional_zones: u32,
    /// Zones that may hold a log at once (safe files). Default 12 (SMRDB uses at most
    /// `max_log_bands` per memtable, for the mutable and the immutable one).
    pub log_zones: u32,
    /// Staging area for read-modify-write backups. Default 32 MiB.
    pub staging_bytes: u64,
}

impl Default for ZonedOptions {
    fn default() -> Self {
        ZonedOptions {
            zone_bytes: 64 << 20,
            conventional_zones: 1,
            log_zones: 12,
            staging_bytes: 32 << 20,
        }
    }
}

impl ZonedOptions {
    /// The zoned view a store was formatted for, from the format options its superblock
    /// records (`None` when they are not those of a zoned view).
    pub fn of_format(f: &FormatOptions) -> Option<ZonedOptions> {
        let zone_bytes = f.file_bytes;
        if zone_bytes == 0
            || f.raw_bytes == 0
            || f.safe_file_bytes != zone_bytes
            || !f.raw_bytes.is_multiple_of(zone_bytes)
        {
            return None;
        }
        let zo = ZonedOptions {
            zone_bytes,
            conventional_zones: u32::try_from(f.raw_bytes / zone_bytes).ok()?,
            log_zones: f.safe_files,
            staging_bytes: f.staging_bytes,
        };
        (zo.format() == *f).then_some(zo)
    }

    /// The store format these options need.
    pub fn format(&self) -> FormatOptions {
        FormatOptions {
            raw_bytes: self.conventional_zones as u64 * self.zone_bytes,
            safe_files: self.log_zones,
            safe_file_bytes: self.zone_bytes,
            file_bytes: self.zone_bytes,
            staging_bytes: self.staging_bytes,
            ..FormatOptions::default()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    Empty,
    File(u64),
    /// A log in a safe file: written through, never buffered.
    Safe(u64),
}

impl Use {
    fn id(self) -> Option<u64> {
        match self {
            Use::Empty => None,
            Use::File(id) | Use::Safe(id) => Some(id),
        }
    }
}

struct State {
    uses: Vec<Use>,
    /// Sectors written per sequential zone.
    wp: Vec<u64>,
    finished: Vec<bool>,
    hints: Vec<Option<ZoneHint>>,
    /// Data zones written since their last persist.
    open: BTreeSet<u32>,
    /// Device time of persists a level hint started, for level-0 files and deeper ones.
    hint_ns: [u64; 2],
}

/// A zoned device over a [`Store`]: zones are SSTable slots.
pub struct ZonedAdapter {
    store: Store,
    dev: Arc<dyn BlockDevice>,
    ss: u64,
    zone_sectors: u64,
    conv: u32,
    zones: u32,
    /// Sectors of the largest track (the most a zone's last track can leave empty).
    max_track: u64,
    state: Mutex<State>,
}

impl std::fmt::Debug for ZonedAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZonedAdapter")
            .field("zones", &self.zones)
            .field("zone_sectors", &self.zone_sectors)
            .finish_non_exhaustive()
    }
}

fn dev_err(e: Error) -> DeviceError {
    match e {
        Error::Device(d) => d,
        Error::NoSpace(m) => DeviceError::NoSpace(format!("kvimr: {m}")),
        other => DeviceError::Config(format!("kvimr: {other}")),
    }
}

impl ZonedAdapter {
    /// Formats the interlaced drive for the zoned view `zo` and opens it. The conventional
    /// zones read as zeros afterwards (whatever an earlier format left there is discarded),
    /// and every sequential zone is empty.
    pub fn format(
        dev: Arc<dyn BlockDevice>,
        tracks: &TrackLayout,
        zo: ZonedOptions,
        opts: Options,
    ) -> crate::Result<Self> {
        if zo.conventional_zones == 0 || zo.zone_bytes == 0 {
            return Err(Error::Invalid(
                "the zoned view needs a conventional zone and a positive zone size".into(),
            ));
        }
        let store = Store::format(dev.clone(), tracks, zo.format(), opts)?;
        store.discard_raw()?;
        store.sync()?;
        Self::wrap(store, dev)
    }

    /// Opens a drive formatted by [`ZonedAdapter::format`].
    pub fn open(
        dev: Arc<dyn BlockDevice>,
        tracks: &TrackLayout,
        opts: Options,
    ) -> crate::Result<Self> {
        let store = Store::open(dev.clone(), tracks, opts)?;
        Self::wrap(store, dev)
    }

    /// Opens a drive formatted by [`ZonedAdapter::format`] with the store options recorded
    /// at format ([`Store::open_stored`]).
    pub fn open_stored(dev: Arc<dyn BlockDevice>, tracks: &TrackLayout) -> crate::Result<Self> {
        let store = Store::open_stored(dev.clone(), tracks)?;
        Self::wrap(store, dev)
    }

    /// The zoned view's shape (zone size, conventional and log zones, staging area).
    pub fn zoned_options(&self) -> ZonedOptions {
        let f = self.store.format_options();
        ZonedOptions::of_format(&f).unwrap_or(ZonedOptions {
            zone_bytes: f.file_bytes,
            conventional_zones: self.conv,
            log_zones: f.safe_files,
            staging_bytes: f.staging_bytes,
        })
    }

    fn wrap(store: Store, dev: Arc<dyn BlockDevice>) -> crate::Result<Self> {
        let f = store.format_options();
        let layout = store.layout();
        let ss = layout.ss;
        let zone_sectors = f.file_bytes.div_ceil(ss);
        if zone_sectors == 0 || f.raw_bytes == 0 || f.safe_file_bytes != f.file_bytes {
            return Err(Error::Invalid(
                "the store was not formatted for the zoned view".into(),
            ));
        }
        let conv = (f.raw_bytes / ss / zone_sectors) as u32;
        // Thin provisioning: a zone is backed by the tracks its bytes take when they are
        // persisted, so zones are names, not space. A written data file holds at least one
        // track, so no more data zones can hold data at once than there are data tracks; the
        // safe slots add the logs. The layer above counts its free space with `zone_space`.
        let seq = u32::try_from(layout.data.len())
            .ok()
            .and_then(|d| d.checked_add(f.safe_files))
            .ok_or_else(|| Error::Invalid("too many data tracks for the zoned view".into()))?;
        if (layout.data_sectors / zone_sectors.max(1)) < 4 {
            return Err(Error::Invalid(format!(
                "the data tracks hold fewer than 4 SSTables of {zone_sectors} sectors"
            )));
        }
        let zones = conv + seq;
        let n = seq as usize;
        let mut state = State {
            uses: vec![Use::Empty; n],
            wp: vec![0; n],
            finished: vec![false; n],
            hints: vec![None; n],
            open: BTreeSet::new(),
            hint_ns: [0; 2],
        };
        for fi in store.files() {
            let z = fi.name;
            if z < conv || z >= zones {
                return Err(Error::corrupt(
                    "map",
                    format!(
                        "file {} names zone {z}, outside the sequential zones",
                        fi.id
                    ),
                ));
            }
            let i = (z - conv) as usize;
            if state.uses[i] != Use::Empty {
                return Err(Error::corrupt("map", format!("zone {z} holds two files")));
            }
            match fi.place {
                Place::Data { .. } => {
                    state.uses[i] = Use::File(fi.id);
                    state.wp[i] = fi.len.div_ceil(ss);
                }
                Place::Safe { .. } => {
                    // Its length as of the last sync (the whole slot on a version-1 map): no
                    // sector below it can have missed the media.
                    state.uses[i] = Use::Safe(fi.id);
                    state.wp[i] = (fi.len / ss).min(zone_sectors);
                }
            }
        }
        Ok(ZonedAdapter {
            store,
            dev,
            ss,
            zone_sectors,
            conv,
            zones,
            max_track: layout.max_track_sectors(),
            state: Mutex::new(state),
        })
    }

    /// The store underneath (statistics, files).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Device time spent persisting bands when the engine opened its next output band
    /// (inside no engine I/O call, so the engine's own timings miss it): for level-0 bands
    /// (memtable flushes) and for deeper ones (compaction outputs), in nanoseconds.
    pub fn hint_persist_ns(&self) -> (u64, u64) {
        let st = self.state.lock();
        (st.hint_ns[0], st.hint_ns[1])
    }

    fn seq_index(&self, zone: u32) -> Option<usize> {
        (zone >= self.conv && zone < self.zones).then(|| (zone - self.conv) as usize)
    }

    fn zone_struct(&self, st: &State, index: u32) -> Zone {
        let start = index as u64 * self.zone_sectors;
        match self.seq_index(index) {
            None => Zone {
                index,
                zone_type: ZoneType::Conventional,
                condition: ZoneCondition::NotWritePointer,
                start_lba: start,
                len_lba: self.zone_sectors,
                capacity_lba: self.zone_sectors,
                write_pointer_lba: start + self.zone_sectors,
                non_seq: false,
            },
            Some(i) => {
                let wp = if st.finished[i] {
                    self.zone_sectors
                } else {
                    st.wp[i]
                };
                let condition = if wp == 0 && st.uses[i] == Use::Empty {
                    ZoneCondition::Empty
                } else if wp >= self.zone_sectors {
                    ZoneCondition::Full
                } else {
                    ZoneCondition::ImplicitOpen
                };
                Zone {
                    index,
                    zone_type: ZoneType::SeqWriteRequired,
                    condition,
                    start_lba: start,
                    len_lba: self.zone_sectors,
                    capacity_lba: self.zone_sectors,
                    write_pointer_lba: start + wp,
                    non_seq: false,
                }
            }
        }
    }

    /// Persists every data zone written since its last persist except `keep`.
    fn persist_open(&self, st: &mut State, keep: Option<u32>) -> Result<(), DeviceError> {
        let open: Vec<u32> = st
            .open
            .iter()
            .copied()
            .filter(|&z| Some(z) != keep)
            .collect();
        for z in open {
            if let Some(i) = self.seq_index(z) {
                if let Use::File(id) = st.uses[i] {
                    let t0 = self.dev.now();
                    self.store.persist(id).map_err(dev_err)?;
                    let deep = !matches!(st.hints[i], Some(ZoneHint::Level(0)));
                    st.hint_ns[deep as usize] += self.dev.now() - t0;
                }
            }
            st.open.remove(&z);
        }
        Ok(())
    }

    fn timed<T>(
        &self,
        f: impl FnOnce() -> Result<T, DeviceError>,
    ) -> Result<(T, IoDone), DeviceError> {
        let start = self.dev.now();
        let r = f()?;
        Ok((
            r,
            IoDone {
                start,
                end: self.dev.now(),
            },
        ))
    }

    fn write_inner(&self, lba: u64, data: &[u8]) -> Result<(), DeviceError> {
        let n = transfer_sectors(
            lba,
            data.len(),
            self.ss,
            self.zones as u64 * self.zone_sectors,
        )?;
        let zone = (lba / self.zone_sectors) as u32;
        let off = lba - zone as u64 * self.zone_sectors;
        let Some(i) = self.seq_index(zone) else {
            if off + n > self.zone_sectors * self.conv as u64 {
                return Err(DeviceError::ZoneBoundary {
                    zone,
                    lba,
                    sectors: n,
                    zone_end: self.conv as u64 * self.zone_sectors,
                    write_pointer: lba,
                });
            }
            return self.store.raw_write(lba, data).map_err(dev_err);
        };
        let mut st = self.state.lock();
        if st.finished[i] || st.wp[i] >= self.zone_sectors {
            return Err(DeviceError::ZoneFull {
                zone,
                write_pointer: zone as u64 * self.zone_sectors + self.zone_sectors,
                lba,
            });
        }
        if off != st.wp[i] {
            return Err(DeviceError::UnalignedWrite {
                zone,
                write_pointer: zone as u64 * self.zone_sectors + st.wp[i],
                lba,
            });
        }
        if off + n > self.zone_sectors {
            return Err(DeviceError::ZoneBoundary {
                zone,
                lba,
                sectors: n,
                zone_end: (zone as u64 + 1) * self.zone_sectors,
                write_pointer: lba,
            });
        }
        let id = match st.uses[i] {
            Use::File(id) | Use::Safe(id) => id,
            Use::Empty => {
                let safe = match st.hints[i] {
                    Some(ZoneHint::Log) => match self.store.create(zone, NewFile::Safe) {
                        Ok(id) => Some(id),
                        // Every safe slot holds a log: this one goes to data tracks as a file
                        // without a level (hot: placed on top tracks by compaction-aware
                        // allocation), buffered and persisted at flushes like an SSTable.
                        Err(Error::NoSpace(_)) => None,
                        Err(e) => return Err(dev_err(e)),
                    },
                    _ => None,
                };
                match safe {
                    Some(id) => {
                        st.uses[i] = Use::Safe(id);
                        id
                    }
                    None => {
                        let level = match st.hints[i] {
                            Some(ZoneHint::Level(l)) => Some(l),
                            _ => None,
                        };
                        let id = self
                            .store
                            .create(zone, NewFile::Data { level })
                            .map_err(dev_err)?;
                        st.uses[i] = Use::File(id);
                        id
                    }
                }
            }
        };
        self.store.append(id, data).map_err(dev_err)?;
        st.wp[i] += n;
        if matches!(st.uses[i], Use::Safe(_)) {
            return Ok(());
        }
        st.open.insert(zone);
        if st.wp[i] >= self.zone_sectors {
            self.store.persist(id).map_err(dev_err)?;
            st.open.remove(&zone);
        }
        Ok(())
    }

    fn read_inner(&self, lba: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        let ss = self.ss;
        let n = transfer_sectors(lba, buf.len(), ss, self.zones as u64 * self.zone_sectors)?;
        let mut pos = 0u64;
        while pos < n {
            let l = lba + pos;
            let zone = (l / self.zone_sectors) as u32;
            let off = l - zone as u64 * self.zone_sectors;
            let k = (self.zone_sectors - off).min(n - pos);
            let out = &mut buf[(pos * ss) as usize..((pos + k) * ss) as usize];
            match self.seq_index(zone) {
                None => self.store.raw_read(l, out).map_err(dev_err)?,
                Some(i) => {
                    let (id, wp) = {
                        let st = self.state.lock();
                        (st.uses[i], st.wp[i])
                    };
                    out.fill(0);
                    if let Some(id) = id.id() {
                        let have = wp.saturating_sub(off).min(k);
                        if have > 0 {
                            let len = (have * ss) as usize;
                            let flen = self.store.file(id).map_err(dev_err)?.len;
                            let want = (len as u64).min(flen.saturating_sub(off * ss)) as usize;
                            if want > 0 {
                                self.store
                                    .read(id, off * ss, &mut out[..want])
                                    .map_err(dev_err)?;
                            }
                        }
                    }
                }
            }
            pos += k;
        }
        Ok(())
    }

    fn reset(&self, zone: u32) -> Result<(), DeviceError> {
        let Some(i) = self.seq_index(zone) else {
            return Err(DeviceError::InvalidZoneOp {
                zone,
                op: "reset",
                condition: "conventional".into(),
            });
        };
        let mut st = self.state.lock();
        if let Some(id) = st.uses[i].id() {
            self.store.delete(id).map_err(dev_err)?;
        }
        st.uses[i] = Use::Empty;
        st.wp[i] = 0;
        st.finished[i] = false;
        st.hints[i] = None;
        st.open.remove(&zone);
        Ok(())
    }
}

/// A dropped adapter records the store's counters in a map copy when they changed since the
/// last one ([`Store::checkpoint`]; errors are ignored: a drive that lost power or is read
/// only keeps the previous copy), so that the lifetime statistics survive an engine that
/// closes its device by dropping it.
impl Drop for ZonedAdapter {
    fn drop(&mut self) {
        let _ = self.store.checkpoint();
    }
}

impl BlockDevice for ZonedAdapter {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            model: "tegula kvimr (SSTable slots on interlaced media)".into(),
            kind: "kvimr".into(),
            sector_size: self.ss as u32,
            capacity_sectors: self.zones as u64 * self.zone_sectors,
            zone_sectors: self.zone_sectors,
            zone_capacity_sectors: self.zone_sectors,
            zones: self.zones,
            conventional_zones: self.conv,
            max_open_zones: 0,
            max_active_zones: 0,
            unrestricted_reads: true,
            stores_data: true,
            wall_time: false,
        }
    }

    fn read(&self, lba: u64, buf: &mut [u8]) -> tegula_device::Result<IoDone> {
        self.timed(|| self.read_inner(lba, buf)).map(|r| r.1)
    }

    fn write_with(
        &self,
        lba: u64,
        data: &[u8],
        flags: WriteFlags,
    ) -> tegula_device::Result<IoDone> {
        self.timed(|| {
            self.write_inner(lba, data)?;
            if flags.fua {
                self.store.sync().map_err(dev_err)?;
            }
            Ok(())
        })
        .map(|r| r.1)
    }

    fn flush(&self) -> tegula_device::Result<IoDone> {
        self.timed(|| {
            self.state.lock().open.clear();
            self.store.sync().map_err(dev_err)
        })
        .map(|r| r.1)
    }

    fn discard(&self, lba: u64, sectors: u64) -> tegula_device::Result<IoDone> {
        let _ = (lba, sectors);
        Err(DeviceError::Unsupported("discard on the kvimr zoned view"))
    }

    fn submit(&self, reqs: Vec<Request>) -> Vec<tegula_device::Result<Completion>> {
        tegula_device::api::submit_serially(self, reqs)
    }

    fn now(&self) -> Nanos {
        self.dev.now()
    }

    fn idle(&self, d: Nanos) {
        self.dev.idle(d)
    }
}

impl ZonedDevice for ZonedAdapter {
    fn report_zones(&self, filter: ZoneFilter) -> Vec<Zone> {
        let st = self.state.lock();
        (0..self.zones)
            .map(|i| self.zone_struct(&st, i))
            .filter(|z| filter.matches(z))
            .collect()
    }

    fn zone(&self, index: u32) -> tegula_device::Result<Zone> {
        if index >= self.zones {
            return Err(DeviceError::NoSuchZone {
                zone: index as u64,
                zones: self.zones,
            });
        }
        Ok(self.zone_struct(&self.state.lock(), index))
    }

    fn zone_action(&self, action: ZoneAction, target: ZoneTarget) -> tegula_device::Result<IoDone> {
        self.timed(|| {
            let targets: Vec<u32> = match target {
                ZoneTarget::One(i) => {
                    if i >= self.zones {
                        return Err(DeviceError::NoSuchZone {
                            zone: i as u64,
                            zones: self.zones,
                        });
                    }
                    vec![i]
                }
                ZoneTarget::All => (self.conv..self.zones).collect(),
            };
            for z in targets {
                match action {
                    ZoneAction::Reset => {
                        if self.seq_index(z).is_some() || matches!(target, ZoneTarget::One(_)) {
                            self.reset(z)?;
                        }
                    }
                    ZoneAction::Finish => {
                        if let Some(i) = self.seq_index(z) {
                            let mut st = self.state.lock();
                            if st.uses[i] != Use::Empty {
                                st.finished[i] = true;
                            }
                        }
                    }
                    ZoneAction::Open | ZoneAction::Close => {}
                }
            }
            Ok(())
        })
        .map(|r| r.1)
    }

    fn zone_space(&self) -> Option<ZoneSpace> {
        Some(ZoneSpace {
            free_sectors: self.store.room(),
            zone_overhead_sectors: self.max_track,
        })
    }

    fn hint_zone(&self, index: u32, hint: ZoneHint) {
        let Some(i) = self.seq_index(index) else {
            return;
        };
        let mut st = self.state.lock();
        st.hints[i] = Some(hint);
        if matches!(hint, ZoneHint::Level(_)) {
            // A new output band: the engine finished the bands it wrote before. A failure
            // poisons the store, so the engine's next write or flush reports it.
            let _ = self.persist_open(&mut st, Some(index));
        }
    }
}
