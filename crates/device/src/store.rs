//! Where an emulated drive keeps its sectors: sparse memory, nothing at all (metadata-only
//! simulation of multi-terabyte drives), or a region of a host file.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::readmap::ReadMap;

/// Sector storage behind the media model. Offsets are in bytes from the start of the media.
pub trait Store: Send {
    /// Fills `buf` from `offset`; never-written bytes read as zeros.
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Stores `data` at `offset`.
    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Forgets `len` bytes at `offset` (they read as zeros afterwards).
    fn discard(&mut self, offset: u64, len: u64) -> io::Result<()>;
    /// Makes everything written so far durable on the host.
    fn sync(&mut self) -> io::Result<()>;
    /// Whether data is kept at all (false for metadata-only simulation).
    fn keeps_data(&self) -> bool;
}

const CHUNK: u64 = 64 << 10;

/// Sparse in-memory storage in 64 KiB chunks.
#[derive(Default)]
pub struct MemStore {
    chunks: HashMap<u64, Box<[u8]>>,
}

impl MemStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes of host memory holding data.
    pub fn resident_bytes(&self) -> u64 {
        self.chunks.len() as u64 * CHUNK
    }
}

impl Store for MemStore {
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut done = 0usize;
        while done < buf.len() {
            let pos = offset + done as u64;
            let (ci, co) = (pos / CHUNK, (pos % CHUNK) as usize);
            let n = (CHUNK as usize - co).min(buf.len() - done);
            match self.chunks.get(&ci) {
                Some(c) => buf[done..done + n].copy_from_slice(&c[co..co + n]),
                None => buf[done..done + n].fill(0),
            }
            done += n;
        }
        Ok(())
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut done = 0usize;
        while done < data.len() {
            let pos = offset + done as u64;
            let (ci, co) = (pos / CHUNK, (pos % CHUNK) as usize);
            let n = (CHUNK as usize - co).min(data.len() - done);
            let src = &data[done..done + n];
            match self.chunks.entry(ci) {
                std::collections::hash_map::Entry::Occupied(mut e) => {
                    e.get_mut()[co..co + n].copy_from_slice(src)
                }
                // A whole new chunk is copied in once, not zeroed first.
                std::collections::hash_map::Entry::Vacant(e) if n == CHUNK as usize => {
                    e.insert(src.into());
                }
                std::collections::hash_map::Entry::Vacant(e) => e
                    .insert(vec![0u8; CHUNK as usize].into_boxed_slice())[co..co + n]
                    .copy_from_slice(src),
            }
            done += n;
        }
        Ok(())
    }

    fn discard(&mut self, offset: u64, len: u64) -> io::Result<()> {
        let end = offset + len;
        let mut pos = offset;
        while pos < end {
            let (ci, co) = (pos / CHUNK, pos % CHUNK);
            let n = (CHUNK - co).min(end - pos);
            if n == CHUNK {
                self.chunks.remove(&ci);
            } else if let Some(c) = self.chunks.get_mut(&ci) {
                c[co as usize..(co + n) as usize].fill(0);
            }
            pos += n;
        }
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn keeps_data(&self) -> bool {
        true
    }
}

/// Keeps no data: writes are timed and tracked but their bytes dropped; reads return zeros.
#[derive(Default)]
pub struct NullStore;

impl Store for NullStore {
    fn read(&mut self, _offset: u64, buf: &mut [u8]) -> io::Result<()> {
        buf.fill(0);
        Ok(())
    }
    fn write(&mut self, _offset: u64, _data: &[u8]) -> io::Result<()> {
        Ok(())
    }
    fn discard(&mut self, _offset: u64, _len: u64) -> io::Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn keeps_data(&self) -> bool {
        false
    }
}

/// A region of a host file (a disk image's data area, or a whole plain file or block device).
pub struct FileStore {
    file: File,
    base: u64,
    punch_holes: bool,
    /// With [`FileStore::map_reads`]: the file's first `map_len` bytes mapped, read by copy.
    map: Option<ReadMap>,
    map_len: u64,
}

impl FileStore {
    /// Data lives at `base..` of `file`. With `punch_holes`, discards free host space.
    pub fn new(file: File, base: u64, punch_holes: bool) -> Self {
        FileStore {
            file,
            base,
            punch_holes,
            map: None,
            map_len: 0,
        }
    }

