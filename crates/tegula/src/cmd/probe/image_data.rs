//! Whether a disk or dm-smr image holds data: a byte of its data region (sparse in the image
//! file; see `docs/formats/disk-image.md` and `docs/formats/dm-smr-image.md`) allocated. A
//! fresh image, or one of a drive that keeps no data, has none; any sector ever written has
//! some. Read only: the image is neither locked nor opened as a drive.

use anyhow::{Context, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// Where the data region starts in the image file and how big a sector of it is, or `None`
/// for an image whose drive keeps no data.
struct Region {
    offset: u64,
    sector: u64,
    /// What a sector of the region is called ("LBA", or "physical sector" for the raw media
    /// under a translation layer).
    unit: &'static str,
}

/// Describes the first written part of the data region of the image at `path`, or `None` if
/// it holds no data (or its header cannot be decoded: opening it then fails with the reason).
pub fn first_written(path: &Path) -> Result<Option<String>> {
    let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut head = vec![0u8; tegula_device::image::HEADER_REGION as usize];
    let n = read_some(&f, &mut head);
    head.truncate(n);
    let Some(region) = region(&head) else {
        return Ok(None);
    };
    let Some(at) = next_data(&f, region.offset)? else {
        return Ok(None);
    };
    let rel = at.saturating_sub(region.offset);
    Ok(Some(format!(
        "written sectors, the first at {} {}",
        region.unit,
        rel / region.sector
    )))
}

/// The data region described by a disk or dm-smr image header.
fn region(head: &[u8]) -> Option<Region> {
    if let Ok(h) = tegula_device::image::decode_header(head) {
        return h.config.store_data.then_some(Region {
            offset: h.data_offset,
            sector: u64::from(h.config.sector_size).max(1),
            unit: "LBA",
        });
    }
    if let Ok(h) = tegula_stl::image::decode_header(head) {
        return h.config.store_data.then_some(Region {
            offset: h.data_offset,
            sector: 4096,
            unit: "physical sector",
        });
    }
    None
}

/// The offset of the first allocated byte at or after `from` (`lseek(SEEK_DATA)`), `None` if
/// there is none. A file system without holes reports everything as data.
fn next_data(f: &File, from: u64) -> Result<Option<u64>> {
    let Ok(off) = libc::off_t::try_from(from) else {
        return Ok(None);
    };
    // SAFETY: lseek on a descriptor this File owns; it only moves the file offset.
    let r = unsafe { libc::lseek(f.as_raw_fd(), off, libc::SEEK_DATA) };
    if r >= 0 {
        return Ok(Some(r as u64));
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENXIO) {
        return Ok(None);
    }
    Err(e).context("looking for data in the image (lseek SEEK_DATA)")
}

/// Reads what there is at the start of `f` into `buf`; the number of bytes read.
fn read_some(f: &File, buf: &mut [u8]) -> usize {
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], done as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => done += n,
        }
    }
    done
}
