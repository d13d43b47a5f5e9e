//! Where the two metadata slots live: in memory, or in a region of a drive image.

use super::*;

/// Where the two slots live.
pub(crate) trait MetaBackend: Send {
    /// Reads `buf.len()` bytes at `off` of slot `slot` (past what was written: zeros).
    fn read_at(&mut self, slot: usize, off: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Writes `data` at `off` of slot `slot`.
    fn write_at(&mut self, slot: usize, off: u64, data: &[u8]) -> io::Result<()>;
    /// Makes everything written durable on the host.
    fn sync(&mut self) -> io::Result<()>;
    /// An upper bound of the bytes ever written to slot `slot` (its frames are contiguous from
    /// offset 0), when the backend can tell cheaply: searches for frames stop there (a hint
    /// only: a file copied with its zero runs punched out may report less).
    fn written_end(&mut self, slot: usize) -> Option<u64>;
    /// Exactly where the bytes held for slot `slot` end, for a backend that knows (memory).
    fn exact_end(&self, slot: usize) -> Option<u64>;
    /// Offset in the image file of byte `off` of slot `slot` (for messages), if in a file.
    fn image_offset(&self, slot: usize, off: u64) -> Option<u64>;
}

/// Slots in memory (drives without an image).
#[derive(Default)]
pub(crate) struct MemMeta {
    slots: [Vec<u8>; 2],
}

impl MemMeta {
    /// Slots holding these bytes.
    pub fn with_slots(slots: [Vec<u8>; 2]) -> Self {
        MemMeta { slots }
    }
}

impl MetaBackend for MemMeta {
    fn read_at(&mut self, slot: usize, off: u64, buf: &mut [u8]) -> io::Result<()> {
        let s = &self.slots[slot & 1];
        buf.fill(0);
        let off = off as usize;
        if off < s.len() {
            let n = (s.len() - off).min(buf.len());
            buf[..n].copy_from_slice(&s[off..off + n]);
        }
        Ok(())
    }

    fn write_at(&mut self, slot: usize, off: u64, data: &[u8]) -> io::Result<()> {
        let s = &mut self.slots[slot & 1];
        let off = off as usize;
        if off == 0 {
            // A checkpoint: whatever followed it is of an older generation; drop it to bound
            // memory.
            s.clear();
        }
        if s.len() < off + data.len() {
            s.resize(off + data.len(), 0);
        }
        s[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn written_end(&mut self, slot: usize) -> Option<u64> {
        self.exact_end(slot)
    }

    fn exact_end(&self, slot: usize) -> Option<u64> {
        Some(self.slots[slot & 1].len() as u64)
    }

    fn image_offset(&self, _slot: usize, _off: u64) -> Option<u64> {
        None
    }
}

/// Slots in a region of a drive image.
pub(crate) struct FileMeta {
    file: File,
    base: u64,
    slot_size: u64,
}

impl FileMeta {
    /// Slot 0 at `base`, slot 1 at `base + slot_size`.
    pub fn new(file: File, base: u64, slot_size: u64) -> Self {
        FileMeta {
            file,
            base,
            slot_size,
        }
    }

    fn at(&self, slot: usize, off: u64) -> u64 {
        self.base + (slot as u64 & 1) * self.slot_size + off
    }
}

impl MetaBackend for FileMeta {
    fn read_at(&mut self, slot: usize, off: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut done = 0;
        let at = self.at(slot, off);
        while done < buf.len() {
            let n = self.file.read_at(&mut buf[done..], at + done as u64)?;
            if n == 0 {
                buf[done..].fill(0);
                break;
            }
            done += n;
        }
        Ok(())
    }

    fn write_at(&mut self, slot: usize, off: u64, data: &[u8]) -> io::Result<()> {
        let at = self.at(slot, off);
        self.file.write_all_at(data, at)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn written_end(&mut self, slot: usize) -> Option<u64> {
        use std::os::fd::AsRawFd;
        // The slots are sparse and their frames contiguous from offset 0: the first hole after
        // the slot's start ends what was ever written there.
        let start = i64::try_from(self.at(slot, 0)).ok()?;
        // SAFETY: lseek on a descriptor this handle owns; it only moves the file offset, which
        // no I/O here uses (all reads and writes are positioned).
        let hole = unsafe { libc::lseek(self.file.as_raw_fd(), start, libc::SEEK_HOLE) };
        if hole < start {
            return None;
        }
        Some((hole - start) as u64)
    }

    fn exact_end(&self, _slot: usize) -> Option<u64> {
        None
    }

    fn image_offset(&self, slot: usize, off: u64) -> Option<u64> {
        Some(self.at(slot, off))
    }
}
