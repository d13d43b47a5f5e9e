//! Conventional zones emulated in sequential zones, for devices that have none (NVMe ZNS
//! namespaces): the first `log_zones` sequential zones of the device hold a log of the writes
//! to `conv_zones` virtual conventional zones presented at the start of the device, and the
//! remaining zones are passed through, renumbered after them. SMRDB and the file system keep
//! their small random-write metadata (superblock, manifest, checkpoints, metadata log) in
//! conventional zones; on a device without any they open it through this layer
//! ([`ConvZones::wrap_if_needed`]) and run unchanged.
//!
//! Each write to the virtual area is appended at the log's head zone as one record: a header
//! sector naming the virtual sectors (framed by the shared codec, `docs/formats/conv-zones.md`)
//! and the data sectors. A map in memory gives each virtual sector its newest copy; it is
//! rebuilt at open by reading the headers of every log zone (later sequence numbers win).
//! When the head fills, the next empty log zone becomes the head; when only one is left, the
//! full zone with the least live data is cleaned: its live sectors are copied to the head and
//! it is reset. With `log_zones = 2⌈S / (capacity − 1)⌉ + 3` for `S` virtual sectors, the
//! zone cleaned always holds at most half a zone of live data, so its copy (a header per run
//! included) fits the fresh head.
//!
//! Crash safety rests on the device's write pointers, as everywhere in tegula: a power cut
//! leaves every sector below a write pointer as written. A record whose data runs past its
//! zone's write pointer is a torn tail (its write never completed, so it was never
//! acknowledged): it is ignored, nothing is appended behind it, and the zone is cleaned at
//! the next write. A header below the write pointer that does not decode is corruption: the
//! device refuses to open rather than serve older data. Record data is served as stored (the
//! layers above checksum their own structures); [`ConvZones::verify_records`] scrubs it
//! against the checksums in the headers. The layer holds one zone active (its head): it presents the device's open
//! and active limits less one.

pub mod record;

use crate::api::{
    BlockDevice, DeviceInfo, WriteFlags, ZoneHint, ZoneSpace, ZoneTarget, ZonedDevice,
};
use crate::error::{DeviceError, Result};
use crate::media::{Completion, IoDone, Request};
use crate::units::Nanos;
use crate::zone::{Zone, ZoneAction, ZoneCondition, ZoneFilter, ZoneType};
use parking_lot::Mutex;
use record::{corrupt, Header, Layout};
use std::sync::Arc;

/// A virtual sector with no copy in the log (reads as zeros).
const NONE: u64 = u64::MAX;
/// Most data sectors of one record (a larger write becomes several records).
const MAX_RECORD_SECTORS: u64 = 1024;

/// Sequential zones the log of `conv_sectors` virtual sectors needs on zones of `capacity`
/// writable sectors (see the module text).
pub fn log_zones_for(conv_sectors: u64, capacity: u64) -> u32 {
    let per_zone = capacity.saturating_sub(1).max(1);
    (2 * conv_sectors.div_ceil(per_zone) + 3) as u32
}

struct State {
    /// Per virtual sector: the LBA of its newest copy on the device, or [`NONE`].
    map: Vec<u64>,
    /// Per virtual sector: the sequence number of the record holding that copy.
    map_seq: Vec<u64>,
    /// Per log zone: sectors holding the newest copy of a virtual sector.
    live: Vec<u64>,
    /// Log zones whose tail is torn: nothing is appended to them; cleaned at the next write.
    torn: Vec<u32>,
    /// The log zone records are appended to.
    head: Option<u32>,
    /// Sequence number of the next record.
    seq: u64,
}

/// A zoned device without conventional zones, presenting some (see the module text).
pub struct ConvZones {
    inner: Arc<dyn ZonedDevice>,
    inner_info: DeviceInfo,
    info: DeviceInfo,
    layout: Layout,
    /// Virtual sectors of the conventional area.
    conv_sectors: u64,
    st: Mutex<State>,
}

impl std::fmt::Debug for ConvZones {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConvZones")
            .field("layout", &self.layout)
            .finish()
    }
}

