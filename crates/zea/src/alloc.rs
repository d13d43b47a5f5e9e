//! One allocator instance per zone: put at the write pointer, get by exact (LBA, length),
//! and recovery of the zone's tail at open.

use crate::error::{Result, ZeaError};
use crate::meta::{append_with_crcs, chunk_bytes_for, ExtentMeta};
use crate::options::{Durability, Options};
use std::collections::VecDeque;
use std::sync::Arc;
use tegula_device::{DeviceError, WriteFlags, ZonedDevice};

/// Where `put` placed an extent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    /// First LBA of the data (what `get` takes).
    pub lba: u64,
    /// Data length in bytes.
    pub len: u64,
    /// LBA of the metadata block.
    pub meta_lba: u64,
    /// Sequence number within the zone.
    pub seq: u64,
}

/// What `open` found at the zone's tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recovery {
    /// Sectors between the last valid metadata block and the write pointer (a torn extent
    /// from a crash); they stay dead until the zone is reset.
    pub torn_sectors: u64,
}

/// The extent allocator of one sequential zone.
pub struct Zea {
    dev: Arc<dyn ZonedDevice>,
    zone: u32,
    start: u64,
    end: u64,
    wp: u64,
    sector: u64,
    opts: Options,
    next_seq: u64,
    /// Metadata LBAs of the newest extents, newest first (at most `back_pointers`).
    recent: VecDeque<u64>,
    broken: bool,
    recovery: Recovery,
}

impl std::fmt::Debug for Zea {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zea")
            .field("zone", &self.zone)
            .field("wp", &self.wp)
            .field("next_seq", &self.next_seq)
            .finish()
    }
}

impl Zea {
    /// Opens the allocator of sequential zone `zone`, recovering its state from the media:
    /// the last valid metadata block gives the next sequence number and back pointers; a torn
    /// extent after it (from a crash) is detected and skipped.
    pub fn open(dev: Arc<dyn ZonedDevice>, zone: u32, opts: Options) -> Result<Self> {
        let z = dev
            .zone(zone)
            .map_err(|source| ZeaError::Device { zone, source })?;
        if !z.zone_type.is_sequential() {
            return Err(ZeaError::BadZone {
                zone,
                why: "conventional zone".into(),
            });
        }
        let sector = dev.info().sector_size as u64;
        if chunk_bytes_for(sector, sector, opts.back_pointers as usize).is_none() {
            return Err(ZeaError::Invalid(format!(
                "{} back pointers do not fit in a {sector}-byte metadata block",
                opts.back_pointers
            )));
        }
        let mut a = Zea {
            dev,
            zone,
            start: z.start_lba,
            // A zone takes data up to its capacity (below its size on ZNS); a full zone
            // reports its write pointer at the zone end.
            end: z.capacity_end_lba(),
            wp: z.start_lba + z.written_sectors(),
            sector,
            opts,
            next_seq: 0,
            recent: VecDeque::new(),
            broken: false,
            recovery: Recovery::default(),
        };
        if let Some(last) = a.find_last()? {
            a.next_seq = last.seq + 1;
            a.recent.push_back(last.meta_lba);
            a.recent.extend(last.back.iter().copied());
            a.recent.truncate(a.opts.back_pointers as usize);
            a.recovery.torn_sectors = a.wp - last.end_lba();
        } else {
            a.recovery.torn_sectors = a.wp - a.start;
        }
        Ok(a)
    }

    /// Zone index.
    pub fn zone(&self) -> u32 {
        self.zone
    }

    /// First LBA of the zone.
    pub fn start_lba(&self) -> u64 {
        self.start
    }

    /// LBA after the zone.
    pub fn end_lba(&self) -> u64 {
        self.end
    }

    /// Current write pointer.
    pub fn write_pointer(&self) -> u64 {
        self.wp
    }

    /// Sector size in bytes.
    pub fn sector_size(&self) -> u64 {
        self.sector
    }

    /// Sectors left in the zone.
    pub fn free_sectors(&self) -> u64 {
        self.end - self.wp
    }

