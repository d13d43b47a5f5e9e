//! The drive-managed SMR image file (specified in `docs/formats/dm-smr-image.md`): a checksummed,
//! versioned header holding the drive's `DmConfig`, two alternating drive-state slots (the raw
//! media's clock, destroyed and failing sectors and statistics, plus the translation layer's
//! counters), the two slots of the translation layer's metadata log, and the raw media's data
//! region (sparse; absent on metadata-only drives). Decoders never panic on bad bytes.

use crate::config::{DmConfig, StlKind};
use crate::error::{Result, StlError};
use crate::layout::Layout;
use crate::stats::StlStats;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use tegula_codec::frame::Format;
use tegula_codec::text_header::HeaderKind;
use tegula_codec::{Dec, Enc, FormatError};
use tegula_device::image::{
    decode_state as decode_media, encode_state as encode_media, ImageState,
};
use tegula_device::imagefile::{self, ImageFileError, SlotPair};
use tegula_device::slots;
use tegula_device::ImageProblem;

/// Magic number at offset 0 of every drive-managed SMR image.
pub const DM_MAGIC: [u8; 8] = *b"TGLADMSR";
/// Magic number of a drive-state slot.
pub const DM_STATE_MAGIC: [u8; 8] = *b"TGLADMST";
/// Current header version: 2 keeps the media's damage in the metadata log (frame version 2).
pub const DM_IMAGE_VERSION: u32 = 2;
/// Oldest header version this build opens (version 1 images are upgraded when opened
/// writable).
pub const DM_IMAGE_VERSION_MIN: u32 = 1;
/// Current drive-state version.
pub const DM_STATE_VERSION: u32 = 1;
/// The frame around a drive-state record: a slot frame (magic, version, length, seq, CRC-32C).
pub const DM_STATE_FORMAT: Format = Format::slot("drive-state", &DM_STATE_MAGIC, DM_STATE_VERSION);
/// Bytes reserved for the header.
pub const DM_HEADER_REGION: u64 = 64 << 10;
/// Bytes of each drive-state slot.
pub const DM_STATE_SLOT: u64 = 4 << 20;
const MIB: u64 = 1 << 20;

/// The decoded header.
#[derive(Debug, Clone, PartialEq)]
pub struct DmImageHeader {
    /// Format version.
    pub version: u32,
    /// The drive configuration.
    pub config: DmConfig,
    /// Offset of drive-state slot A (slot B follows it).
    pub state_offset: u64,
    /// Size of each drive-state slot.
    pub state_slot: u64,
    /// Offset of metadata slot 0 (slot 1 follows it).
    pub meta_offset: u64,
    /// Size of each metadata slot.
    pub meta_slot: u64,
    /// Offset of the raw media's data region.
    pub data_offset: u64,
    /// Offset of the flash cache's data region (0: none).
    pub flash_offset: u64,
}

/// What a drive-state slot holds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DriveState {
    /// Sequence number; the valid slot with the higher one wins.
    pub seq: u64,
    /// The raw media's state in the device layer's state encoding (no zones).
    pub media: ImageState,
    /// The translation layer's cumulative counters.
    pub stl: StlStats,
}

/// Whether the file at `path` starts with the drive-managed image magic.
pub fn is_dm_image(path: &Path) -> bool {
    let mut m = [0u8; 8];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut m))
        .map(|_| m == DM_MAGIC)
        .unwrap_or(false)
}

fn align(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

/// Size of each metadata slot for a drive: room for two checkpoints of the largest map the
/// layer can hold (the file is sparse, so unused room costs nothing).
pub fn meta_slot_size(cfg: &DmConfig, layout: &Layout) -> u64 {
    let ss = layout.sector;
    let cache_sectors = cfg.cache_size / ss;
    let (extents, entries) = match cfg.stl {
        StlKind::Journal => {
            let entry = (cfg.journal_entry_min + cfg.journal_oob)
                .div_ceil(ss)
                .max(1);
            let n = cache_sectors / entry + 1;
            (cfg.map_entries.saturating_mul(3), n)
        }
        StlKind::SetAssociative | StlKind::FullyAssociative => (cache_sectors, 0),
    };
    let ckpt = extents
        .saturating_mul(32)
        .saturating_add(entries.saturating_mul(64))
        .saturating_add(layout.bands.len() as u64 * 24)
        .saturating_add(MIB);
    align(ckpt.saturating_mul(2).max(64 * MIB), MIB)
}

/// The dm-smr image's header: its configuration as text, then the state, metadata-log, data
/// and flash regions.
const HEADER: HeaderKind<'static> = HeaderKind {
    name: "tegula dm-smr image",
    magic: &DM_MAGIC,
    versions: DM_IMAGE_VERSION_MIN..=DM_IMAGE_VERSION,
    fields: 6,
    region: DM_HEADER_REGION,
};