impl ConvZones {
    /// `dev` itself when it has conventional zones, else `dev` with one conventional zone
    /// emulated in its first sequential zones.
    pub fn wrap_if_needed(dev: Arc<dyn ZonedDevice>) -> Result<Arc<dyn ZonedDevice>> {
        let info = dev.info();
        if info.conventional_zones > 0 || info.zone_sectors == 0 {
            return Ok(dev);
        }
        Ok(Arc::new(ConvZones::open(dev, 1)?))
    }

    /// Presents `conv_zones` conventional zones on `inner` (which has none), replaying the log
    /// its first zones hold.
    pub fn open(inner: Arc<dyn ZonedDevice>, conv_zones: u32) -> Result<ConvZones> {
        let ii = inner.info();
        if ii.conventional_zones > 0 {
            return Err(DeviceError::Config(format!(
                "{} already has {} conventional zones",
                ii.model, ii.conventional_zones
            )));
        }
        let conv_sectors = u64::from(conv_zones) * ii.zone_sectors;
        let log_zones = log_zones_for(conv_sectors, ii.zone_capacity_sectors);
        if conv_zones == 0 || ii.zones < log_zones + 2 {
            return Err(DeviceError::Config(format!(
                "{} has {} zones: emulating {conv_zones} conventional zone(s) takes {log_zones} \
                 of them and leaves too few",
                ii.model, ii.zones
            )));
        }
        let layout = Layout {
            conv_zones,
            log_zones,
            zone_sectors: ii.zone_sectors,
            sector_size: ii.sector_size,
        };
        let zones = conv_zones + ii.zones - log_zones;
        let less = |n: u32| {
            if n == 0 {
                0
            } else {
                n.saturating_sub(1).max(1)
            }
        };
        let info = DeviceInfo {
            model: format!(
                "{} with {conv_zones} emulated conventional zone(s)",
                ii.model
            ),
            kind: ii.kind.clone(),
            capacity_sectors: u64::from(zones) * ii.zone_sectors,
            zones,
            conventional_zones: conv_zones,
            max_open_zones: less(ii.max_open_zones),
            max_active_zones: less(ii.max_active_zones),
            ..ii.clone()
        };
        let st = State {
            map: vec![NONE; conv_sectors as usize],
            map_seq: vec![0; conv_sectors as usize],
            live: vec![0; log_zones as usize],
            torn: Vec::new(),
            head: None,
            seq: 1,
        };
        let dev = ConvZones {
            inner,
            inner_info: ii,
            info,
            layout,
            conv_sectors,
            st: Mutex::new(st),
        };
        dev.replay()?;
        Ok(dev)
    }

    /// Where sector `lba` of this device lives on the device underneath: the newest copy of
    /// a sector of the conventional area (`None` if it was never written), or the same
    /// sector of a sequential zone.
    pub fn device_lba(&self, lba: u64) -> Option<u64> {
        if lba >= self.conv_sectors {
            return Some(lba + self.delta());
        }
        let p = *self.st.lock().map.get(lba as usize)?;
        (p != NONE).then_some(p)
    }

    /// Reads every record of the log and checks its data against the checksum in its header
    /// (a scrub; opening reads only the headers, and the layers above check their own data):
    /// the LBAs of records whose data is damaged, with what is wrong.
    pub fn verify_records(&self) -> Result<Vec<(u64, String)>> {
        let _st = self.st.lock();
        let mut bad = Vec::new();
        for z in 0..self.layout.log_zones {
            let zone = self.inner.zone(z)?;
            let end = zone.start_lba + zone.written_sectors();
            let mut pos = zone.start_lba;
            while pos < end {
                let mut hb = vec![0u8; self.ss()];
                self.inner.read(pos, &mut hb)?;
                let Ok(h) = Header::decode(&hb) else {
                    bad.push((pos, "the header does not decode".to_string()));
                    break;
                };
                let data_end = pos + 1 + u64::from(h.count);
                if data_end > end {
                    break;
                }
                let mut data = vec![0u8; h.count as usize * self.ss()];
                if h.count > 0 {
                    self.inner.read(pos + 1, &mut data)?;
                }
                if tegula_codec::checksum::crc32c(&data) != h.data_crc {
                    bad.push((
                        pos,
                        format!("the data of {} sectors fails its checksum", h.count),
                    ));
                }
                pos = data_end;
            }
        }
        Ok(bad)
    }

    /// The device underneath.
    pub fn inner(&self) -> &Arc<dyn ZonedDevice> {
        &self.inner
    }

