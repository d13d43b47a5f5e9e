//! The T13 banded view (ShingledFS emulator, seed 003 §4.2–4.3): band number plus relative
//! block address (RBA) onto the sequential zones of a zoned device. Band `b` is the `b`-th
//! sequential zone; a band's write pointer is its zone's write pointer relative to its start.
//!
//! `edi_managebands` gets a band's write pointer ([`Banded::write_pointer`]), resets one or
//! all ([`Banded::reset`], [`Banded::reset_all`]) and **sets one**: [`Banded::set_write_pointer`]
//! is an explicit extension of the zoned model (ZBC and ZAC have no such command), through
//! [`ZonedDevice::rewind_write_pointer`]. It only moves a write pointer backwards, and only
//! the host can know that the blocks it gives up hold no live data: writing at the new
//! pointer re-shingles the tracks after it, so their contents are discarded at once (they
//! read as unwritten, past the write pointer), while everything before the new pointer stays
//! readable. ShingledFS's tail cleaning uses it after moving the live data at a band's tail.

use crate::api::ZonedDevice;
use crate::error::{DeviceError, Result};
use crate::media::IoDone;
use crate::zone::{ZoneFilter, ZoneType};

/// What `edi_modesense()` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModeSense {
    /// Sector (block) size in bytes.
    pub sector_size: u32,
    /// Number of bands.
    pub bands: u32,
    /// Blocks per band.
    pub band_blocks: u64,
}

/// Banded addressing over a zoned device.
pub struct Banded<D> {
    dev: D,
    first_zone: u32,
    bands: u32,
}

impl<D: ZonedDevice> Banded<D> {
    /// Wraps a zoned device; bands are its sequential zones.
    pub fn new(dev: D) -> Self {
        let zones = dev.report_zones(ZoneFilter::All);
        let seq: Vec<_> = zones
            .iter()
            .filter(|z| z.zone_type != ZoneType::Conventional)
            .collect();
        let first_zone = seq.first().map_or(zones.len() as u32, |z| z.index);
        Banded {
            bands: seq.len() as u32,
            first_zone,
            dev,
        }
    }

    /// The underlying device.
    pub fn device(&self) -> &D {
        &self.dev
    }

    /// Device characteristics.
    pub fn mode_sense(&self) -> ModeSense {
        let info = self.dev.info();
        ModeSense {
            sector_size: info.sector_size,
            bands: self.bands,
            band_blocks: info.zone_sectors,
        }
    }

    fn zone(&self, band: u32) -> Result<u32> {
        if band >= self.bands {
            return Err(DeviceError::NoSuchZone {
                zone: band as u64,
                zones: self.bands,
            });
        }
        Ok(self.first_zone + band)
    }

    /// The band's write pointer as an RBA.
    pub fn write_pointer(&self, band: u32) -> Result<u64> {
        let z = self.dev.zone(self.zone(band)?)?;
        Ok(z.write_pointer_lba - z.start_lba)
    }

    /// Reads at (band, rba); fails past the band's write pointer as `edi_read` does.
    pub fn read(&self, band: u32, rba: u64, buf: &mut [u8]) -> Result<IoDone> {
        let z = self.dev.zone(self.zone(band)?)?;
        let n = buf.len() as u64 / self.dev.info().sector_size as u64;
        if rba + n > z.write_pointer_lba - z.start_lba {
            return Err(DeviceError::ReadPastWritePointer {
                zone: z.index,
                write_pointer: z.write_pointer_lba,
                lba: z.start_lba + rba,
                sectors: n,
            });
        }
        self.dev.read(z.start_lba + rba, buf)
    }

    /// Writes at (band, rba); only at the band's write pointer, as `edi_write` requires.
    pub fn write(&self, band: u32, rba: u64, data: &[u8]) -> Result<IoDone> {
        let z = self.dev.zone(self.zone(band)?)?;
        self.dev.write(z.start_lba + rba, data)
    }

    /// Sets a band's write pointer back to `rba` (the T13 "set write pointer" extension, only
    /// backwards; see the module documentation). The caller guarantees that the blocks from
    /// `rba` to the old write pointer hold no live data; they are discarded.
    pub fn set_write_pointer(&self, band: u32, rba: u64) -> Result<IoDone> {
        let zone = self.zone(band)?;
        let z = self.dev.zone(zone)?;
        self.dev
            .rewind_write_pointer(zone, z.start_lba.saturating_add(rba))
    }

    /// Resets one band's write pointer.
    pub fn reset(&self, band: u32) -> Result<IoDone> {
        self.dev.reset_zone(self.zone(band)?)
    }

    /// Resets every band's write pointer.
    pub fn reset_all(&self) -> Result<IoDone> {
        self.dev
            .zone_action(crate::zone::ZoneAction::Reset, crate::api::ZoneTarget::All)
    }
}
