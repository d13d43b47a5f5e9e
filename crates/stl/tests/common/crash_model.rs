//! The reference model of the crash tests: patterned 4 KiB blocks and, per block, the versions
//! it may read back as after a crash. Shared by `crates/stl/tests/crash.rs` (a killed process
//! emulated in process) and `crates/tegula/tests/kill9_nbd.rs` (SIGKILL of `tegula serve nbd`),
//! which includes this file by path.
#![allow(dead_code)] // each test binary uses a different subset

/// Bytes in a block.
pub const BLOCK: usize = 4096;

/// The contents of `block` at `version` (version 0: never written, zeros).
pub fn pattern(block: u64, version: u32) -> Vec<u8> {
    let mut v = vec![0u8; BLOCK];
    if version == 0 {
        return v;
    }
    let tag = (block << 32) | u64::from(version);
    for (i, c) in v.chunks_mut(8).enumerate() {
        let w = tag
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(i as u64)
            .rotate_left(23);
        c.copy_from_slice(&w.to_le_bytes());
    }
    v[..8].copy_from_slice(&tag.to_le_bytes());
    v
}

/// Per block, the values it may read back as: the first is durable, the rest were written
/// after it and may or may not have reached the drive.
pub struct Model {
    /// Per block, its candidate versions.
    pub cands: Vec<Vec<u32>>,
    /// The last version handed out.
    pub next: u32,
}

impl Model {
    /// `blocks` blocks, never written.
    pub fn new(blocks: usize) -> Self {
        Model {
            cands: vec![vec![0]; blocks],
            next: 0,
        }
    }

    /// A version for the next write.
    pub fn next_version(&mut self) -> u32 {
        self.next += 1;
        self.next
    }

    /// A write of `versions` at `first` was acknowledged (`durable`: FUA or no volatile
    /// cache) or may have happened (`acked` false).
    pub fn written(&mut self, first: u64, versions: &[u32], acked: bool, durable: bool) {
        for (i, &v) in versions.iter().enumerate() {
            let c = &mut self.cands[first as usize + i];
            if acked && durable {
                *c = vec![v];
            } else {
                c.push(v);
            }
        }
    }

    /// A FLUSH was acknowledged: the last acknowledged value of every block is durable.
    pub fn flushed(&mut self) {
        for c in &mut self.cands {
            let last = *c.last().unwrap_or(&0);
            *c = vec![last];
        }
    }

    /// Checks one block read back against its candidates; what it holds becomes durable.
    pub fn settle(&mut self, blk: u64, got: &[u8], what: &str) {
        let c = &mut self.cands[blk as usize];
        let Some(&v) = c.iter().find(|&&v| pattern(blk, v) == got) else {
            let word = u64::from_le_bytes(got[..8].try_into().unwrap_or_default());
            let known = (1..=self.next).any(|v| pattern(blk, v) == got);
            panic!(
                "{what}: block {blk} reads back as none of versions {c:?} (first word {word:#x}; \
                 {})",
                if known {
                    "an older value of this block: an acknowledged write was lost"
                } else {
                    "garbage"
                }
            );
        };
        *c = vec![v];
    }
}