    /// Sectors between a virtual sequential zone and the device's zone of the same data.
    fn delta(&self) -> u64 {
        u64::from(self.layout.log_zones - self.layout.conv_zones) * self.layout.zone_sectors
    }

    fn ss(&self) -> usize {
        self.layout.sector_size as usize
    }

    fn log_zone_of(&self, lba: u64) -> usize {
        (lba / self.layout.zone_sectors) as usize
    }

    /// Rebuilds the map from the records of every log zone.
    fn replay(&self) -> Result<()> {
        let mut st = self.st.lock();
        let mut newest: Option<(u64, u32)> = None;
        for z in 0..self.layout.log_zones {
            let zone = self.inner.zone(z)?;
            if zone.condition == ZoneCondition::Empty {
                continue;
            }
            if !zone.zone_type.is_sequential()
                || matches!(
                    zone.condition,
                    ZoneCondition::ReadOnly | ZoneCondition::Offline
                )
            {
                return Err(corrupt(
                    zone.start_lba,
                    format!(
                        "log zone {z} is {} {}",
                        zone.zone_type.name(),
                        zone.condition
                    ),
                ));
            }
            let end = zone.start_lba + zone.written_sectors();
            let mut pos = zone.start_lba;
            while pos < end {
                let mut hb = vec![0u8; self.ss()];
                self.inner.read(pos, &mut hb)?;
                let h = Header::decode(&hb).map_err(|why| {
                    corrupt(
                        pos,
                        format!("a header below the write pointer ({end}) does not decode: {why}"),
                    )
                })?;
                record::check(&h, &self.layout, self.conv_sectors, pos)?;
                let data_end = pos + 1 + u64::from(h.count);
                if data_end > end {
                    // Torn: its write never completed.
                    st.torn.push(z);
                    break;
                }
                for i in 0..u64::from(h.count) {
                    let v = (h.vlba + i) as usize;
                    if h.seq > st.map_seq[v] {
                        st.map_seq[v] = h.seq;
                        st.map[v] = pos + 1 + i;
                    }
                }
                st.seq = st.seq.max(h.seq + 1);
                if newest.is_none_or(|(s, _)| h.seq > s) {
                    newest = Some((h.seq, z));
                }
                pos = data_end;
            }
        }
        let mut live = vec![0u64; self.layout.log_zones as usize];
        for &p in st.map.iter().filter(|&&p| p != NONE) {
            live[self.log_zone_of(p)] += 1;
        }
        st.live = live;
        // Appends continue in the zone of the newest record, if it has room and is whole.
        if let Some((_, z)) = newest {
            let zone = self.inner.zone(z)?;
            if zone.remaining_sectors() >= 2 && !st.torn.contains(&z) {
                st.head = Some(z);
            }
        }
        Ok(())
    }

    /// Appends one record of `data` (whole sectors) for virtual sector `vlba` at the head,
    /// which has room for it.
    fn append(&self, st: &mut State, vlba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
        let head = st
            .head
            .ok_or_else(|| corrupt(0, "no head zone to append to"))?;
        let zone = self.inner.zone(head)?;
        let at = zone.write_pointer_lba;
        let count = (data.len() / self.ss()) as u32;
        let h = Header {
            kind: record::KIND_WRITE,
            seq: st.seq,
            layout: self.layout,
            vlba,
            count,
            data_crc: tegula_codec::checksum::crc32c(data),
        };
        let mut buf = h.encode();
        buf.extend_from_slice(data);
        let done = self.inner.write_with(at, &buf, flags)?;
        st.seq += 1;
        for i in 0..u64::from(count) {
            let v = (vlba + i) as usize;
            let old = st.map[v];
            if old != NONE {
                let oz = self.log_zone_of(old);
                st.live[oz] = st.live[oz].saturating_sub(1);
            }
            st.map[v] = at + 1 + i;
            st.map_seq[v] = h.seq;
            st.live[head as usize] += 1;
        }
        Ok(done)
    }

    fn empty_log_zones(&self, st: &State) -> Result<Vec<u32>> {
        let mut v = Vec::new();
        for z in 0..self.layout.log_zones {
            if Some(z) != st.head && self.inner.zone(z)?.condition == ZoneCondition::Empty {
                v.push(z);
            }
        }
        Ok(v)
    }