    /// The largest extent (bytes) that still fits with its metadata.
    pub fn max_put(&self) -> u64 {
        self.free_sectors().saturating_sub(1) * self.sector
    }

    /// What open found at the tail.
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Metadata LBA of the newest valid extent, if any.
    pub fn last_meta(&self) -> Option<u64> {
        self.recent.front().copied()
    }

    fn dev_err(&self, source: DeviceError) -> ZeaError {
        ZeaError::Device {
            zone: self.zone,
            source,
        }
    }

    /// Appends `data` as one extent with logical address `zba`; see [`Zea::put_tagged`].
    pub fn put(&mut self, zba: u64, data: &[u8]) -> Result<Placed> {
        self.put_tagged(zba, 0, data)
    }

    /// Appends `data` at the write pointer followed by its metadata block (ZBA, tag, length,
    /// checksums, sequence number, back pointers) and returns where it went. Returns once
    /// data and metadata are durable, or with [`Durability::Caller`] once they are written.
    pub fn put_tagged(&mut self, zba: u64, tag: u64, data: &[u8]) -> Result<Placed> {
        self.put_via(zba, tag, data, Vec::new()).map(|(p, _)| p)
    }

    /// [`Zea::put_tagged`] through `buf`, a buffer the caller lets go: the extent (data,
    /// padding, metadata block) is assembled in it and handed to the device, which may keep
    /// it ([`tegula_device::BlockDevice::write_owned`]: an emulated drive's write cache holds
    /// it as the cached data, no copy). Returns where the extent went and a buffer for the
    /// next put (the same one, or a spare of the device's); a stream of puts through the
    /// buffers they get back reuses a few buffers instead of faulting in new memory for each.
    pub fn put_via(
        &mut self,
        zba: u64,
        tag: u64,
        data: &[u8],
        mut buf: Vec<u8>,
    ) -> Result<(Placed, Vec<u8>)> {
        if self.broken {
            return Err(ZeaError::Broken { zone: self.zone });
        }
        if data.is_empty() {
            return Err(ZeaError::Invalid("empty extent".into()));
        }
        let ss = self.sector;
        let len = data.len() as u64;
        let sectors = len.div_ceil(ss);
        let need = sectors + 1;
        if need > self.free_sectors() {
            return Err(ZeaError::NoSpace {
                zone: self.zone,
                need,
                free: self.free_sectors(),
            });
        }
        let back: Vec<u64> = self.recent.iter().copied().collect();
        let cb = chunk_bytes_for(len, ss, back.len())
            .ok_or_else(|| ZeaError::Invalid(format!("extent of {len} bytes is too large")))?;
        let lba = self.wp;
        buf.clear();
        buf.reserve_exact((need * ss) as usize);
        let (chunk_crcs, data_crc) = append_with_crcs(&mut buf, data, cb);
        let meta = ExtentMeta {
            seq: self.next_seq,
            zba,
            tag,
            data_lba: lba,
            data_len: len,
            meta_lba: lba + sectors,
            data_crc,
            chunk_bytes: cb as u32,
            chunk_crcs,
            back,
        };
        let block = meta
            .encode(ss as usize)
            .ok_or_else(|| ZeaError::Invalid("metadata does not fit a sector".into()))?;
        buf.resize((sectors * ss) as usize, 0);
        buf.extend_from_slice(&block);
        let flags = WriteFlags {
            fua: self.opts.durability == Durability::Fua,
        };
        let res = self.dev.write_owned(lba, buf, flags).and_then(|(_, back)| {
            if self.opts.durability == Durability::Flush {
                self.dev.flush()?;
            }
            Ok(back)
        });
        let back = match res {
            Ok(back) => back,
            Err(e) => {
                self.broken = true;
                return Err(self.dev_err(e));
            }
        };
        self.wp = lba + need;
        self.next_seq += 1;
        self.recent.push_front(meta.meta_lba);
        self.recent.truncate(self.opts.back_pointers as usize);
        let placed = Placed {
            lba,
            len,
            meta_lba: meta.meta_lba,
            seq: meta.seq,
        };
        Ok((placed, back))
    }