/// Encodes a header.
pub fn encode_header(h: &DmImageHeader) -> Vec<u8> {
    let flags = imagefile::header_flags(h.config.store_data);
    let fields = [
        h.state_offset,
        h.state_slot,
        h.meta_offset,
        h.meta_slot,
        h.data_offset,
        h.flash_offset,
    ];
    HEADER.encode(h.version, flags, &fields, &h.config.to_toml())
}

/// Decodes a header, checking magic, version, lengths, checksum, configuration and layout.
pub fn decode_header(b: &[u8]) -> std::result::Result<DmImageHeader, FormatError> {
    let raw = HEADER.decode(b)?;
    let version = raw.version;
    let [state_offset, state_slot, meta_offset, meta_slot, data_offset, flash_offset] =
        raw.fields[..]
    else {
        return Err(FormatError::invalid(
            "corrupt header: layout fields missing",
        ));
    };
    let config = imagefile::header_config(&HEADER, &raw, DmConfig::from_toml, |c| c.store_data)?;
    let state_end = state_slot
        .checked_mul(2)
        .and_then(|s| s.checked_add(state_offset));
    let meta_end = meta_slot
        .checked_mul(2)
        .and_then(|s| s.checked_add(meta_offset));
    if state_offset < DM_HEADER_REGION
        || state_slot < 64
        || state_end.is_none_or(|e| meta_offset < e)
        || meta_slot < 64
        || meta_end.is_none_or(|e| data_offset < e)
        || (flash_offset != 0 && flash_offset < data_offset)
    {
        return Err(FormatError::invalid(format!(
            "corrupt header: bad layout (state at {state_offset} x{state_slot}, metadata at {meta_offset} x{meta_slot}, data at {data_offset})"
        )));
    }
    Ok(DmImageHeader {
        version,
        config,
        state_offset,
        state_slot,
        meta_offset,
        meta_slot,
        data_offset,
        flash_offset,
    })
}

/// Encodes a drive-state slot.
pub fn encode_drive_state(s: &DriveState) -> Vec<u8> {
    let media = encode_media(&s.media);
    let stl = serde_json::to_vec(&s.stl).unwrap_or_default();
    let mut body = Enc::new();
    body.bytes_u32(&media);
    body.bytes_u32(&stl);
    DM_STATE_FORMAT.encode(0, s.seq, body.as_bytes())
}

/// Decodes a drive-state slot, checking magic, version, length and checksums.
pub fn decode_drive_state(b: &[u8]) -> std::result::Result<DriveState, FormatError> {
    let f = DM_STATE_FORMAT.decode(b)?;
    let seq = f.header.seq;
    let body = f.payload;
    let mut d = Dec::new(body);
    let media = decode_media(d.bytes_u32()?).map_err(|e| e.within("media state"))?;
    let stl = serde_json::from_slice(d.bytes_u32()?)
        .map_err(|e| FormatError::invalid(format!("stl statistics: {e}")))?;
    Ok(DriveState { seq, media, stl })
}

/// An open drive image.
#[derive(Debug)]
pub(crate) struct DmImage {
    file: File,
    path: PathBuf,
    /// The decoded header.
    pub header: DmImageHeader,
    /// Problems with the drive-state slots found on open (a damaged slot passed over).
    pub warnings: Vec<String>,
    next_seq: u64,
}

fn image_err(path: &Path, problem: impl Into<ImageProblem>) -> StlError {
    StlError::Image {
        path: path.display().to_string(),
        problem: problem.into(),
    }
}

fn io_err(path: &Path, what: &str, source: std::io::Error) -> StlError {
    image_err(
        path,
        ImageProblem::Io {
            doing: what.into(),
            source,
        },
    )
}

/// The drive error for a failed image-file operation on `path`.
fn file_err(path: &Path) -> impl FnOnce(ImageFileError) -> StlError + '_ {
    move |e| match e {
        ImageFileError::Io { doing, source } => io_err(path, doing.trim_end_matches(" of"), source),
        ImageFileError::Invalid(p) => image_err(path, p),
        ImageFileError::Device(d) => d.into(),
    }
}

/// The drive-state slots of an image with `header`.
fn slot_pair(header: &DmImageHeader) -> SlotPair<'static> {
    SlotPair {
        format: &DM_STATE_FORMAT,
        offset: header.state_offset,
        size: header.state_slot,
    }
}