    /// Makes sure the head has room for a record of at least one data sector, moving to an
    /// empty log zone (and cleaning one when it is the last) as needed.
    fn ensure_head(&self, st: &mut State) -> Result<()> {
        if let Some(h) = st.head {
            let z = self.inner.zone(h)?;
            if z.remaining_sectors() >= 2 {
                return Ok(());
            }
            if z.remaining_sectors() == 1 {
                // Too little room for a record: a pad header fills it (the zone becomes full
                // and frees its active resource; a finish would leave a sector unwritten below
                // the write pointer, which reads as a damaged header).
                let pad = Header {
                    kind: record::KIND_PAD,
                    seq: st.seq,
                    layout: self.layout,
                    vlba: 0,
                    count: 0,
                    data_crc: 0,
                };
                self.inner.write(z.write_pointer_lba, &pad.encode())?;
                st.seq += 1;
            }
            st.head = None;
        }
        let empty = self.empty_log_zones(st)?;
        let Some(&next) = empty.first() else {
            return Err(DeviceError::NoSpace(
                "the conventional-zone log has no empty zone left".into(),
            ));
        };
        st.head = Some(next);
        if empty.len() == 1 {
            // The last empty zone became the head: clean one zone into it.
            self.clean_one(st)?;
        }
        Ok(())
    }

    /// Cleans the log zone with the least live data (torn zones first): copies its live
    /// sectors to the head and resets it.
    fn clean_one(&self, st: &mut State) -> Result<()> {
        let victim = if let Some(t) = st.torn.first().copied() {
            t
        } else {
            let mut best: Option<(u64, u32)> = None;
            for z in 0..self.layout.log_zones {
                if Some(z) == st.head || self.inner.zone(z)?.condition == ZoneCondition::Empty {
                    continue;
                }
                let l = st.live[z as usize];
                if best.is_none_or(|(b, _)| l < b) {
                    best = Some((l, z));
                }
            }
            match best {
                Some((_, z)) => z,
                None => return Ok(()),
            }
        };
        self.copy_out(st, victim)?;
        self.inner.reset_zone(victim)?;
        st.torn.retain(|&t| t != victim);
        st.live[victim as usize] = 0;
        Ok(())
    }

    /// Copies the live sectors of log zone `victim` to the head, as runs of consecutive
    /// virtual sectors whose copies are consecutive.
    fn copy_out(&self, st: &mut State, victim: u32) -> Result<()> {
        let zs = self.layout.zone_sectors;
        let lo = u64::from(victim) * zs;
        let mut live: Vec<(u64, u64)> = st
            .map
            .iter()
            .enumerate()
            .filter(|(_, &p)| p != NONE && p >= lo && p < lo + zs)
            .map(|(v, &p)| (v as u64, p))
            .collect();
        live.sort_unstable();
        let mut i = 0;
        while i < live.len() {
            let (v0, p0) = live[i];
            let mut n = 1;
            while i + (n as usize) < live.len()
                && n < MAX_RECORD_SECTORS
                && live[i + n as usize] == (v0 + n, p0 + n)
            {
                n += 1;
            }
            let head = st
                .head
                .ok_or_else(|| corrupt(lo, "no head zone to clean into"))?;
            let room = self.inner.zone(head)?.remaining_sectors().saturating_sub(1);
            if room == 0 {
                return Err(DeviceError::NoSpace(
                    "the conventional-zone log's head filled while cleaning".into(),
                ));
            }
            let n = n.min(room);
            let mut data = vec![0u8; n as usize * self.ss()];
            self.inner.read(p0, &mut data)?;
            self.append(st, v0, &data, WriteFlags::default())?;
            i += n as usize;
        }
        Ok(())
    }

    /// Writes whole sectors at virtual sector `vlba` of the conventional area.
    fn write_conv(&self, vlba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
        let mut st = self.st.lock();
        let ss = self.ss();
        let mut done: Option<IoDone> = None;
        if !st.torn.is_empty() {
            if st.head.is_none() {
                self.ensure_head(&mut st)?;
            }
            while !st.torn.is_empty() {
                self.clean_one(&mut st)?;
            }
        }
        let mut off = 0;
        while off < data.len() {
            self.ensure_head(&mut st)?;
            let head = st.head.ok_or_else(|| corrupt(0, "no head zone"))?;
            let room = self.inner.zone(head)?.remaining_sectors() - 1;
            let n = ((data.len() - off) / ss)
                .min(room as usize)
                .min(MAX_RECORD_SECTORS as usize);
            let v = vlba + (off / ss) as u64;
            let d = self.append(&mut st, v, &data[off..off + n * ss], flags)?;
            done = Some(match done {
                None => d,
                Some(p) => IoDone {
                    start: p.start,
                    end: d.end,
                },
            });
            off += n * ss;
        }
        done.ok_or(DeviceError::BadLength {
            len: 0,
            sector_size: self.layout.sector_size,
        })
    }

