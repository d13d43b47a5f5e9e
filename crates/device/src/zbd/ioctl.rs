//! The Linux zoned block device ioctls (`linux/blkzoned.h`): `BLKREPORTZONE` and the zone
//! management commands `BLKRESETZONE`, `BLKOPENZONE`, `BLKCLOSEZONE`, `BLKFINISHZONE`. Every
//! position here is in 512-byte sectors, whatever the device's logical block size, as the
//! kernel's interface is. The report's bytes are parsed by [`parse_report`], which never
//! panics on what the kernel returns.

use crate::zone::{ZoneCondition, ZoneType};
use std::io;
use std::os::unix::io::RawFd;

/// Bytes of `struct blk_zone_report`'s header (`sector`, `nr_zones`, `flags`).
const REPORT_HEADER: usize = 16;
/// Bytes of one `struct blk_zone`.
const ZONE_BYTES: usize = 64;
/// `BLK_ZONE_REP_CAPACITY`: the report's `capacity` fields are valid (Linux 5.9 and later).
const REP_CAPACITY: u32 = 1;

/// `struct blk_zone_report`'s header; the zones follow it in the same buffer.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BlkZoneReportHeader {
    /// First 512-byte sector to report from.
    pub sector: u64,
    /// In: room for this many zones; out: zones reported.
    pub nr_zones: u32,
    /// Out: `BLK_ZONE_REP_*` flags.
    pub flags: u32,
}

/// The ioctl calls themselves (`_IOWR(0x12, 130, …)` and `_IOW(0x12, 131/134-136, …)`).
mod raw {
    use super::{BlkZoneRange, BlkZoneReportHeader};
    nix::ioctl_readwrite!(blk_report_zone, 0x12, 130, BlkZoneReportHeader);
    nix::ioctl_write_ptr!(blk_reset_zone, 0x12, 131, BlkZoneRange);
    nix::ioctl_write_ptr!(blk_open_zone, 0x12, 134, BlkZoneRange);
    nix::ioctl_write_ptr!(blk_close_zone, 0x12, 135, BlkZoneRange);
    nix::ioctl_write_ptr!(blk_finish_zone, 0x12, 136, BlkZoneRange);
}
use raw::*;

/// `struct blk_zone_range`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BlkZoneRange {
    /// First 512-byte sector.
    pub sector: u64,
    /// 512-byte sectors.
    pub nr_sectors: u64,
}

/// One zone as the kernel reports it (512-byte sectors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawZone {
    /// First sector.
    pub start: u64,
    /// Sectors of the zone.
    pub len: u64,
    /// Write pointer.
    pub wp: u64,
    /// Writable sectors (the zone length where the kernel does not report a capacity).
    pub capacity: u64,
    /// `BLK_ZONE_TYPE_*`.
    pub zone_type: u8,
    /// `BLK_ZONE_COND_*`.
    pub cond: u8,
    /// The non-sequential-write-resources-active flag.
    pub non_seq: bool,
}

impl RawZone {
    /// The zone's type, or `None` for a type this code does not know.
    pub fn typed(&self) -> Option<ZoneType> {
        match self.zone_type {
            1 => Some(ZoneType::Conventional),
            2 => Some(ZoneType::SeqWriteRequired),
            3 => Some(ZoneType::SeqWritePreferred),
            _ => None,
        }
    }

    /// The zone's condition, or `None` for a condition this code does not know.
    pub fn condition(&self) -> Option<ZoneCondition> {
        match self.cond {
            0x0 => Some(ZoneCondition::NotWritePointer),
            0x1 => Some(ZoneCondition::Empty),
            0x2 => Some(ZoneCondition::ImplicitOpen),
            0x3 => Some(ZoneCondition::ExplicitOpen),
            0x4 => Some(ZoneCondition::Closed),
            0xD => Some(ZoneCondition::ReadOnly),
            0xE => Some(ZoneCondition::Full),
            0xF => Some(ZoneCondition::Offline),
            _ => None,
        }
    }
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn le32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

/// Parses a `struct blk_zone_report` (header and zones, native byte order, which is little
/// endian on every platform this runs on). Zones the buffer does not hold whole are left out.
pub fn parse_report(buf: &[u8]) -> Vec<RawZone> {
    if buf.len() < REPORT_HEADER {
        return Vec::new();
    }
    let nr = le32(buf, 8) as usize;
    let flags = le32(buf, 12);
    let fits = (buf.len() - REPORT_HEADER) / ZONE_BYTES;
    (0..nr.min(fits))
        .map(|i| {
            let z = &buf[REPORT_HEADER + i * ZONE_BYTES..REPORT_HEADER + (i + 1) * ZONE_BYTES];
            let len = le64(z, 8);
            RawZone {
                start: le64(z, 0),
                len,
                wp: le64(z, 16),
                zone_type: z[24],
                cond: z[25],
                non_seq: z[26] != 0,
                capacity: if flags & REP_CAPACITY != 0 {
                    le64(z, 32)
                } else {
                    len
                },
            }
        })
        .collect()
}

/// Reports up to `max` zones from 512-byte sector `sector` on.
pub fn report(fd: RawFd, sector: u64, max: u32) -> io::Result<Vec<RawZone>> {
    // u64 words: the buffer is aligned for the header the kernel reads through a pointer.
    let words = (REPORT_HEADER + max as usize * ZONE_BYTES) / 8;
    let mut buf = vec![0u64; words];
    buf[0] = sector;
    buf[1] = u64::from(max);
    let header = buf.as_mut_ptr().cast::<BlkZoneReportHeader>();
    // SAFETY: `buf` is 8-byte aligned, starts with the header the kernel reads and has room
    // for the `max` zones after it that the kernel may write (it writes at most `nr_zones`).
    unsafe { blk_report_zone(fd, header) }.map_err(io::Error::from)?;
    let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
    Ok(parse_report(&bytes))
}

/// Reports every zone from `sector` to `end` (exclusive), in batches.
pub fn report_all(fd: RawFd, mut sector: u64, end: u64) -> io::Result<Vec<RawZone>> {
    const BATCH: u32 = 4096;
    let mut out = Vec::new();
    while sector < end {
        let got = report(fd, sector, BATCH)?;
        let Some(last) = got.last() else { break };
        let next = last.start + last.len.max(1);
        out.extend(got.into_iter().filter(|z| z.start < end));
        if next <= sector {
            break;
        }
        sector = next;
    }
    Ok(out)
}

/// A zone management command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mgmt {
    /// `BLKRESETZONE`.
    Reset,
    /// `BLKOPENZONE`.
    Open,
    /// `BLKCLOSEZONE`.
    Close,
    /// `BLKFINISHZONE`.
    Finish,
}

