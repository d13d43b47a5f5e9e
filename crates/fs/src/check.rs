//! Consistency check with superblock repair, and per-zone statistics (the analogue of
//! ShingledFS's edistats).

use crate::error::Result;
use crate::fs::Fs;
use crate::state::{Kind, ROOT};
use std::collections::{BTreeMap, HashMap};

/// Live and dead bytes of one sequential zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneStat {
    /// Zone index.
    pub zone: u32,
    /// Bytes written (data, ZEA metadata, padding, torn leftovers).
    pub used: u64,
    /// Bytes of file data that the metadata maps into the zone.
    pub live: u64,
    /// `used - live`: what cleaning the zone reclaims.
    pub dead: u64,
    /// Bytes still writable.
    pub free: u64,
    /// `empty`, `user` (taking new data), `gc` (taking moved data), `age<N>` (age fit),
    /// `cleaning`, `open` or `full`.
    pub role: String,
    /// Append records with live bytes in the zone's append log.
    pub appends: u64,
    /// Delete records kept in the zone's delete log.
    pub deletes: u64,
    /// Bytes appended since the zone was last reset.
    pub appended: u64,
    /// Bytes deleted since the zone was last reset.
    pub deleted: u64,
}

/// What a check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Inconsistencies, each naming what and where (empty when the file system is clean).
    pub problems: Vec<String>,
    /// Regular files.
    pub files: u64,
    /// Directories.
    pub dirs: u64,
    /// Mapped pieces.
    pub pieces: u64,
    /// Bytes of file data read back and checksummed (deep check only).
    pub verified: u64,
    /// Inodes no name refers to (unlinked while open or while the kernel still held them,
    /// and the mount stopped before freeing them): not a problem, the next read-write mount
    /// frees them.
    pub orphans: u64,
}

/// State of the metadata log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaStat {
    /// Checkpoint generation.
    pub generation: u64,
    /// Log sectors written since that checkpoint.
    pub log_used: u64,
    /// Log capacity in sectors.
    pub log_sectors: u64,
    /// Inodes.
    pub inodes: u64,
    /// Zones cleaned since mount.
    pub cleanings: u64,
    /// Of those, tail cleanings.
    pub tail_cleanings: u64,
    /// Bytes of new file data written since mount.
    pub user_bytes: u64,
    /// Bytes the cleaner moved since mount.
    pub moved_bytes: u64,
    /// Bytes the cleaner freed since mount.
    pub reclaimed_bytes: u64,
    /// The mount dropped the log's last record, which mapped data that never reached the
    /// media: a commit cut by a power loss before its flush completed (never acknowledged).
    pub dropped_unacknowledged: bool,
    /// First LBA of the log.
    pub log_lba: u64,
    /// LBA of the slot holding the current checkpoint.
    pub checkpoint_lba: u64,
}

impl Fs {
    /// Checkpoint generation and log use.
    pub fn meta_stats(&self) -> MetaStat {
        MetaStat {
            generation: self.journal.generation(),
            log_used: self.journal.log_used(),
            log_sectors: self.journal.superblock().log_sectors,
            inodes: self.state.inodes.len() as u64,
            cleanings: self.cleanings,
            tail_cleanings: self.tail_cleanings,
            user_bytes: self.user_bytes,
            moved_bytes: self.moved_bytes,
            reclaimed_bytes: self.reclaimed_bytes,
            dropped_unacknowledged: self.dropped_unacknowledged,
            log_lba: self.journal.superblock().log_lba,
            checkpoint_lba: self.journal.checkpoint_lba(),
        }
    }

    /// Live and dead bytes of every sequential zone.
    pub fn zone_stats(&self) -> Vec<ZoneStat> {
        self.pool
            .seq_zones()
            .map(|z| {
                let used = self.pool.used_bytes(z);
                let live = self.state.zone_live.get(z as usize).copied().unwrap_or(0);
                let free = self.pool.zone_bytes() - used;
                let log = self.state.zlogs.zone(z);
                ZoneStat {
                    zone: z,
                    used,
                    live,
                    dead: used.saturating_sub(live),
                    free,
                    role: self.zone_role(z),
                    appends: log.map_or(0, |l| l.append_records() as u64),
                    deletes: log.map_or(0, |l| l.delete_records() as u64),
                    appended: log.map_or(0, |l| l.appended_bytes()),
                    deleted: log.map_or(0, |l| l.deleted_bytes()),
                }
            })
            .collect()
    }

