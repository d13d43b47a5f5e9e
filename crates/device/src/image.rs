//! The disk image file format (specified in `docs/formats/disk-image.md`): a checksummed,
//! versioned header holding the drive configuration, two alternating checksummed state slots
//! (zone conditions and write pointers, damage and fault state, clock, statistics), and a
//! sparse data region.

use crate::config::DiskConfig;
use crate::error::{DeviceError, ImageProblem, Result};
use crate::imagefile::{self, ImageFileError, SlotPair};
use crate::ranges::RangeSet;
use crate::slots;
use crate::stats::Stats;
use crate::units::Nanos;
use crate::zone::ZoneCondition;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use tegula_codec::frame::Format;
use tegula_codec::text_header::HeaderKind;
use tegula_codec::{Dec, Enc, FormatError};

/// Magic number at offset 0 of every tegula disk image.
pub const IMAGE_MAGIC: [u8; 8] = *b"TGLADISK";
/// Magic number of a state slot.
pub const STATE_MAGIC: [u8; 8] = *b"TGLASTAT";
/// Current header format version.
pub const IMAGE_VERSION: u32 = 1;
/// Current state format version.
pub const STATE_VERSION: u32 = 1;
/// The frame around a state record: a slot frame (magic, version, length, seq, CRC-32C).
pub const STATE_FORMAT: Format = Format::slot("state", &STATE_MAGIC, STATE_VERSION);
/// Bytes reserved for the header.
pub const HEADER_REGION: u64 = 64 << 10;

/// The decoded header.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageHeader {
    /// Format version.
    pub version: u32,
    /// The drive configuration.
    pub config: DiskConfig,
    /// Offset of state slot A (slot B follows it).
    pub state_offset: u64,
    /// Size of each state slot.
    pub slot_size: u64,
    /// Offset of the data region.
    pub data_offset: u64,
}

/// Persistent device state, written to the slots alternately.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ImageState {
    /// Sequence number; the valid slot with the higher one wins.
    pub seq: u64,
    /// Virtual clock.
    pub now: Nanos,
    /// Per zone: condition, non-sequential flag, write pointer.
    pub zones: Vec<(ZoneCondition, bool, u64)>,
    /// Sectors destroyed by shingled writes.
    pub destroyed: RangeSet,
    /// Injected media errors.
    pub injected: RangeSet,
    /// Cumulative statistics.
    pub stats: Stats,
}

fn align_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

/// Layout of a new image for a configuration: (state offset, slot size, data offset).
pub fn layout_for(cfg: &DiskConfig) -> (u64, u64) {
    let zones = cfg.zone_count() as u64;
    let slot = align_up((1 << 20) + zones * 64, 4096);
    (slot, align_up(HEADER_REGION + 2 * slot, 1 << 20))
}

/// The zoned disk image's header: its configuration as text, then state offset, slot size
/// and data offset.
const HEADER: HeaderKind<'static> = HeaderKind {
    name: "tegula disk image",
    magic: &IMAGE_MAGIC,
    versions: IMAGE_VERSION..=IMAGE_VERSION,
    fields: 3,
    region: HEADER_REGION,
};

/// Encodes a header.
pub fn encode_header(h: &ImageHeader) -> Vec<u8> {
    HEADER.encode(
        h.version,
        imagefile::header_flags(h.config.store_data),
        &[h.state_offset, h.slot_size, h.data_offset],
        &h.config.to_toml(),
    )
}

