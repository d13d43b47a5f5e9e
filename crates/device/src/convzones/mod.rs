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

mod log;
pub mod record;
mod zones;

use crate::api::{
    BlockDevice, DeviceInfo, WriteFlags, ZoneHint, ZoneSpace, ZoneTarget, ZonedDevice,
};
use crate::error::{DeviceError, Result};
use crate::media::{Completion, IoDone, Request};
use crate::units::Nanos;
use crate::zone::{Zone, ZoneAction, ZoneCondition, ZoneFilter, ZoneType};
use parking_lot::Mutex;
use record::{corrupt, undecodable, Header, Layout};
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
