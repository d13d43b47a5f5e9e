//! The file handling shared by the images that start with a text header and keep their state
//! in two alternating slots (the zoned disk image and the dm-smr image): opening the file under
//! its lock, reading the header region, the store-data flag, reading both slots and writing the
//! older one. The bytes of each format stay its own module's; only the handling is here.

use crate::error::{DeviceError, ImageProblem};
use crate::slots::SlotRead;
use std::fmt::Display;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use tegula_codec::frame::Format;
use tegula_codec::text_header::{HeaderKind, TextHeader};
use tegula_codec::FormatError;

/// Flag bit 0 of both image headers: the drive stores data (a data region follows).
pub const FLAG_STORE_DATA: u32 = 1;

/// Why handling an image file failed; each image maps it to its own error type.
#[derive(Debug, thiserror::Error)]
pub enum ImageFileError {
    /// The file could not be created, opened, read, written or synced; `doing` is worded to
    /// stand before the path ("reading the header of").
    #[error("{doing}: {source}")]
    Io {
        /// What was being done.
        doing: &'static str,
        /// The I/O error.
        source: io::Error,
    },
    /// The file is not a usable image (worded for a person, with the offset at fault).
    #[error(transparent)]
    Invalid(ImageProblem),
    /// Taking the image's lock failed (another process holds it).
    #[error(transparent)]
    Device(#[from] DeviceError),
}

type Result<T> = std::result::Result<T, ImageFileError>;

fn io(doing: &'static str) -> impl FnOnce(io::Error) -> ImageFileError {
    move |source| ImageFileError::Io { doing, source }
}

/// Opens an image (`create`: a new file, never overwriting one) and takes its lock, which the
/// handle and its clones hold for as long as the image is open.
pub fn open_locked(path: &Path, writable: bool, create: bool) -> Result<File> {
    let (doing, file) = if create {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path);
        ("creating", f)
    } else {
        let f = OpenOptions::new().read(true).write(writable).open(path);
        ("opening", f)
    };
    let file = file.map_err(io(doing))?;
    crate::lock::lock(&file, path, writable || create, crate::lock::default_wait())?;
    Ok(file)
}

/// Reads the header region of an open image of `kind`: the file's size and the region's bytes
/// (fewer when the file is shorter); refuses a file too short for any header.
pub fn read_header(file: &File, kind: &HeaderKind<'_>) -> Result<(u64, Vec<u8>)> {
    let size = file.metadata().map_err(io("stat"))?.len();
    if size < kind.fixed_len() as u64 + 4 {
        return Err(ImageFileError::Invalid(
            format!("truncated: {size} bytes is shorter than an image header").into(),
        ));
    }
    let mut b = vec![0u8; kind.region.min(size) as usize];
    file.read_exact_at(&mut b, 0)
        .map_err(io("reading the header of"))?;
    Ok((size, b))
}

/// The header flags of a drive that does or does not store data.
pub fn header_flags(store_data: bool) -> u32 {
    if store_data {
        FLAG_STORE_DATA
    } else {
        0
    }
}

/// The configuration of a decoded header of `kind`, parsed from its text by `parse` and
/// checked against the store-data flag (`store_data` reads it from the configuration).
pub fn header_config<C, E: Display>(
    kind: &HeaderKind<'_>,
    raw: &TextHeader<'_>,
    parse: impl FnOnce(&str) -> std::result::Result<C, E>,
    store_data: impl FnOnce(&C) -> bool,
) -> std::result::Result<C, FormatError> {
    let config = parse(raw.text).map_err(|e| {
        FormatError::invalid(format!(
            "corrupt header: configuration (offset {}): {e}",
            kind.fixed_len()
        ))
    })?;
    if store_data(&config) != (raw.flags & FLAG_STORE_DATA != 0) {
        return Err(FormatError::invalid(
            "corrupt header: store-data flag disagrees with the configuration (offset 20)",
        ));
    }
    Ok(config)
}

/// Where an image keeps its two alternating state slots, and the frame around their records.
#[derive(Debug, Clone, Copy)]
pub struct SlotPair<'a> {
    /// The slot frame of the records (for the sequence a damaged slot claims).
    pub format: &'a Format,
    /// Byte offset of slot A; slot B follows it.
    pub offset: u64,
    /// Bytes of each slot.
    pub size: u64,
}

impl SlotPair<'_> {
    /// Reads the first `len` bytes of both slots and decodes them with `decode`, for
    /// [`crate::slots::choose`].
    pub fn read<T, E>(
        &self,
        file: &File,
        len: usize,
        decode: impl Fn(&[u8]) -> std::result::Result<T, E>,
    ) -> Result<[SlotRead<T, E>; 2]> {
        let read = |slot: u64| -> Result<SlotRead<T, E>> {
            let off = self.offset + slot * self.size;
            let mut b = vec![0u8; len];
            file.read_exact_at(&mut b, off)
                .map_err(io("reading a state slot of"))?;
            let claimed = self.format.decode_header(&b).ok().map(|h| h.seq);
            let head = &b[..b.len().min(self.format.header_len())];
            Ok(SlotRead::new(off, head, decode(&b), claimed))
        };
        Ok([read(0)?, read(1)?])
    }

    /// Writes the encoded record `b` of sequence `seq` to the slot that sequence selects (the
    /// older one), `fdatasync`ing it with `sync`; `what` names the state when it does not fit.
    pub fn write(&self, file: &File, what: &str, seq: u64, b: &[u8], sync: bool) -> Result<()> {
        if b.len() as u64 > self.size {
            return Err(ImageFileError::Invalid(
                format!(
                    "{what} of {} bytes exceeds the {}-byte slot (too many damaged ranges)",
                    b.len(),
                    self.size
                )
                .into(),
            ));
        }
        let off = self.offset + (seq % 2) * self.size;
        file.write_all_at(b, off)
            .map_err(io("writing a state slot of"))?;
        if sync {
            file.sync_data().map_err(io("syncing"))?;
        }
        Ok(())
    }
}