impl DmImage {
    /// Creates a new image (refusing to overwrite an existing file) sized for `layout` with
    /// `data_bytes` of raw media data and `flash_bytes` of flash cache data.
    pub fn create(
        path: &Path,
        config: &DmConfig,
        layout: &Layout,
        data_bytes: u64,
        flash_bytes: u64,
    ) -> Result<Self> {
        let file = imagefile::open_locked(path, true, true).map_err(file_err(path))?;
        let meta_slot = meta_slot_size(config, layout);
        let meta_offset = align(DM_HEADER_REGION + 2 * DM_STATE_SLOT, MIB);
        let data_offset = align(meta_offset + 2 * meta_slot, MIB);
        let flash_offset = if flash_bytes > 0 {
            align(data_offset + data_bytes, MIB)
        } else {
            0
        };
        let header = DmImageHeader {
            version: DM_IMAGE_VERSION,
            config: config.clone(),
            state_offset: DM_HEADER_REGION,
            state_slot: DM_STATE_SLOT,
            meta_offset,
            meta_slot,
            data_offset,
            flash_offset,
        };
        let hb = encode_header(&header);
        if hb.len() as u64 > DM_HEADER_REGION {
            return Err(image_err(
                path,
                "configuration too large for the header region",
            ));
        }
        let end = if flash_bytes > 0 {
            flash_offset + flash_bytes
        } else {
            data_offset + data_bytes
        };
        file.set_len(end).map_err(|e| io_err(path, "sizing", e))?;
        file.write_all_at(&hb, 0)
            .map_err(|e| io_err(path, "writing the header", e))?;
        Ok(DmImage {
            file,
            path: path.to_path_buf(),
            header,
            warnings: Vec::new(),
            next_seq: 1,
        })
    }

    /// Opens an image: validates the header and finds the newest valid drive state.
    pub fn open(path: &Path, writable: bool) -> Result<(Self, DriveState)> {
        let file = imagefile::open_locked(path, writable, false).map_err(file_err(path))?;
        let (size, hb) = imagefile::read_header(&file, &HEADER).map_err(file_err(path))?;
        let header = decode_header(&hb).map_err(|p| image_err(path, p))?;
        if size < header.data_offset {
            return Err(image_err(
                path,
                format!(
                    "truncated: {size} bytes, the layout needs {}",
                    header.data_offset
                ),
            ));
        }
        let slot_len = header.state_slot.min(DM_STATE_SLOT * 4) as usize;
        let pair = slot_pair(&header)
            .read(&file, slot_len, |b| {
                decode_drive_state(b).map_err(ImageProblem::from)
            })
            .map_err(file_err(path))?;
        let choice =
            slots::choose("drive state", pair, |s| s.seq).map_err(|p| image_err(path, p))?;
        let (state, warnings) = (choice.state, choice.warnings);
        let next_seq = state.seq + 1;
        Ok((
            DmImage {
                file,
                path: path.to_path_buf(),
                header,
                warnings,
                next_seq,
            },
            state,
        ))
    }

    /// Checks that the file holds the data regions the media and flash need.
    pub fn check_data(&self, data_bytes: u64, flash_bytes: u64) -> Result<()> {
        let size = self
            .file
            .metadata()
            .map_err(|e| io_err(&self.path, "stat", e))?
            .len();
        let mut need = self.header.data_offset.saturating_add(data_bytes);
        if flash_bytes > 0 {
            if self.header.flash_offset < need {
                return Err(image_err(
                    &self.path,
                    format!(
                        "flash region at {} overlaps the data region",
                        self.header.flash_offset
                    ),
                ));
            }
            need = self.header.flash_offset.saturating_add(flash_bytes);
        }
        if size < need {
            return Err(image_err(
                &self.path,
                format!("truncated: {size} bytes, the media needs {need}"),
            ));
        }
        Ok(())
    }

    /// A second handle on the file (for the data and metadata regions).
    pub fn handle(&self) -> Result<File> {
        self.file
            .try_clone()
            .map_err(|e| io_err(&self.path, "cloning the image handle", e))
    }

    /// Rewrites the header as the current version and syncs it (after which older builds
    /// refuse the image: they would misread its metadata log).
    pub fn upgrade_header(&mut self) -> Result<()> {
        self.header.version = DM_IMAGE_VERSION;
        let hb = encode_header(&self.header);
        self.file
            .write_all_at(&hb, 0)
            .map_err(|e| io_err(&self.path, "writing the header", e))?;
        self.file
            .sync_data()
            .map_err(|e| io_err(&self.path, "syncing", e))
    }

    /// Writes `state` to the older slot; with `sync`, `fdatasync`s it.
    pub fn write_state(&mut self, mut state: DriveState, sync: bool) -> Result<()> {
        state.seq = self.next_seq;
        let b = encode_drive_state(&state);
        slot_pair(&self.header)
            .write(&self.file, "drive state", state.seq, &b, sync)
            .map_err(file_err(&self.path))?;
        self.next_seq += 1;
        Ok(())
    }
}