    /// Reads whole sectors at virtual sector `vlba` of the conventional area.
    fn read_conv(&self, vlba: u64, buf: &mut [u8]) -> Result<IoDone> {
        let st = self.st.lock();
        let ss = self.ss();
        let n = buf.len() / ss;
        let now = self.inner.now();
        let mut done = IoDone {
            start: now,
            end: now,
        };
        let mut i = 0;
        while i < n {
            let p0 = st.map[vlba as usize + i];
            let mut k = 1;
            while i + k < n
                && ((p0 == NONE && st.map[vlba as usize + i + k] == NONE)
                    || (p0 != NONE && st.map[vlba as usize + i + k] == p0 + k as u64))
            {
                k += 1;
            }
            let out = &mut buf[i * ss..(i + k) * ss];
            if p0 == NONE {
                out.fill(0);
            } else {
                let d = self.inner.read(p0, out)?;
                done.end = done.end.max(d.end);
            }
            i += k;
        }
        Ok(done)
    }

    /// The virtual zone `v` of the conventional area.
    fn conv_zone(&self, v: u32) -> Zone {
        let zs = self.layout.zone_sectors;
        let start = u64::from(v) * zs;
        Zone {
            index: v,
            zone_type: ZoneType::Conventional,
            condition: ZoneCondition::NotWritePointer,
            start_lba: start,
            len_lba: zs,
            capacity_lba: zs,
            write_pointer_lba: start + zs,
            non_seq: false,
        }
    }

    /// A device zone past the log as the virtual zone it is.
    fn to_virtual(&self, mut z: Zone) -> Zone {
        let d = self.delta();
        z.index = z.index - self.layout.log_zones + self.layout.conv_zones;
        z.start_lba -= d;
        z.write_pointer_lba -= d;
        z
    }

    /// Applies this device's open and active limits (the device's less the log's head) before
    /// inner zone `i` is opened, implicitly by a write or explicitly: the device's own limits
    /// would let the host use the log's resource.
    fn make_room(&self, i: u32) -> Result<()> {
        let z = self.inner.zone(i)?;
        if z.condition.is_open() || !z.zone_type.is_sequential() {
            return Ok(());
        }
        let (max_open, max_active) = (self.info.max_open_zones, self.info.max_active_zones);
        if max_open == 0 && max_active == 0 {
            return Ok(());
        }
        let k = self.layout.log_zones;
        let zones: Vec<Zone> = self
            .inner
            .report_zones(ZoneFilter::All)
            .into_iter()
            .filter(|z| z.index >= k)
            .collect();
        let vzone = i - k + self.layout.conv_zones;
        let active = zones.iter().filter(|z| z.is_active()).count() as u32;
        if z.condition == ZoneCondition::Empty && max_active > 0 && active >= max_active {
            return Err(DeviceError::TooManyActiveZones {
                zone: vzone,
                active,
                max_active,
            });
        }
        let open = zones.iter().filter(|z| z.condition.is_open()).count() as u32;
        if max_open > 0 && open >= max_open {
            match zones
                .iter()
                .find(|z| z.condition == ZoneCondition::ImplicitOpen)
            {
                Some(victim) => {
                    self.inner.close_zone(victim.index)?;
                }
                None => {
                    return Err(DeviceError::TooManyOpenZones {
                        zone: vzone,
                        open,
                        max_open,
                    })
                }
            }
        }
        Ok(())
    }

    /// The device zone of virtual sequential zone `v`.
    fn inner_zone(&self, v: u32) -> Result<u32> {
        if v >= self.info.zones {
            return Err(DeviceError::NoSuchZone {
                zone: u64::from(v),
                zones: self.info.zones,
            });
        }
        Ok(v - self.layout.conv_zones + self.layout.log_zones)
    }

