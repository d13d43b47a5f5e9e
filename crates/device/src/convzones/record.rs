//! The record of the conventional-zone log (`docs/formats/conv-zones.md`): one header sector,
//! framed by the shared codec, that names the virtual sectors the data sectors after it hold.

use crate::error::{DeviceError, Result};
use tegula_codec::frame::Format;
use tegula_codec::{Dec, Enc, FormatError};

/// The frame of a record header.
pub const FORMAT: Format = Format::record(
    "conventional-zone log record",
    b"TGLCVZLG",
    1,
    &[KIND_WRITE, KIND_PAD],
);
/// A write of data sectors.
pub const KIND_WRITE: u8 = 1;
/// A header without data that fills a zone's last sector (a zone is never left with a sector
/// too few for a record, nor finished over sectors that were never written).
pub const KIND_PAD: u8 = 2;

/// The layout every record repeats, so that a device is never read with another one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Virtual conventional zones presented.
    pub conv_zones: u32,
    /// Sequential zones of the device holding the log (zones `0..log_zones`).
    pub log_zones: u32,
    /// Zone size in sectors.
    pub zone_sectors: u64,
    /// Sector size in bytes.
    pub sector_size: u32,
}

/// One record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// [`KIND_WRITE`] or [`KIND_PAD`].
    pub kind: u8,
    /// Record sequence number: later records win.
    pub seq: u64,
    /// The layout of the device that wrote it.
    pub layout: Layout,
    /// First virtual sector (counted from the start of the conventional area).
    pub vlba: u64,
    /// Data sectors following the header sector.
    pub count: u32,
    /// CRC-32C of the data sectors.
    pub data_crc: u32,
}

impl Header {
    /// The header as one sector of `sector_size` bytes (zero padded).
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.u32(self.layout.conv_zones);
        e.u32(self.layout.log_zones);
        e.u64(self.layout.zone_sectors);
        e.u32(self.layout.sector_size);
        e.u64(self.vlba);
        e.u32(self.count);
        e.u32(self.data_crc);
        let mut b = FORMAT.encode(self.kind, self.seq, e.as_bytes());
        b.resize(self.layout.sector_size as usize, 0);
        b
    }

    /// Decodes a header sector; never panics on bad bytes.
    pub fn decode(b: &[u8]) -> std::result::Result<Header, FormatError> {
        let f = FORMAT.decode(b)?;
        let mut d = Dec::new(f.payload);
        let layout = Layout {
            conv_zones: d.u32()?,
            log_zones: d.u32()?,
            zone_sectors: d.u64()?,
            sector_size: d.u32()?,
        };
        Ok(Header {
            kind: f.header.kind,
            seq: f.header.seq,
            layout,
            vlba: d.u64()?,
            count: d.u32()?,
            data_crc: d.u32()?,
        })
    }
}

/// A corruption error for the log record at `lba`.
pub fn corrupt(lba: u64, problem: impl Into<String>) -> DeviceError {
    DeviceError::Corrupt {
        what: "conventional-zone log record",
        lba,
        problem: problem.into(),
        cause: None,
    }
}

/// A corruption error for the log record at `lba` whose header did not decode: `problem`,
/// then the decoder's error, which the error keeps as its source.
pub fn undecodable(lba: u64, problem: &str, cause: tegula_codec::FormatError) -> DeviceError {
    DeviceError::Corrupt {
        what: "conventional-zone log record",
        lba,
        problem: format!("{problem}: {cause}"),
        cause: Some(cause),
    }
}

/// Checks that a decoded header belongs to a device of `layout` and stays inside it.
pub fn check(h: &Header, layout: &Layout, conv_sectors: u64, lba: u64) -> Result<()> {
    if h.layout != *layout {
        return Err(corrupt(
            lba,
            format!(
                "written for another layout ({:?}; this device has {:?})",
                h.layout, layout
            ),
        ));
    }
    if h.kind == KIND_PAD {
        return if h.count == 0 {
            Ok(())
        } else {
            Err(corrupt(
                lba,
                format!("a pad record claims {} data sectors", h.count),
            ))
        };
    }
    if h.count == 0
        || h.vlba
            .checked_add(u64::from(h.count))
            .is_none_or(|e| e > conv_sectors)
    {
        return Err(corrupt(
            lba,
            format!(
                "names sectors {}..+{} outside the {conv_sectors}-sector conventional area",
                h.vlba, h.count
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn h() -> Header {
        Header {
            kind: KIND_WRITE,
            seq: 9,
            layout: Layout {
                conv_zones: 1,
                log_zones: 7,
                zone_sectors: 256,
                sector_size: 4096,
            },
            vlba: 3,
            count: 2,
            data_crc: 0xdead_beef,
        }
    }

    #[test]
    fn headers_round_trip_in_one_sector_and_refuse_any_flipped_byte() {
        let b = h().encode();
        assert_eq!(b.len(), 4096);
        assert_eq!(Header::decode(&b).unwrap(), h());
        let n = FORMAT.frame_len(36);
        for i in 0..n {
            let mut c = b.clone();
            c[i] ^= 0x40;
            assert!(Header::decode(&c).is_err(), "flip at {i} accepted");
        }
        assert!(Header::decode(&b[..10]).is_err());
    }

    #[test]
    fn headers_outside_the_area_or_of_another_layout_are_corruption() {
        let x = h();
        assert!(check(&x, &x.layout, 256, 0).is_ok());
        assert!(check(&x, &x.layout, 4, 0).is_err());
        let mut other = x.layout;
        other.log_zones = 5;
        assert!(check(&x, &other, 256, 0).is_err());
        let mut zero = x;
        zero.count = 0;
        assert!(check(&zero, &x.layout, 256, 0).is_err());
    }
}