/// Applies `op` to the zones of `[sector, sector + nr_sectors)`.
pub fn manage(fd: RawFd, op: Mgmt, sector: u64, nr_sectors: u64) -> io::Result<()> {
    let range = BlkZoneRange { sector, nr_sectors };
    // SAFETY: each call passes a pointer to a live `blk_zone_range` the kernel only reads.
    let r = unsafe {
        match op {
            Mgmt::Reset => blk_reset_zone(fd, &range),
            Mgmt::Open => blk_open_zone(fd, &range),
            Mgmt::Close => blk_close_zone(fd, &range),
            Mgmt::Finish => blk_finish_zone(fd, &range),
        }
    };
    r.map(|_| ()).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn report_bytes(flags: u32, zones: &[RawZone]) -> Vec<u8> {
        let mut b = vec![0u8; REPORT_HEADER];
        b[8..12].copy_from_slice(&(zones.len() as u32).to_le_bytes());
        b[12..16].copy_from_slice(&flags.to_le_bytes());
        for z in zones {
            let mut e = [0u8; ZONE_BYTES];
            e[0..8].copy_from_slice(&z.start.to_le_bytes());
            e[8..16].copy_from_slice(&z.len.to_le_bytes());
            e[16..24].copy_from_slice(&z.wp.to_le_bytes());
            e[24] = z.zone_type;
            e[25] = z.cond;
            e[26] = u8::from(z.non_seq);
            e[32..40].copy_from_slice(&z.capacity.to_le_bytes());
            b.extend_from_slice(&e);
        }
        b
    }

    #[test]
    fn a_report_parses_with_and_without_capacities() {
        let zones = [
            RawZone {
                start: 0,
                len: 131072,
                wp: 131072,
                capacity: 131072,
                zone_type: 1,
                cond: 0,
                non_seq: false,
            },
            RawZone {
                start: 131072,
                len: 131072,
                wp: 131072 + 8,
                capacity: 98304,
                zone_type: 2,
                cond: 2,
                non_seq: false,
            },
        ];
        let got = parse_report(&report_bytes(REP_CAPACITY, &zones));
        assert_eq!(got, zones);
        assert_eq!(got[1].typed(), Some(ZoneType::SeqWriteRequired));
        assert_eq!(got[1].condition(), Some(ZoneCondition::ImplicitOpen));
        // Without the capacity flag, the capacity is the length.
        let got = parse_report(&report_bytes(0, &zones));
        assert_eq!(got[1].capacity, 131072);
    }

    #[test]
    fn short_or_lying_reports_parse_to_what_is_whole_and_never_panic() {
        let z = RawZone {
            start: 0,
            len: 8,
            wp: 0,
            capacity: 8,
            zone_type: 9,
            cond: 0x7,
            non_seq: true,
        };
        let mut b = report_bytes(REP_CAPACITY, &[z, z]);
        b[8..12].copy_from_slice(&1000u32.to_le_bytes());
        assert_eq!(parse_report(&b).len(), 2);
        b.truncate(b.len() - 1);
        assert_eq!(parse_report(&b).len(), 1);
        assert_eq!(parse_report(&b)[0].typed(), None);
        assert_eq!(parse_report(&b)[0].condition(), None);
        for n in 0..20 {
            let _ = parse_report(&b[..n.min(b.len())]);
        }
    }
}