    /// Maps an error of the device about its zone/LBA back to virtual numbers.
    fn virtual_err(&self, e: DeviceError) -> DeviceError {
        let k = self.layout.log_zones;
        let c = self.layout.conv_zones;
        let d = self.delta();
        let z = |i: u32| i.saturating_sub(k) + c;
        match e {
            DeviceError::UnalignedWrite {
                zone,
                write_pointer,
                lba,
            } => DeviceError::UnalignedWrite {
                zone: z(zone),
                write_pointer: write_pointer - d,
                lba: lba - d,
            },
            DeviceError::ZoneBoundary {
                zone,
                lba,
                sectors,
                zone_end,
                write_pointer,
            } => DeviceError::ZoneBoundary {
                zone: z(zone),
                lba: lba - d,
                sectors,
                zone_end: zone_end - d,
                write_pointer: write_pointer - d,
            },
            DeviceError::ZoneFull {
                zone,
                write_pointer,
                lba,
            } => DeviceError::ZoneFull {
                zone: z(zone),
                write_pointer: write_pointer - d,
                lba: lba - d,
            },
            DeviceError::ReadPastWritePointer {
                zone,
                write_pointer,
                lba,
                sectors,
            } => DeviceError::ReadPastWritePointer {
                zone: z(zone),
                write_pointer: write_pointer - d,
                lba: lba - d,
                sectors,
            },
            DeviceError::ZoneReadOnly { zone } => DeviceError::ZoneReadOnly { zone: z(zone) },
            DeviceError::ZoneOffline { zone } => DeviceError::ZoneOffline { zone: z(zone) },
            DeviceError::TooManyOpenZones {
                zone,
                open,
                max_open,
            } => DeviceError::TooManyOpenZones {
                zone: z(zone),
                open: open.saturating_sub(1),
                max_open: max_open.saturating_sub(1),
            },
            DeviceError::TooManyActiveZones {
                zone,
                active,
                max_active,
            } => DeviceError::TooManyActiveZones {
                zone: z(zone),
                active: active.saturating_sub(1),
                max_active: max_active.saturating_sub(1),
            },
            DeviceError::InvalidZoneOp {
                zone,
                op,
                condition,
            } => DeviceError::InvalidZoneOp {
                zone: z(zone),
                op,
                condition,
            },
            DeviceError::OutOfRange { lba, sectors, .. } => DeviceError::OutOfRange {
                lba: lba.saturating_sub(d),
                sectors,
                capacity: self.info.capacity_sectors,
            },
            other => other,
        }
    }
}

impl BlockDevice for ConvZones {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn read(&self, lba: u64, buf: &mut [u8]) -> Result<IoDone> {
        let n = self.info.transfer_sectors(lba, buf.len())?;
        let end = lba + n;
        if end <= self.conv_sectors {
            return self.read_conv(lba, buf);
        }
        if lba >= self.conv_sectors {
            return self
                .inner
                .read(lba + self.delta(), buf)
                .map_err(|e| self.virtual_err(e));
        }
        // Across the boundary: the two parts separately.
        let split = ((self.conv_sectors - lba) as usize) * self.ss();
        let (a, b) = buf.split_at_mut(split);
        let d1 = self.read_conv(lba, a)?;
        let d2 = self
            .inner
            .read(self.conv_sectors + self.delta(), b)
            .map_err(|e| self.virtual_err(e))?;
        Ok(IoDone {
            start: d1.start,
            end: d2.end.max(d1.end),
        })
    }

    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
        let n = self.info.transfer_sectors(lba, data.len())?;
        if lba >= self.conv_sectors {
            let i = self.log_zone_of(lba + self.delta()) as u32;
            if i < self.inner_info.zones {
                self.make_room(i)?;
            }
            return self
                .inner
                .write_with(lba + self.delta(), data, flags)
                .map_err(|e| self.virtual_err(e));
        }
        if lba + n > self.conv_sectors {
            let zone = (lba / self.layout.zone_sectors) as u32;
            return Err(DeviceError::ZoneBoundary {
                zone,
                lba,
                sectors: n,
                zone_end: self.conv_sectors,
                write_pointer: u64::from(zone + 1) * self.layout.zone_sectors,
            });
        }
        self.write_conv(lba, data, flags)
    }

    fn flush(&self) -> Result<IoDone> {
        self.inner.flush()
    }

    fn discard(&self, lba: u64, sectors: u64) -> Result<IoDone> {
        self.info.check_sectors(lba, sectors)?;
        if lba >= self.conv_sectors {
            return self.inner.discard(lba + self.delta(), sectors);
        }
        let now = self.inner.now();
        Ok(IoDone {
            start: now,
            end: now,
        })
    }

    fn submit(&self, reqs: Vec<Request>) -> Vec<Result<Completion>> {
        crate::api::submit_serially(self, reqs)
    }

    fn now(&self) -> Nanos {
        self.inner.now()
    }

    fn idle(&self, d: Nanos) {
        self.inner.idle(d)
    }
}

