//! The basic cleaner: pick the zone with the most dead bytes, relocate its live pieces to the
//! cleaning zone, commit the new mappings, then reset the zone. The commit comes before the
//! reset, so a crash at any point leaves every live byte reachable.

use crate::error::{FsError, Result};
use crate::fs::Fs;
use crate::state::{Op, Piece};

/// What one cleaning pass did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CleanReport {
    /// Zone reset.
    pub zone: u32,
    /// Live bytes relocated.
    pub moved: u64,
    /// Bytes reclaimed (written bytes of the zone less those moved).
    pub reclaimed: u64,
}

impl Fs {
    /// The zone the cleaner would pick: most dead bytes, not being written, not empty.
    pub fn clean_victim(&self) -> Option<(u32, u64)> {
        self.pool
            .seq_zones()
            .filter(|&z| {
                Some(z) != self.active_user
                    && Some(z) != self.active_gc
                    && !self.bad_zones.contains(&z)
                    && !self.pool.is_empty(z)
            })
            .map(|z| {
                let used = self.pool.used_bytes(z);
                let live = self.state.zone_live.get(z as usize).copied().unwrap_or(0);
                (z, used.saturating_sub(live))
            })
            .filter(|&(_, dead)| dead > 0)
            .max_by_key(|&(z, dead)| (dead, std::cmp::Reverse(z)))
    }

    /// Cleans one zone. Returns false when no zone has dead bytes worth reclaiming.
    pub(crate) fn clean_one(&mut self) -> Result<bool> {
        Ok(self.clean()?.is_some())
    }

    /// Cleans the zone with the most dead bytes; `None` when there is nothing to reclaim.
    pub fn clean(&mut self) -> Result<Option<CleanReport>> {
        self.writable()?;
        let Some((victim, _)) = self.clean_victim() else {
            return Ok(None);
        };
        let live = self.state.zone_live[victim as usize];
        let used = self.pool.used_bytes(victim);
        // Relocating must leave room: the live data plus a metadata block per piece.
        let pieces: Vec<(u64, u64, Piece)> = self
            .state
            .inodes
            .iter()
            .flat_map(|(&ino, n)| {
                n.map
                    .iter()
                    .filter(|(_, p)| p.zone == victim)
                    .map(move |(&off, &p)| (ino, off, p))
            })
            .collect();
        let need = live + (pieces.len() as u64 + 1) * 2 * self.pool.sector();
        if used.saturating_sub(need) == 0 {
            return Ok(None);
        }
        let mut moved = 0;
        for (ino, off, p) in pieces {
            let data = match self.pool.read(&p, 0, p.len) {
                Ok(d) => d,
                Err(e) => {
                    // Leave a zone with unreadable live data alone (its data stays in place).
                    eprintln!("tegula-fs: cleaner skips zone {victim}: {e}");
                    self.bad_zones.push(victim);
                    return Err(e);
                }
            };
            let mut done = 0usize;
            while done < data.len() {
                let zone = self.gc_zone()?;
                let n = (data.len() - done)
                    .min(self.pool.max_put(zone) as usize)
                    .min(self.opts.max_extent as usize);
                let at = off + done as u64;
                let placed = self
                    .pool
                    .put(zone, at, ino, &data[done..done + n])
                    .inspect_err(|e| {
                        if !matches!(e, FsError::NoSpace(_)) {
                            self.broken = Some(e.to_string());
                        }
                    })?;
                self.log(Op::Map {
                    ino,
                    off: at,
                    piece: Piece {
                        len: n as u64,
                        zone,
                        ext_lba: placed.lba,
                        ext_len: n as u64,
                        ext_off: 0,
                    },
                    mtime: None,
                })?;
                done += n;
            }
            moved += p.len;
        }
        self.commit()?;
        if let Err(e) = self.pool.reset(victim) {
            self.broken = Some(e.to_string());
            return Err(e);
        }
        self.cleanings += 1;
        Ok(Some(CleanReport {
            zone: victim,
            moved,
            reclaimed: used - moved,
        }))
    }
}