    /// Checks both superblock copies, the metadata log, the namespace, link counts, extent
    /// maps and zone accounting; with `deep`, also reads every mapped byte back through its checksums.
    pub fn check(&mut self, deep: bool) -> Result<CheckReport> {
        let mut r = CheckReport::default();
        // The mount falls back to copy B when copy A is bad; the fallback must not hide it.
        let (in_use, _) = self.journal.superblock_copy();
        for b in self.journal.bad_superblock_copies() {
            r.problems.push(format!(
                "superblock copy {} (LBA {}): {} (the mount uses copy {in_use}; \
                 `tegula fs check --repair` rewrites it)",
                b.name, b.lba, b.why
            ));
        }
        // The metadata log as a mount would replay it: damage there is a problem too.
        if let Some(p) = self.journal.verify_log() {
            r.problems.push(p);
        }
        let mut names: HashMap<u64, u32> = HashMap::new();
        let mut subdirs: HashMap<u64, u32> = HashMap::new();
        let mut live = vec![0u64; self.state.zone_live.len()];
        // (zone, lba) -> list of (ext_off, len) to detect two files sharing stored bytes.
        let mut uses: BTreeMap<(u32, u64), Vec<ExtentUse>> = BTreeMap::new();
        let sector = self.pool.sector();
        if self.state.get(ROOT).map(|n| n.kind) != Some(Kind::Dir) {
            r.problems
                .push("root inode missing or not a directory".into());
        }
        for (&ino, n) in &self.state.inodes {
            match n.kind {
                Kind::File => r.files += 1,
                Kind::Dir => r.dirs += 1,
                _ => {}
            }
            for (name, &c) in &n.entries {
                let show = String::from_utf8_lossy(name);
                match self.state.get(c) {
                    None => r.problems.push(format!(
                        "entry {show:?} in dir {ino} names missing inode {c}"
                    )),
                    Some(cn) => {
                        *names.entry(c).or_default() += 1;
                        if cn.kind == Kind::Dir {
                            *subdirs.entry(ino).or_default() += 1;
                            if cn.parent != ino {
                                r.problems.push(format!(
                                    "dir {c} is in dir {ino} but records parent {}",
                                    cn.parent
                                ));
                            }
                        }
                    }
                }
            }
            let mut prev_end = 0u64;
            for (&off, p) in &n.map {
                r.pieces += 1;
                if off < prev_end {
                    r.problems
                        .push(format!("inode {ino}: pieces overlap at {off}"));
                }
                prev_end = off + p.len;
                if prev_end > n.size {
                    r.problems.push(format!(
                        "inode {ino}: piece at {off} ends past size {}",
                        n.size
                    ));
                }
                if p.len == 0 || p.ext_off + p.len > p.ext_len {
                    r.problems
                        .push(format!("inode {ino}: piece at {off} outside its extent"));
                }
                match (self.pool.start_lba(p.zone), self.pool.write_pointer(p.zone)) {
                    (Some(start), Some(wp)) => {
                        let end = p.ext_lba + p.ext_len.div_ceil(sector) + 1;
                        if p.ext_lba < start || end > wp {
                            r.problems.push(format!(
                                "inode {ino}: extent at LBA {} of zone {} is not below the write pointer {wp}",
                                p.ext_lba, p.zone
                            ));
                        }
                    }
                    _ => r.problems.push(format!(
                        "inode {ino}: piece at {off} in non-sequential zone {}",
                        p.zone
                    )),
                }
                if let Some(v) = live.get_mut(p.zone as usize) {
                    *v += p.len;
                }
                uses.entry((p.zone, p.ext_lba))
                    .or_default()
                    .push((p.ext_off, p.len, ino));
            }
        }
        for (&ino, n) in &self.state.inodes {
            let want = match n.kind {
                Kind::Dir if ino == ROOT => 2 + subdirs.get(&ino).copied().unwrap_or(0),
                Kind::Dir => 2 + subdirs.get(&ino).copied().unwrap_or(0),
                _ => names.get(&ino).copied().unwrap_or(0),
            };
            let unnamed = ino != ROOT && names.get(&ino).copied().unwrap_or(0) == 0;
            if n.nlink == 0 && unnamed {
                r.orphans += 1;
                continue;
            }
            if n.nlink != want {
                r.problems.push(format!(
                    "inode {ino}: nlink {} but {want} expected",
                    n.nlink
                ));
            }
            if ino != ROOT && names.get(&ino).copied().unwrap_or(0) == 0 && n.nlink != 0 {
                r.problems
                    .push(format!("inode {ino} is not in any directory"));
            }
        }
        if live != self.state.zone_live {
            r.problems
                .push("per-zone live bytes do not match the extent maps".into());
        }
        // The per-zone append and delete logs must name exactly the mapped pieces.
        let mut from_maps: Vec<(u32, u64, u64, u64, u64, u64)> = self
            .state
            .inodes
            .iter()
            .flat_map(|(&i, n)| {
                n.map
                    .iter()
                    .map(move |(&o, p)| (p.zone, p.ext_lba, p.ext_off, p.len, i, o))
            })
            .collect();
        from_maps.sort_unstable();
        let mut from_logs: Vec<(u32, u64, u64, u64, u64, u64)> = self
            .pool
            .seq_zones()
            .flat_map(|z| self.state.zlogs.live_pieces(z))
            .map(|l| {
                (
                    l.piece.zone,
                    l.piece.ext_lba,
                    l.piece.ext_off,
                    l.piece.len,
                    l.ino,
                    l.off,
                )
            })
            .collect();
        from_logs.sort_unstable();
        if from_maps != from_logs {
            let first = from_maps
                .iter()
                .zip(&from_logs)
                .find(|(a, b)| a != b)
                .map(|(a, b)| format!(": maps have {a:?}, logs {b:?}"))
                .unwrap_or_default();
            r.problems.push(format!(
                "per-zone append/delete logs do not match the extent maps ({} pieces mapped, {} live in the logs{first})",
                from_maps.len(),
                from_logs.len()
            ));
        }
        for ((zone, lba), mut v) in uses {
            v.sort_unstable();
            for w in v.windows(2) {
                if w[0].0 + w[0].1 > w[1].0 {
                    r.problems.push(format!(
                        "zone {zone} extent at LBA {lba} is mapped twice (inodes {} and {})",
                        w[0].2, w[1].2
                    ));
                }
            }
        }
        // Every mapped extent must be exactly an extent ZEA placed.
        let pieces: Vec<(u64, u64, crate::state::Piece)> = self
            .state
            .inodes
            .iter()
            .flat_map(|(&i, n)| n.map.iter().map(move |(&o, &p)| (i, o, p)))
            .collect();
        for (ino, off, p) in pieces {
            if let Err(e) = self.pool.meta(&p) {
                r.problems.push(format!("inode {ino}: piece at {off}: {e}"));
                continue;
            }
            if deep {
                match self.pool.read(&p, 0, p.len) {
                    Ok(_) => r.verified += p.len,
                    Err(e) => r.problems.push(format!("inode {ino}: data at {off}: {e}")),
                }
            }
        }
        Ok(r)
    }
}

impl Fs {
    /// Rewrites every superblock copy that [`Fs::check`] reports as bad (unreadable, damaged
    /// or different) from the superblock in use, as e2fsck rewrites a primary superblock from
    /// its backup. Returns one line per copy rewritten (none when both are good). Needs a
    /// writable mount; a failed write leaves the file system refusing writes.
    pub fn repair_superblocks(&mut self) -> Result<Vec<String>> {
        self.writable()?;
        let (in_use, _) = self.journal.superblock_copy();
        let mut fixed = Vec::new();
        for b in self.journal.bad_superblock_copies() {
            if let Err(e) = self.journal.rewrite_superblock_copy(b.lba) {
                self.broken = Some(e.to_string());
                return Err(e);
            }
            fixed.push(format!(
                "superblock copy {} (LBA {}) rewritten from copy {in_use}: it was {}",
                b.name, b.lba, b.why
            ));
        }
        Ok(fixed)
    }
}

/// One file's use of stored bytes: (offset in the extent, length, inode).
type ExtentUse = (u64, u64, u64);