impl ZonedDevice for ConvZones {
    fn report_zones(&self, filter: ZoneFilter) -> Vec<Zone> {
        let conv = (0..self.layout.conv_zones).map(|v| self.conv_zone(v));
        let k = self.layout.log_zones;
        let seq = self
            .inner
            .report_zones(ZoneFilter::All)
            .into_iter()
            .filter(|z| z.index >= k)
            .map(|z| self.to_virtual(z));
        conv.chain(seq).filter(|z| filter.matches(z)).collect()
    }

    fn zone(&self, index: u32) -> Result<Zone> {
        if index < self.layout.conv_zones {
            return Ok(self.conv_zone(index));
        }
        let i = self.inner_zone(index)?;
        Ok(self.to_virtual(self.inner.zone(i)?))
    }

    fn zone_action(&self, action: ZoneAction, target: ZoneTarget) -> Result<IoDone> {
        match target {
            ZoneTarget::One(v) if v < self.layout.conv_zones => Err(DeviceError::InvalidZoneOp {
                zone: v,
                op: action.name(),
                condition: "conventional".into(),
            }),
            ZoneTarget::One(v) => {
                let i = self.inner_zone(v)?;
                if action == ZoneAction::Open {
                    let z = self.inner.zone(i)?;
                    if !matches!(
                        z.condition,
                        ZoneCondition::Full | ZoneCondition::ReadOnly | ZoneCondition::Offline
                    ) {
                        self.make_room(i)?;
                    }
                }
                self.inner
                    .zone_action(action, ZoneTarget::One(i))
                    .map_err(|e| self.virtual_err(e))
            }
            ZoneTarget::All => {
                // Never the log's zones: each virtual zone the action applies to.
                let now = self.inner.now();
                let mut done = IoDone {
                    start: now,
                    end: now,
                };
                for z in self.report_zones(ZoneFilter::All) {
                    if action.applies_to_all(&z) {
                        let d = self.zone_action(action, ZoneTarget::One(z.index))?;
                        done.end = done.end.max(d.end);
                    }
                }
                Ok(done)
            }
        }
    }

    fn can_rewind(&self) -> bool {
        self.inner.can_rewind()
    }

    fn rewind_write_pointer(&self, index: u32, lba: u64) -> Result<IoDone> {
        if index < self.layout.conv_zones {
            return Err(DeviceError::Unsupported(
                "setting a conventional zone's write pointer",
            ));
        }
        let i = self.inner_zone(index)?;
        self.inner
            .rewind_write_pointer(i, lba + self.delta())
            .map_err(|e| self.virtual_err(e))
    }

    fn hint_zone(&self, index: u32, hint: ZoneHint) {
        if let Ok(i) = self.inner_zone(index) {
            if index >= self.layout.conv_zones {
                self.inner.hint_zone(i, hint);
            }
        }
    }

    fn zone_space(&self) -> Option<ZoneSpace> {
        self.inner.zone_space()
    }

    fn flush_zones(&self, zones: &[u32]) -> Result<IoDone> {
        if zones.iter().any(|&z| z < self.layout.conv_zones) {
            return self.inner.flush();
        }
        let inner: Vec<u32> = zones
            .iter()
            .filter_map(|&z| self.inner_zone(z).ok())
            .collect();
        self.inner.flush_zones(&inner)
    }

    fn durable_only_when_flushed(&self) -> bool {
        self.inner.durable_only_when_flushed()
    }
}

impl ConvZones {
    /// The device underneath's facts (for reports that show both).
    pub fn inner_info(&self) -> &DeviceInfo {
        &self.inner_info
    }
}