/// Decodes a header, checking magic, version, lengths and checksum.
pub fn decode_header(b: &[u8]) -> std::result::Result<ImageHeader, FormatError> {
    let raw = HEADER.decode(b)?;
    let version = raw.version;
    let [state_offset, slot_size, data_offset] = raw.fields[..] else {
        return Err(FormatError::invalid(
            "corrupt header: layout fields missing",
        ));
    };
    let config = imagefile::header_config(&HEADER, &raw, DiskConfig::from_toml, |c| c.store_data)?;
    // Checked arithmetic: a forged layout must not overflow when the image is opened.
    let slots_end = slot_size
        .checked_mul(2)
        .and_then(|s| s.checked_add(state_offset));
    let data_bytes = if config.store_data {
        config.capacity
    } else {
        0
    };
    if state_offset < HEADER_REGION
        || slot_size == 0
        || slots_end.is_none_or(|e| data_offset < e)
        || data_offset.checked_add(data_bytes).is_none()
    {
        return Err(FormatError::invalid(format!("corrupt header: bad layout (state at {state_offset}, slot {slot_size}, data at {data_offset})")));
    }
    Ok(ImageHeader {
        version,
        config,
        state_offset,
        slot_size,
        data_offset,
    })
}

fn encode_ranges(e: &mut Enc, r: &RangeSet) {
    e.u32(r.len() as u32);
    for (s, end) in r.iter() {
        e.u64(s);
        e.u64(end);
    }
}

fn decode_ranges(d: &mut Dec<'_>, what: &str) -> std::result::Result<RangeSet, FormatError> {
    let n = d.u32()? as usize;
    if n > d.remaining() / 16 {
        return Err(FormatError::invalid(format!(
            "corrupt state: {n} {what} ranges do not fit (offset {})",
            d.pos()
        )));
    }
    let mut r = RangeSet::new();
    for _ in 0..n {
        let (s, e) = (d.u64()?, d.u64()?);
        if s >= e {
            return Err(FormatError::invalid(format!(
                "corrupt state: empty {what} range {s}..{e} (offset {})",
                d.pos()
            )));
        }
        r.insert(s, e);
    }
    Ok(r)
}

/// Encodes a state record.
pub fn encode_state(s: &ImageState) -> Vec<u8> {
    let mut body = Enc::new();
    body.u64(s.now);
    body.u32(s.zones.len() as u32);
    for &(c, ns, wp) in &s.zones {
        body.u8(c.code());
        body.u8(ns as u8);
        body.u64(wp);
    }
    encode_ranges(&mut body, &s.destroyed);
    encode_ranges(&mut body, &s.injected);
    let stats = serde_json::to_vec(&s.stats).unwrap_or_default();
    body.bytes_u32(&stats);
    STATE_FORMAT.encode(0, s.seq, body.as_bytes())
}

/// Decodes a state record, checking magic, version, length and checksum.
pub fn decode_state(b: &[u8]) -> std::result::Result<ImageState, FormatError> {
    let f = STATE_FORMAT.decode(b)?;
    let seq = f.header.seq;
    let body = f.payload;
    let mut d = Dec::new(body);
    let now = d.u64()?;
    let nz = d.u32()? as usize;
    if nz > d.remaining() / 10 {
        return Err(FormatError::invalid(format!(
            "corrupt state: {nz} zones do not fit"
        )));
    }
    let mut zones = Vec::with_capacity(nz);
    for i in 0..nz {
        let c = d.u8()?;
        let cond = ZoneCondition::from_code(c).ok_or_else(|| {
            FormatError::invalid(format!(
                "corrupt state: zone {i} has unknown condition code {c}"
            ))
        })?;
        let ns = d.u8()? != 0;
        zones.push((cond, ns, d.u64()?));
    }
    let destroyed = decode_ranges(&mut d, "destroyed")?;
    let injected = decode_ranges(&mut d, "media-error")?;
    let sbytes = d.bytes_u32()?;
    let stats = serde_json::from_slice(sbytes)
        .map_err(|e| FormatError::invalid(format!("corrupt state: statistics: {e}")))?;
    Ok(ImageState {
        seq,
        now,
        zones,
        destroyed,
        injected,
        stats,
    })
}

/// An open disk image: header plus the handle used to persist state.
#[derive(Debug)]
pub struct ImageFile {
    file: File,
    path: PathBuf,
    /// The decoded header.
    pub header: ImageHeader,
    /// Problems found with the state slots on open (a damaged slot passed over), for the
    /// caller to show; empty for a healthy image.
    pub warnings: Vec<String>,
    next_seq: u64,
}

