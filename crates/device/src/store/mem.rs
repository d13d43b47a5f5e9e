//! Sparse in-memory sector storage: 64 KiB chunks allocated as they are written, and whole
//! 1 MiB blocks kept as the buffers they were written from (no copy).

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::io;

use super::Store;

/// Unit of allocation for data written by copy.
const CHUNK: u64 = 64 << 10;
/// An aligned block of this size written from an owned buffer keeps that buffer.
const BLOCK: u64 = 1 << 20;
const CHUNKS_PER_BLOCK: u64 = BLOCK / CHUNK;

/// Sparse in-memory storage. Each aligned 1 MiB block of the media is either a buffer of its
/// own (written whole by [`Store::write_owned`]) or any set of 64 KiB chunks; bytes in neither
/// read as zeros.
#[derive(Default)]
pub struct MemStore {
    chunks: HashMap<u64, Box<[u8]>>,
    blocks: HashMap<u64, Vec<u8>>,
}

impl MemStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes of host memory holding data.
    pub fn resident_bytes(&self) -> u64 {
        self.chunks.len() as u64 * CHUNK + self.blocks.len() as u64 * BLOCK
    }

    /// The piece of the media at `pos` that one allocation holds: the block buffer and the
    /// offset in it, or the chunk index and offset, and how many bytes up to `limit` it covers.
    fn piece(&self, pos: u64, limit: usize) -> (Piece, usize) {
        let bi = pos / BLOCK;
        if self.blocks.contains_key(&bi) {
            let bo = (pos % BLOCK) as usize;
            (Piece::Block(bi, bo), (BLOCK as usize - bo).min(limit))
        } else {
            let co = (pos % CHUNK) as usize;
            (
                Piece::Chunk(pos / CHUNK, co),
                (CHUNK as usize - co).min(limit),
            )
        }
    }
}

/// Where one piece of a read or write lands.
enum Piece {
    /// Block index and offset in it.
    Block(u64, usize),
    /// Chunk index and offset in it.
    Chunk(u64, usize),
}

impl Store for MemStore {
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut done = 0usize;
        while done < buf.len() {
            let (piece, n) = self.piece(offset + done as u64, buf.len() - done);
            let out = &mut buf[done..done + n];
            let src = match piece {
                Piece::Block(bi, bo) => self.blocks.get(&bi).map(|b| &b[bo..bo + n]),
                Piece::Chunk(ci, co) => self.chunks.get(&ci).map(|c| &c[co..co + n]),
            };
            match src {
                Some(s) => out.copy_from_slice(s),
                None => out.fill(0),
            }
            done += n;
        }
        Ok(())
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut done = 0usize;
        while done < data.len() {
            let (piece, n) = self.piece(offset + done as u64, data.len() - done);
            let src = &data[done..done + n];
            match piece {
                Piece::Block(bi, bo) => {
                    if let Some(b) = self.blocks.get_mut(&bi) {
                        b[bo..bo + n].copy_from_slice(src);
                    }
                }
                Piece::Chunk(ci, co) => match self.chunks.entry(ci) {
                    Entry::Occupied(mut e) => e.get_mut()[co..co + n].copy_from_slice(src),
                    // A whole new chunk is copied in once, not zeroed first.
                    Entry::Vacant(e) if n == CHUNK as usize => {
                        e.insert(src.into());
                    }
                    Entry::Vacant(e) => e.insert(vec![0u8; CHUNK as usize].into_boxed_slice())
                        [co..co + n]
                        .copy_from_slice(src),
                },
            }
            done += n;
        }
        Ok(())
    }

    fn write_owned(&mut self, offset: u64, data: Vec<u8>) -> io::Result<Option<Vec<u8>>> {
        // Kept only when it is exactly one aligned block (a larger allocation would hold
        // memory the block does not use).
        if !offset.is_multiple_of(BLOCK)
            || data.len() as u64 != BLOCK
            || data.capacity() != data.len()
        {
            self.write(offset, &data)?;
            return Ok(Some(data));
        }
        let bi = offset / BLOCK;
        for ci in bi * CHUNKS_PER_BLOCK..(bi + 1) * CHUNKS_PER_BLOCK {
            self.chunks.remove(&ci);
        }
        Ok(self.blocks.insert(bi, data))
    }

    fn discard(&mut self, offset: u64, len: u64) -> io::Result<()> {
        let end = offset + len;
        let mut pos = offset;
        while pos < end {
            let (piece, n) = self.piece(pos, usize::try_from(end - pos).unwrap_or(usize::MAX));
            match piece {
                Piece::Block(bi, 0) if n as u64 == BLOCK => {
                    self.blocks.remove(&bi);
                }
                Piece::Block(bi, bo) => {
                    if let Some(b) = self.blocks.get_mut(&bi) {
                        b[bo..bo + n].fill(0);
                    }
                }
                Piece::Chunk(ci, 0) if n as u64 == CHUNK => {
                    self.chunks.remove(&ci);
                }
                Piece::Chunk(ci, co) => {
                    if let Some(c) = self.chunks.get_mut(&ci) {
                        c[co..co + n].fill(0);
                    }
                }
            }
            pos += n as u64;
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
    fn an_owned_aligned_block_is_kept_without_a_copy_and_replaces_its_chunks() {
        let mut s = MemStore::new();
        s.write(BLOCK + 5, &[9u8; 100]).expect("write");
        assert_eq!(s.resident_bytes(), CHUNK);
        let block = vec![3u8; BLOCK as usize];
        let ptr = block.as_ptr();
        assert!(s.write_owned(BLOCK, block).expect("owned").is_none());
        assert_eq!(
            s.resident_bytes(),
            BLOCK,
            "the chunk under the block is gone"
        );
        assert_eq!(
            s.blocks.get(&1).map(|b| b.as_ptr()),
            Some(ptr),
            "kept, not copied"
        );
        // A second owned write gives the first buffer back.
        let back = s
            .write_owned(BLOCK, vec![4u8; BLOCK as usize])
            .expect("owned")
            .expect("the replaced buffer");
        assert_eq!(back.as_ptr(), ptr);
        // Unaligned or short owned writes are copied and handed back.
        let short = s
            .write_owned(3, vec![5u8; 10])
            .expect("short")
            .expect("back");
        assert_eq!(short.len(), 10);
    }

    proptest! {
        /// Any mix of copied writes, owned writes and discards reads back as a flat model.
        #[test]
        fn matches_a_flat_model(ops in proptest::collection::vec(
            (0u8..3, 0u64..(4 * BLOCK), 1usize..(BLOCK as usize + 5000), any::<u8>()), 1..30)) {
            let size = 6 * BLOCK as usize;
            let mut model = vec![0u8; size];
            let mut s = MemStore::new();
            for (kind, at, len, v) in ops {
                match kind {
                    0 => {
                        s.write(at, &vec![v; len]).expect("write");
                        model[at as usize..at as usize + len].fill(v);
                    }
                    1 => {
                        // Aligned to a block: kept whole when `len` is a block.
                        let at = at / BLOCK * BLOCK;
                        let len = if v % 2 == 0 { BLOCK as usize } else { len };
                        s.write_owned(at, vec![v; len]).expect("owned");
                        model[at as usize..at as usize + len].fill(v);
                    }
                    _ => {
                        s.discard(at, len as u64).expect("discard");
                        model[at as usize..at as usize + len].fill(0);
                    }
                }
            }
            let mut back = vec![1u8; size];
            s.read(0, &mut back).expect("read");
            prop_assert!(back == model);
        }
    }
}