/// Describes both metadata slots of an image (for `tegula disk dump`).
pub fn scan_metadata(path: &Path, header: &DmImageHeader) -> Result<[crate::metalog::SlotScan; 2]> {
    let file = File::open(path).map_err(|e| io_err(path, "opening", e))?;
    let meta = crate::metalog::FileMeta::new(file, header.meta_offset, header.meta_slot);
    let mut log = crate::metalog::MetaLog::new(Box::new(meta), header.meta_slot, false);
    Ok([log.scan(0), log.scan(1)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> DmImageHeader {
        DmImageHeader {
            version: 1,
            config: DmConfig::default(),
            state_offset: DM_HEADER_REGION,
            state_slot: DM_STATE_SLOT,
            meta_offset: 16 * MIB,
            meta_slot: 64 * MIB,
            data_offset: 160 * MIB,
            flash_offset: 0,
        }
    }

    #[test]
    fn header_round_trips_and_detects_every_flipped_byte() {
        let h = header();
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

    /// A drive state with a few non-default fields (the fixture of the tests below).
    fn drive_state() -> DriveState {
        DriveState {
            seq: 3,
            media: ImageState {
                now: 42,
                ..Default::default()
            },
            stl: StlStats {
                stl: "journal".into(),
                map_merges: 7,
                ..Default::default()
            },
        }
    }

    #[test]
    fn drive_state_round_trips_and_detects_corruption() {
        let s = drive_state();
        let b = encode_drive_state(&s);
        assert_eq!(decode_drive_state(&b), Ok(s));
        for i in 0..b.len() {
            let mut bad = b.clone();
            bad[i] ^= 1;
            assert!(
                decode_drive_state(&bad).is_err(),
                "flip at {i} not detected"
            );
        }
    }

    /// Bytes from a hex string (fixtures written by an earlier build).
    fn unhex(h: &str) -> Vec<u8> {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// On-disk compatibility: a drive state as the build before the shared codec encoded it
    /// (format version 1).
    #[test]
    fn drive_state_bytes_match_those_written_by_earlier_builds() {
        let s = drive_state();
        let old = unhex(concat!(
            "54474c41444d5354010000002b0300000300000000000000ad01000054474c4153544154010000009101",
            "000000000000000000002a00000000000000000000000000000000000000790100007b22726561647322",
            "3a302c22777269746573223a302c22666c7573686573223a302c226469736361726473223a302c227a6f",
            "6e655f6f7073223a302c2262797465735f72656164223a302c2262797465735f7772697474656e223a30",
            "2c2263616368655f726561645f68697473223a302c226d656469615f7265616473223a302c226d656469",
            "615f777269746573223a302c226d656469615f62797465735f72656164223a302c226d656469615f6279",
            "7465735f7772697474656e223a302c22627573795f6e73223a302c2269646c655f6e73223a302c226d65",
            "6368223a7b227365656b73223a302c227365656b5f64697374616e6365223a302c22686561645f737769",
            "7463686573223a302c22747261636b5f7377697463686573223a302c227365656b5f6e73223a302c2272",
            "6f746174696f6e5f6e73223a302c227472616e736665725f6e73223a302c22726561645f61686561645f",
            "68697473223a307d2c227a6f6e655f62797465735f7772697474656e223a5b5d7d40f6e951760100007b",
            "2273746c223a226a6f75726e616c222c2263616368655f6279746573223a302c2263616368655f757365",
            "645f6279746573223a302c2263616368655f6c6976655f6279746573223a302c226a6f75726e616c5f65",
            "6e7472696573223a302c226a6f75726e616c5f656e74726965735f6c697665223a302c226d61705f656e",
            "7472696573223a302c226d61705f656e74726965735f6d6178223a302c226d61705f6d6572676573223a",
            "372c22636c65616e696e675f72756e73223a302c2262616e64735f636c65616e6564223a302c22636c65",
            "616e696e675f62797465735f72656164223a302c22636c65616e696e675f62797465735f777269747465",
            "6e223a302c22636c65616e696e675f6e73223a302c226279706173735f777269746573223a302c227361",
            "6c76616765645f736563746f7273223a302c227265636f766572696573223a302c227265706c61796564",
            "5f7265636f726473223a302c22766f6c6174696c655f64697274795f6279746573223a307d93f8cce4",
        ));
        assert_eq!(encode_drive_state(&s), old);
        assert_eq!(decode_drive_state(&old), Ok(s));
    }
}