fn image_err(path: &Path, problem: impl Into<ImageProblem>) -> DeviceError {
    DeviceError::Image {
        path: path.display().to_string(),
        problem: problem.into(),
    }
}

/// The device error for a failed image-file operation on `path`.
fn file_err(path: &Path) -> impl FnOnce(ImageFileError) -> DeviceError + '_ {
    move |e| match e {
        ImageFileError::Io { doing, source } => {
            DeviceError::io(format!("{doing} {}", path.display()), source)
        }
        ImageFileError::Invalid(p) => image_err(path, p),
        ImageFileError::Device(d) => d,
    }
}

/// The state slots of an image with `header`.
fn slot_pair(header: &ImageHeader) -> SlotPair<'static> {
    SlotPair {
        format: &STATE_FORMAT,
        offset: header.state_offset,
        size: header.slot_size,
    }
}

impl ImageFile {
    /// Creates a new image (refusing to overwrite an existing file) and writes its first state.
    pub fn create(path: &Path, config: &DiskConfig, state: &ImageState) -> Result<(Self, File)> {
        let file = imagefile::open_locked(path, true, true).map_err(file_err(path))?;
        let (slot_size, data_offset) = layout_for(config);
        let header = ImageHeader {
            version: IMAGE_VERSION,
            config: config.clone(),
            state_offset: HEADER_REGION,
            slot_size,
            data_offset,
        };
        let hb = encode_header(&header);
        if hb.len() as u64 > HEADER_REGION {
            return Err(image_err(
                path,
                "configuration too large for the header region",
            ));
        }
        let len = data_offset
            + if config.store_data {
                config.capacity
            } else {
                0
            };
        file.set_len(len)
            .map_err(|e| DeviceError::io(format!("sizing {}", path.display()), e))?;
        file.write_all_at(&hb, 0)
            .map_err(|e| DeviceError::io(format!("writing header of {}", path.display()), e))?;
        let data = file
            .try_clone()
            .map_err(|e| DeviceError::io("cloning image handle", e))?;
        let mut img = ImageFile {
            file,
            path: path.to_path_buf(),
            header,
            warnings: Vec::new(),
            next_seq: 1,
        };
        img.write_state(state.clone())?;
        Ok((img, data))
    }

    /// Opens an image, validating header and state. Returns the image, the newest valid state
    /// and a handle for the data region.
    pub fn open(path: &Path, writable: bool) -> Result<(Self, ImageState, File)> {
        let file = imagefile::open_locked(path, writable, false).map_err(file_err(path))?;
        let (size, hb) = imagefile::read_header(&file, &HEADER).map_err(file_err(path))?;
        let header = decode_header(&hb).map_err(|p| image_err(path, p))?;
        let expect = header.data_offset
            + if header.config.store_data {
                header.config.capacity
            } else {
                0
            };
        if size < expect {
            return Err(image_err(
                path,
                format!("truncated: {size} bytes, the configuration needs {expect}"),
            ));
        }
        let pair = slot_pair(&header)
            .read(&file, header.slot_size as usize, |b| {
                decode_state(b).map_err(ImageProblem::from)
            })
            .map_err(file_err(path))?;
        let choice = slots::choose("state", pair, |s| s.seq).map_err(|p| image_err(path, p))?;
        let (state, warnings) = (choice.state, choice.warnings);
        if state.zones.len() != header.config.zone_count() as usize {
            return Err(image_err(
                path,
                format!(
                    "state has {} zones, configuration {}",
                    state.zones.len(),
                    header.config.zone_count()
                ),
            ));
        }
        let data = file
            .try_clone()
            .map_err(|e| DeviceError::io("cloning image handle", e))?;
        let next_seq = state.seq + 1;
        Ok((
            ImageFile {
                file,
                path: path.to_path_buf(),
                header,
                warnings,
                next_seq,
            },
            state,
            data,
        ))
    }