    fn check_range(&self, lba: u64, len: u64) -> Result<u64> {
        let not = |why: &str| ZeaError::NotAnExtent {
            zone: self.zone,
            lba,
            len,
            why: why.into(),
        };
        if len == 0 {
            return Err(not("zero length"));
        }
        let sectors = len.div_ceil(self.sector);
        let meta_lba = lba
            .checked_add(sectors)
            .ok_or_else(|| not("range overflows"))?;
        if lba < self.start || meta_lba >= self.wp {
            return Err(not("outside the written part of the zone"));
        }
        Ok(meta_lba)
    }

    fn read_sectors(&self, lba: u64, sectors: u64) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; (sectors * self.sector) as usize];
        self.dev.read(lba, &mut buf).map_err(|e| self.dev_err(e))?;
        Ok(buf)
    }

    /// Reads and checks the metadata block of the extent `(lba, len)`.
    pub fn read_meta(&self, lba: u64, len: u64) -> Result<ExtentMeta> {
        let meta_lba = self.check_range(lba, len)?;
        let b = self.read_sectors(meta_lba, 1)?;
        let m = self.decode_at(&b, meta_lba)?;
        self.expect_extent(&m, lba, len)?;
        Ok(m)
    }

    /// Reads the metadata block at `meta_lba`.
    pub fn meta_at(&self, meta_lba: u64) -> Result<ExtentMeta> {
        if meta_lba < self.start || meta_lba >= self.wp {
            return Err(ZeaError::Invalid(format!(
                "zone {}: metadata LBA {meta_lba} outside the written part",
                self.zone
            )));
        }
        let b = self.read_sectors(meta_lba, 1)?;
        self.decode_at(&b, meta_lba)
    }

    fn decode_at(&self, b: &[u8], meta_lba: u64) -> Result<ExtentMeta> {
        ExtentMeta::decode(b, meta_lba, self.sector).map_err(|source| ZeaError::BadMeta {
            zone: self.zone,
            lba: meta_lba,
            source,
        })
    }

    fn expect_extent(&self, m: &ExtentMeta, lba: u64, len: u64) -> Result<()> {
        if m.data_lba != lba || m.data_len != len {
            return Err(ZeaError::NotAnExtent {
                zone: self.zone,
                lba,
                len,
                why: format!(
                    "the metadata there describes LBA {} length {}",
                    m.data_lba, m.data_len
                ),
            });
        }
        Ok(())
    }

    fn checksum_err(&self, lba: u64) -> ZeaError {
        ZeaError::Checksum {
            zone: self.zone,
            lba,
            offset: (lba - self.start) * self.sector,
        }
    }

    /// Returns the extent `(lba, len)` if it is exactly an extent ZEA placed, after checking
    /// its data checksum. Data and metadata are read with one command.
    pub fn get(&self, lba: u64, len: u64) -> Result<Vec<u8>> {
        let meta_lba = self.check_range(lba, len)?;
        let mut buf = self.read_sectors(lba, meta_lba - lba + 1)?;
        let mb = buf.split_off(((meta_lba - lba) * self.sector) as usize);
        let m = self.decode_at(&mb, meta_lba)?;
        self.expect_extent(&m, lba, len)?;
        buf.truncate(len as usize);
        if tegula_codec::checksum::crc32c(&buf) != m.data_crc {
            return Err(self.checksum_err(lba));
        }
        Ok(buf)
    }

    /// Reads bytes `[off, off + n)` of the extent described by `m` (from [`Zea::read_meta`]),
    /// reading and checking only the chunks that cover them.
    pub fn read_range(&self, m: &ExtentMeta, off: u64, n: u64) -> Result<Vec<u8>> {
        let end = off
            .checked_add(n)
            .filter(|&e| e <= m.data_len && n > 0)
            .ok_or_else(|| {
                ZeaError::Invalid(format!(
                    "range {off}+{n} outside extent of {} bytes",
                    m.data_len
                ))
            })?;
        if m.meta_lba >= self.wp || m.data_lba < self.start {
            return Err(ZeaError::Invalid(format!(
                "zone {}: extent at LBA {} is not in the written part",
                self.zone, m.data_lba
            )));
        }
        let cb = m.chunk_bytes as u64;
        let c0 = off / cb;
        let c1 = (end - 1) / cb;
        let byte0 = c0 * cb;
        let byte1 = ((c1 + 1) * cb).min(m.data_len);
        let lba0 = m.data_lba + byte0 / self.sector;
        let sectors = byte1.div_ceil(self.sector) - byte0 / self.sector;
        let buf = self.read_sectors(lba0, sectors)?;
        for c in c0..=c1 {
            let a = ((c - c0) * cb) as usize;
            let b = (((c + 1) * cb).min(m.data_len) - byte0) as usize;
            let want = m.chunk_crcs.get(c as usize).copied();
            if buf.get(a..b).map(tegula_codec::checksum::crc32c) != want {
                return Err(self.checksum_err(lba0 + (c - c0) * cb / self.sector));
            }
        }
        let a = (off - byte0) as usize;
        Ok(buf[a..a + n as usize].to_vec())
    }

    /// Resets the zone: every extent in it is gone.
    pub fn reset(&mut self) -> Result<()> {
        self.dev
            .reset_zone(self.zone)
            .map_err(|e| self.dev_err(e))?;
        self.wp = self.start;
        self.next_seq = 0;
        self.recent.clear();
        self.broken = false;
        self.recovery = Recovery::default();
        Ok(())
    }

    /// Finishes the zone (FINISH ZONE): no extent fits any more, and a device that limits its
    /// active zones counts it no longer. The sectors left read as unwritten; at the next open
    /// they are the tail before which the newest extent is found.
    pub fn finish(&mut self) -> Result<()> {
        if self.wp < self.end {
            self.dev
                .finish_zone(self.zone)
                .map_err(|e| self.dev_err(e))?;
            self.wp = self.end;
        }
        Ok(())
    }

    /// Finds the newest valid extent: the block right before the write pointer when the last
    /// put completed, otherwise a backward scan over the torn tail.
    fn find_last(&self) -> Result<Option<ExtentMeta>> {
        if self.wp == self.start {
            return Ok(None);
        }
        let last = self.wp - 1;
        if let Ok(b) = self.read_sectors(last, 1) {
            if let Ok(m) = ExtentMeta::decode(&b, last, self.sector) {
                if m.data_lba >= self.start && (!self.opts.verify_tail || self.data_ok(&m)) {
                    return Ok(Some(m));
                }
            }
        }
        // Torn tail: scan backwards in windows for a block that decodes at its own LBA and
        // whose data checksum holds.
        let window = (1u64 << 20) / self.sector;
        let mut hi = last;
        while hi > self.start {
            let lo = hi.saturating_sub(window).max(self.start);
            let buf = match self.read_sectors(lo, hi - lo) {
                Ok(b) => b,
                Err(_) => {
                    hi = lo;
                    continue;
                }
            };
            for l in (lo..hi).rev() {
                let a = ((l - lo) * self.sector) as usize;
                let s = &buf[a..a + self.sector as usize];
                if s[..8] != crate::meta::MAGIC {
                    continue;
                }
                if let Ok(m) = ExtentMeta::decode(s, l, self.sector) {
                    if m.data_lba >= self.start && self.data_ok(&m) {
                        return Ok(Some(m));
                    }
                }
            }
            hi = lo;
        }
        Ok(None)
    }

    fn data_ok(&self, m: &ExtentMeta) -> bool {
        match self.read_sectors(m.data_lba, m.data_sectors(self.sector)) {
            Ok(mut b) => {
                b.truncate(m.data_len as usize);
                tegula_codec::checksum::crc32c(&b) == m.data_crc
            }
            Err(_) => false,
        }
    }
}
