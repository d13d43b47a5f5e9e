//! Per-track state: who owns each track and how many of its sectors hold valid data.

use crate::layout::{Layout, Role};

/// Who a track belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Safe region or guard: never allocated.
    Reserved,
    /// Free for allocation.
    Free,
    /// Its file was deleted, but the durable map still lists the file: its data stays valid
    /// (protected by read-modify-write) until the next map write frees it.
    Pending,
    /// Holds (or will hold) data of this file.
    File(u64),
}

/// The state of every track.
#[derive(Debug, Clone)]
pub struct TrackState {
    /// Owner of each track.
    pub owner: Vec<Owner>,
    /// Valid sectors at the start of each track (written data of a live or pending file).
    pub written: Vec<u32>,
    /// Sectors of data tracks that are not free (owned or pending).
    pub used_sectors: u64,
    /// Of those, sectors of pending tracks (free at the next map write).
    pub pending_sectors: u64,
}

impl TrackState {
    /// Every data track free, safe and guard tracks reserved.
    pub fn new(layout: &Layout) -> Self {
        let owner = layout
            .role
            .iter()
            .map(|r| match r {
                Role::Data => Owner::Free,
                _ => Owner::Reserved,
            })
            .collect();
        TrackState {
            owner,
            written: vec![0; layout.tracks.len()],
            used_sectors: 0,
            pending_sectors: 0,
        }
    }

    /// Whether track `t` is free.
    pub fn is_free(&self, t: u32) -> bool {
        self.owner[t as usize] == Owner::Free
    }

    /// Whether track `t` holds data that must not be lost.
    pub fn is_valid(&self, t: u32) -> bool {
        self.written[t as usize] > 0
            && matches!(self.owner[t as usize], Owner::File(_) | Owner::Pending)
    }

    /// Gives free track `t` to `file`.
    pub fn take(&mut self, layout: &Layout, t: u32, file: u64) {
        debug_assert!(self.is_free(t));
        self.owner[t as usize] = Owner::File(file);
        self.written[t as usize] = 0;
        self.used_sectors += layout.track(t).sectors as u64;
    }

    /// Marks track `t` of a deleted file pending (freed at the next map write).
    pub fn release(&mut self, layout: &Layout, t: u32) {
        if self.owner[t as usize] != Owner::Pending {
            self.pending_sectors += layout.track(t).sectors as u64;
        }
        self.owner[t as usize] = Owner::Pending;
    }

    /// Frees every pending track; returns how many.
    pub fn free_pending(&mut self, layout: &Layout) -> usize {
        let mut n = 0;
        for (i, o) in self.owner.iter_mut().enumerate() {
            if *o == Owner::Pending {
                *o = Owner::Free;
                self.written[i] = 0;
                self.used_sectors -= layout.tracks[i].sectors as u64;
                n += 1;
            }
        }
        self.pending_sectors = 0;
        n
    }

    /// Whether any track is pending.
    pub fn any_pending(&self) -> bool {
        self.owner.contains(&Owner::Pending)
    }

    /// Fraction of data-track sectors in use.
    pub fn usage(&self, layout: &Layout) -> f64 {
        self.used_sectors as f64 / layout.data_sectors.max(1) as f64
    }

    /// Fraction of data-track sectors owned by live files (pending tracks left out).
    pub fn live_usage(&self, layout: &Layout) -> f64 {
        (self.used_sectors - self.pending_sectors) as f64 / layout.data_sectors.max(1) as f64
    }

    /// Sectors of data tracks a new allocation can take: free tracks, and pending ones (a map
    /// write frees them when an allocation needs them).
    pub fn room(&self, layout: &Layout) -> u64 {
        layout.data_sectors - (self.used_sectors - self.pending_sectors)
    }
}