    /// Path of the image.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `state` to the older slot and syncs it.
    pub fn write_state(&mut self, mut state: ImageState) -> Result<()> {
        state.seq = self.next_seq;
        let b = encode_state(&state);
        slot_pair(&self.header)
            .write(&self.file, "device state", state.seq, &b, true)
            .map_err(file_err(&self.path))?;
        self.next_seq += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> DiskConfig {
        let mut c = crate::config::profile("hm-smr").expect("profile");
        c.capacity = 1 << 30;
        c
    }

    #[test]
    fn header_round_trips_and_detects_every_flipped_byte() {
        let c = cfg();
        let (slot, data) = layout_for(&c);
        let h = ImageHeader {
            version: 1,
            config: c,
            state_offset: HEADER_REGION,
            slot_size: slot,
            data_offset: data,
        };
        let b = encode_header(&h);
        assert_eq!(decode_header(&b), Ok(h));
        for i in 0..b.len() {
            let mut bad = b.clone();
            bad[i] ^= 0x40;
            assert!(decode_header(&bad).is_err(), "flip at {i} not detected");
        }
        for n in 0..b.len() {
            assert!(decode_header(&b[..n]).is_err());
        }
    }

    /// A state with a few non-default fields (the fixture of the tests below).
    fn state() -> ImageState {
        let mut destroyed = RangeSet::new();
        destroyed.insert(10, 20);
        ImageState {
            seq: 7,
            now: 123,
            zones: vec![
                (ZoneCondition::Empty, false, 0),
                (ZoneCondition::Closed, true, 99),
            ],
            destroyed,
            injected: RangeSet::new(),
            stats: Stats {
                reads: 3,
                ..Default::default()
            },
        }
    }

    #[test]
    fn state_round_trips_and_detects_corruption() {
        let s = state();
        let b = encode_state(&s);
        assert_eq!(decode_state(&b), Ok(s));
        for i in 0..b.len() {
            let mut bad = b.clone();
            bad[i] ^= 1;
            assert!(decode_state(&bad).is_err(), "flip at {i} not detected");
        }
    }

    /// Bytes from a hex string (fixtures written by an earlier build).
    fn unhex(h: &str) -> Vec<u8> {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// On-disk compatibility: the state of `state_round_trips_and_detects_corruption`, as the
    /// build before the shared codec encoded it (format version 1).
    #[test]
    fn state_bytes_match_those_written_by_earlier_builds() {
        let s = state();
        let old = unhex(concat!(
            "54474c415354415401000000b501000007000000000000007b0000000000000002000000010000000000",
            "0000000004016300000000000000010000000a0000000000000014000000000000000000000079010000",
            "7b227265616473223a332c22777269746573223a302c22666c7573686573223a302c2264697363617264",
            "73223a302c227a6f6e655f6f7073223a302c2262797465735f72656164223a302c2262797465735f7772",
            "697474656e223a302c2263616368655f726561645f68697473223a302c226d656469615f726561647322",
            "3a302c226d656469615f777269746573223a302c226d656469615f62797465735f72656164223a302c22",
            "6d656469615f62797465735f7772697474656e223a302c22627573795f6e73223a302c2269646c655f6e",
            "73223a302c226d656368223a7b227365656b73223a302c227365656b5f64697374616e6365223a302c22",
            "686561645f7377697463686573223a302c22747261636b5f7377697463686573223a302c227365656b5f",
            "6e73223a302c22726f746174696f6e5f6e73223a302c227472616e736665725f6e73223a302c22726561",
            "645f61686561645f68697473223a307d2c227a6f6e655f62797465735f7772697474656e223a5b5d7dca",
            "912f12",
        ));
        assert_eq!(encode_state(&s), old);
        assert_eq!(decode_state(&old), Ok(s));
    }
}
