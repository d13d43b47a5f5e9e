//! The writes to sequential zones since the last save of a banded file's zone state, as runs
//! with the running CRC-32C of their bytes: what the next save lists so that it can go to disk
//! with the same `fdatasync` as the data (see [`super::format`]). Past a byte or run budget the
//! tracker gives up and the next save syncs the data first.

use super::format::{Run, MAX_RUNS};

/// Unsynced bytes above which a save syncs the data before writing its record: bounds what
/// opening must read back to check the newest record.
pub const MAX_UNSYNCED_BYTES: u64 = 4 << 20;

/// Writes since the last save.
#[derive(Debug, Default)]
pub struct Unsynced {
    runs: Vec<Run>,
    bytes: u64,
    /// Writes were made that no run describes (over budget, or a write pointer moved back):
    /// the next save must sync the data before its record.
    untracked: bool,
    /// Writes recorded so far (the counter [`Unsynced::mark`] returns).
    writes: u64,
}

/// A point in the write sequence (from [`Unsynced::mark`]).
#[derive(Debug, Clone, Copy)]
pub struct Mark(u64);

impl Unsynced {
    /// Records a write of `data` at `lba` (`sectors` long) to sequential zone `zone`.
    pub fn wrote(&mut self, zone: u32, lba: u64, sectors: u64, data: &[u8]) {
        self.writes += 1;
        if self.untracked || self.bytes + data.len() as u64 > MAX_UNSYNCED_BYTES {
            self.untrack();
            return;
        }
        let full = self.runs.len() >= MAX_RUNS;
        match self.runs.iter_mut().rev().find(|r| r.zone == zone) {
            Some(r) if r.to == lba => {
                r.crc = tegula_codec::checksum::crc32c_append(r.crc, data);
                r.to += sectors;
            }
            Some(_) => return self.untrack(),
            None if full => return self.untrack(),
            None => self.runs.push(Run {
                zone,
                from: lba,
                to: lba + sectors,
                crc: tegula_codec::checksum::crc32c(data),
            }),
        }
        self.bytes += data.len() as u64;
    }

    fn untrack(&mut self) {
        self.untracked = true;
        self.runs.clear();
        self.bytes = 0;
    }

    /// Zone `zone` was reset: its unsynced data no longer matters.
    pub fn reset(&mut self, zone: u32, sector_size: u64) {
        let before = self.runs.len();
        self.runs.retain(|r| r.zone != zone);
        if self.runs.len() != before {
            self.bytes = self
                .runs
                .iter()
                .map(|r| (r.to - r.from) * sector_size)
                .sum();
        }
    }

    /// Zone `zone`'s write pointer moved back to `lba`: a run past it no longer describes the
    /// zone, so the next save syncs first.
    pub fn rewound(&mut self, zone: u32, lba: u64) {
        if self.runs.iter().any(|r| r.zone == zone && r.to > lba) {
            self.writes += 1;
            self.untrack();
        }
    }

    /// Whether the next save can list the unsynced writes instead of syncing them first.
    pub fn tracked(&self) -> bool {
        !self.untracked
    }

    /// The runs the next save lists.
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// Everything written is durable and saved.
    pub fn clear(&mut self) {
        self.runs.clear();
        self.bytes = 0;
        self.untracked = false;
    }

    /// The current point, for [`Unsynced::synced_to`] after a sync that started here.
    pub fn mark(&self) -> Mark {
        Mark(self.writes)
    }

    /// A sync that started at `m` completed. With no write since, everything is durable and
    /// nothing need be listed; otherwise the runs (which still checksum their durable parts)
    /// or the untracked state stand.
    pub fn synced_to(&mut self, m: Mark) {
        if self.writes == m.0 {
            self.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_writes_to_a_zone_make_one_run_with_the_checksum_of_all_their_bytes() {
        let mut u = Unsynced::default();
        u.wrote(3, 100, 1, &[1u8; 4096]);
        u.wrote(3, 101, 2, &[2u8; 8192]);
        u.wrote(5, 500, 1, &[3u8; 4096]);
        let mut all = vec![1u8; 4096];
        all.extend_from_slice(&[2u8; 8192]);
        assert_eq!(
            u.runs(),
            &[
                Run {
                    zone: 3,
                    from: 100,
                    to: 103,
                    crc: tegula_codec::checksum::crc32c(&all)
                },
                Run {
                    zone: 5,
                    from: 500,
                    to: 501,
                    crc: tegula_codec::checksum::crc32c(&[3u8; 4096])
                }
            ]
        );
        assert!(u.tracked());
        u.reset(3, 4096);
        assert_eq!(u.runs().len(), 1);
        u.rewound(5, 500);
        assert!(!u.tracked(), "a rewind into a run leaves it untracked");
        u.clear();
        assert!(u.tracked() && u.runs().is_empty());
    }

    #[test]
    fn over_budget_the_tracker_gives_up_until_a_sync_covers_it() {
        let mut u = Unsynced::default();
        let big = vec![0u8; 1 << 20];
        for i in 0..5 {
            u.wrote(2, i * 256, 256, &big);
        }
        assert!(!u.tracked());
        let m = u.mark();
        u.synced_to(m);
        assert!(u.tracked(), "a sync after the last write covers everything");
        u.wrote(2, 5 * 256, 256, &big);
        u.wrote(2, 6 * 256, 256, &big);
        u.wrote(2, 7 * 256, 256, &big);
        u.wrote(2, 8 * 256, 256, &big);
        u.wrote(2, 9 * 256, 256, &big);
        let m = u.mark();
        u.wrote(2, 10 * 256, 256, &big);
        u.synced_to(m);
        assert!(!u.tracked(), "a write after the sync started is in no run");
    }
}
