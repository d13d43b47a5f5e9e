//! Where an emulated drive keeps its sectors: sparse memory, nothing at all (metadata-only
//! simulation of multi-terabyte drives), or a region of a host file.

use std::io;

mod file;
mod mem;

pub use file::FileStore;
pub use mem::MemStore;

/// Sector storage behind the media model. Offsets are in bytes from the start of the media.
pub trait Store: Send {
    /// Fills `buf` from `offset`; never-written bytes read as zeros.
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Stores `data` at `offset`.
    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Stores `data` at `offset` from a buffer the store may keep instead of copying it;
    /// returns a buffer for reuse (the given one, one the store let go, or none).
    fn write_owned(&mut self, offset: u64, data: Vec<u8>) -> io::Result<Option<Vec<u8>>> {
        self.write(offset, &data)?;
        Ok(Some(data))
    }
    /// Forgets `len` bytes at `offset` (they read as zeros afterwards).
    fn discard(&mut self, offset: u64, len: u64) -> io::Result<()>;
    /// Makes everything written so far durable on the host.
    fn sync(&mut self) -> io::Result<()>;
    /// Whether data is kept at all (false for metadata-only simulation).
    fn keeps_data(&self) -> bool;
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