    /// Reads through a shared read-only mapping of the file as long as it is now (no system
    /// call per read; bytes past it are still read with `pread`). A host I/O error under the
    /// mapping then kills the process with `SIGBUS` instead of failing the read.
    pub fn map_reads(mut self, path: &Path) -> crate::error::Result<Self> {
        let len = self
            .file
            .metadata()
            .map_err(|e| crate::error::DeviceError::io(format!("sizing {}", path.display()), e))?
            .len();
        if len > 0 {
            self.map = Some(ReadMap::new(&self.file, len, path)?);
            self.map_len = len;
        }
        Ok(self)
    }
}

impl Store for FileStore {
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if let Some(map) = &self.map {
            let at = self.base + offset;
            if at
                .checked_add(buf.len() as u64)
                .is_some_and(|end| end <= self.map_len)
            {
                return map.read(at, buf).map_err(io::Error::other);
            }
        }
        let mut done = 0;
        while done < buf.len() {
            let n = self
                .file
                .read_at(&mut buf[done..], self.base + offset + done as u64)?;
            if n == 0 {
                // Past the end of a sparse file: unwritten.
                buf[done..].fill(0);
                break;
            }
            done += n;
        }
        Ok(())
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.file.write_all_at(data, self.base + offset)
    }

    fn discard(&mut self, offset: u64, len: u64) -> io::Result<()> {
        if !self.punch_holes || len == 0 {
            return Ok(());
        }
        // SAFETY: fallocate on a valid descriptor with plain integer arguments.
        let r = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                (self.base + offset) as libc::off_t,
                len as libc::off_t,
            )
        };
        if r != 0 {
            let e = io::Error::last_os_error();
            // File systems without hole punching: fall back to writing zeros.
            if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
                self.punch_holes = false;
                let zeros = vec![0u8; (len.min(1 << 20)) as usize];
                let mut pos = 0;
                while pos < len {
                    let n = (len - pos).min(zeros.len() as u64) as usize;
                    self.file
                        .write_all_at(&zeros[..n], self.base + offset + pos)?;
                    pos += n as u64;
                }
                return Ok(());
            }
            return Err(e);
        }
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn keeps_data(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_store_is_sparse_and_zero_filled() {
        let mut s = MemStore::new();
        let mut b = vec![1u8; 10];
        s.read(1 << 40, &mut b).expect("read");
        assert_eq!(b, vec![0; 10]);
        let data: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        s.write(CHUNK - 7, &data).expect("write");
        let mut back = vec![0u8; data.len()];
        s.read(CHUNK - 7, &mut back).expect("read");
        assert_eq!(back, data);
        assert_eq!(s.resident_bytes(), 5 * CHUNK);
        s.discard(0, 10 * CHUNK).expect("discard");
        assert_eq!(s.resident_bytes(), 0);
    }

    #[test]
    fn file_store_reads_through_a_mapping_see_every_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("img");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .expect("create");
        file.set_len(3 * CHUNK).expect("size");
        let mut s = FileStore::new(file, 4096, true)
            .map_reads(&path)
            .expect("map");
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        s.write(1000, &data).expect("write");
        let mut back = vec![0u8; data.len()];
        s.read(1000, &mut back).expect("read");
        assert_eq!(back, data, "a write is seen through the mapping");
        // Discarded bytes read as zeros through the mapping too.
        s.discard(0, CHUNK).expect("discard");
        let mut z = vec![1u8; 100];
        s.read(5000, &mut z).expect("read");
        assert_eq!(z, vec![0u8; 100]);
        // Past the mapped length (the file grew): read with pread, not from the mapping.
        let far = 3 * CHUNK + 10;
        s.write(far, b"grown").expect("write past");
        let mut g = [0u8; 5];
        s.read(far, &mut g).expect("read past");
        assert_eq!(&g, b"grown");
        // A read straddling the end of the mapping takes the pread path whole.
        let mut st = vec![0u8; 8192];
        s.read(3 * CHUNK - 4096 - 4000, &mut st).expect("straddle");
        assert_eq!(&st[4000 + 4096 + 10..4000 + 4096 + 15], b"grown");
    }
}
