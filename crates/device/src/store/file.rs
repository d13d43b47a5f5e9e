//! A region of a host file as an emulated drive's sector storage.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use super::Store;
use crate::readmap::ReadMap;

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

    const CHUNK: u64 = 64 << 10;

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
