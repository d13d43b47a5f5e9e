//! Which zone the next extent goes to: the candidates placement may choose from, the
//! streams that remember the zone each kind of data used last, and the zones held by writers
//! working outside the file system's lock.

use super::Fs;
use crate::error::{FsError, Result};
use crate::placement::{age_class, choose, Candidate, Placement};

/// A stream of extents that fills zones of its own: new data of files, data the cleaner
/// moves, or (age fit) the data of one age class, new or moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Stream {
    /// New file data.
    User,
    /// Data moved by the cleaner.
    Gc,
    /// Data of files of one age class (age fit).
    Age(u8),
}

impl Fs {
    /// The placement policy in force (the mount's choice, else mkfs's).
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// The stream that data of `ino` goes to (`moved`: by the cleaner).
    pub(crate) fn stream_of(&self, ino: u64, moved: bool) -> Stream {
        match (self.placement, moved) {
            (Placement::AgeFit, _) => Stream::Age(age_class(ino, self.state.next_ino) as u8),
            (_, false) => Stream::User,
            (_, true) => Stream::Gc,
        }
    }

    /// Zones placement may write: sequential, not failed, not being cleaned, not held by a
    /// writer outside the lock.
    pub(crate) fn candidates(&self) -> Vec<Candidate> {
        let victim = self.job.as_ref().map(|j| j.zone);
        // On a device that limits its active zones, no empty zone is offered once the limit
        // is reached: data goes to the partly written zones until one fills.
        let max_active = self.pool.max_active() as usize;
        let at_limit = max_active > 0
            && self
                .pool
                .seq_zones()
                .filter(|&z| self.pool.is_active(z))
                .count()
                >= max_active;
        self.pool
            .seq_zones()
            .filter(|z| {
                Some(*z) != victim && !self.bad_zones.contains(z) && !self.leased.contains(z)
            })
            .filter(|&z| !at_limit || !self.pool.is_empty(z))
            .map(|zone| Candidate {
                zone,
                room: self.pool.max_put(zone),
                empty: self.pool.is_empty(zone),
            })
            .collect()
    }

    /// The zone for `need` bytes of `stream`, or `None` when no zone has room. New data
    /// leaves one empty zone for the cleaner; data the cleaner moves (`moved`) may take it.
    pub(crate) fn pick_zone(&self, stream: Stream, need: u64, moved: bool) -> Option<u32> {
        let policy = match stream {
            Stream::User => self.placement,
            Stream::Gc => Placement::LastUsed,
            Stream::Age(_) => Placement::AgeFit,
        };
        let reserve = if moved { 0 } else { 1 };
        let last = self.streams.get(&stream).copied();
        choose(policy, &self.candidates(), need, last, reserve)
    }

    /// Like [`Fs::pick_zone`] for new data, cleaning in the foreground when no zone has room
    /// and [`crate::FsOptions::foreground_cleaning`] allows it.
    pub(crate) fn zone_for_new_data(&mut self, stream: Stream, need: u64) -> Result<u32> {
        loop {
            if let Some(z) = self.pick_zone(stream, need, false) {
                return Ok(z);
            }
            if !self.opts.foreground_cleaning {
                return Err(FsError::NoSpace(
                    "no zone has room until the cleaner frees one".into(),
                ));
            }
            if self.clean()?.is_none() {
                return Err(FsError::NoSpace("every zone is full of live data".into()));
            }
        }
    }

    /// Notes that `stream` wrote to `zone`.
    pub(crate) fn used_zone(&mut self, stream: Stream, zone: u32) {
        self.streams.insert(stream, zone);
    }

    /// Forgets a zone that was reset or set back as the last zone of any stream.
    pub(crate) fn forget_zone(&mut self, zone: u32) {
        self.streams.retain(|_, z| *z != zone);
    }

    /// The role of a zone for reports: `user`, `gc`, `age<N>`, `cleaning`, `empty`, `full`
    /// or `open`.
    pub(crate) fn zone_role(&self, zone: u32) -> String {
        if self.job.as_ref().is_some_and(|j| j.zone == zone) {
            return "cleaning".into();
        }
        let mut roles: Vec<String> = self
            .streams
            .iter()
            .filter(|(_, &z)| z == zone)
            .map(|(s, _)| match s {
                Stream::User => "user".to_string(),
                Stream::Gc => "gc".to_string(),
                Stream::Age(c) => format!("age{c}"),
            })
            .collect();
        if !roles.is_empty() {
            roles.sort();
            return roles.join("+");
        }
        if self.pool.is_empty(zone) {
            "empty".into()
        } else if self.pool.max_put(zone) == 0 {
            "full".into()
        } else {
            "open".into()
        }
    }
}
