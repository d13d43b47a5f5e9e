//! Cleaning (ShingledFS §6.2): whole-zone cleaning moves every live piece out of a zone and
//! resets it; tail cleaning moves the live data behind the zone's last hole and sets the
//! write pointer back to the start of that hole (the device's "set write pointer"
//! extension). Candidates come from the per-zone append and delete logs, without a walk over
//! the inodes; a cleaning advances in steps of a bounded number of bytes ([`Fs::clean_step`])
//! so that a background cleaner can let requests in between.
//!
//! Choosing: whole-zone cleaning takes the zone with the most dead bytes (the paper's rule);
//! tail cleaning takes the zone with the highest profit S / L, where L is the live data
//! behind the last hole, D the hole and S = D + L the space the zone gets back (a hole right
//! at the tail costs nothing to reclaim); `auto` takes the best profit of both kinds, a whole
//! zone counting S = its written bytes, L = its live bytes.
//!
//! Crash safety: the moved pieces are mapped by ops, then a `ZoneReset` (or `ZoneRewind`) op
//! says the zone holds nothing live (or nothing live past the new write pointer); those ops
//! are committed, and only then is the zone reset (or its write pointer set back). A crash
//! before the commit leaves the old pieces mapped; after it, the new ones, and the old bytes
//! are dead whether or not the reset happened.

use crate::error::{FsError, Result};
use crate::fs::Fs;
use crate::placement::{age_class, Placement};
use crate::state::{LivePiece, Op, Piece};
use std::fmt;
use std::str::FromStr;

/// Which cleanings the cleaner may choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum CleanPolicy {
    /// Whole zones only, most dead bytes first (§6.2.1).
    Whole,
    /// Tails only, best profit S / L first (§6.2.2).
    Tail,
    /// Either, best profit first.
    #[default]
    Auto,
}

impl CleanPolicy {
    /// Every policy.
    pub const ALL: [CleanPolicy; 3] = [CleanPolicy::Whole, CleanPolicy::Tail, CleanPolicy::Auto];

    /// Name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            CleanPolicy::Whole => "whole",
            CleanPolicy::Tail => "tail",
            CleanPolicy::Auto => "auto",
        }
    }
}

impl fmt::Display for CleanPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A cleaning policy name that is not one of `whole`, `tail`, `auto`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown cleaning policy {0:?} (whole, tail, auto)")]
pub struct UnknownCleanPolicy(pub String);

impl FromStr for CleanPolicy {
    type Err = UnknownCleanPolicy;
    fn from_str(s: &str) -> std::result::Result<Self, UnknownCleanPolicy> {
        CleanPolicy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownCleanPolicy(s.into()))
    }
}

/// What a cleaning does to its zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanKind {
    /// Every live piece moves out and the zone is reset.
    Whole,
    /// The live pieces behind the last hole move out and the write pointer is set back.
    Tail,
}

impl CleanKind {
    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            CleanKind::Whole => "whole",
            CleanKind::Tail => "tail",
        }
    }
}

/// A zone the cleaner could clean, and what it would cost and gain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanCandidate {
    /// Zone.
    pub zone: u32,
    /// Whole-zone or tail cleaning.
    pub kind: CleanKind,
    /// LBA the write pointer goes back to (the zone start for whole-zone cleaning).
    pub to: u64,
    /// S: bytes the zone gets back.
    pub gain: u64,
    /// L: live bytes to move.
    pub live: u64,
}

impl CleanCandidate {
    /// S / L (infinite when nothing live has to move).
    pub fn profit(&self) -> f64 {
        if self.live == 0 {
            f64::INFINITY
        } else {
            self.gain as f64 / self.live as f64
        }
    }
}

/// What one cleaning did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanReport {
    /// Zone cleaned.
    pub zone: u32,
    /// Whole-zone or tail cleaning.
    pub kind: CleanKind,
    /// Live bytes moved.
    pub moved: u64,
    /// Bytes the zone got back.
    pub reclaimed: u64,
}

/// What one step of cleaning did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanStep {
    /// No zone is worth cleaning.
    Nothing,
    /// Moved this many bytes; the cleaning goes on.
    Moved(u64),
    /// Finished a cleaning.
    Done(CleanReport),
}

/// The cleaning under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CleanJob {
    pub(crate) zone: u32,
    pub(crate) kind: CleanKind,
    pub(crate) to: u64,
    pub(crate) moved: u64,
}

impl Fs {
    /// Zones (not being written, not failed) the cleaner could clean, with the whole-zone
    /// and tail options of each that free more than they cost.
    pub fn clean_candidates(&self) -> Vec<CleanCandidate> {
        let ss = self.pool.sector();
        // A zone a stream is still filling is left alone until it is full.
        let busy: Vec<u32> = self
            .streams
            .values()
            .copied()
            .filter(|&z| self.pool.max_put(z) > 0)
            .collect();
        // Room the moved data can go to (zones placement may write), less a sector per zone
        // for the metadata block its last extent needs.
        let cands = self.candidates();
        let rooms: Vec<(u32, u64)> = cands
            .iter()
            .map(|c| (c.zone, c.room.saturating_sub(ss)))
            .collect();
        let room_total: u64 = rooms.iter().map(|r| r.1).sum();
        // Tail cleaning gives no zone back empty, so it must leave the cleaner's reserve (one
        // empty zone) alone; a whole-zone cleaning may fill it, since it empties its victim.
        let empties: Vec<u64> = cands
            .iter()
            .filter(|c| c.empty)
            .map(|c| c.room.saturating_sub(ss))
            .collect();
        let reserve_room = if empties.len() <= 1 {
            empties.first().copied().unwrap_or(0)
        } else {
            0
        };
        // A cleaning must free an eighth of a zone more than it writes, so that the cleaner
        // does not churn for crumbs; when no zone has room for new data, any gain will do.
        let emergency = self
            .pick_zone(crate::fs::zones::Stream::User, 1, false)
            .is_none();
        let min_gain = if emergency {
            ss
        } else {
            self.pool.zone_bytes() / 8
        };
        let mut out = Vec::new();
        for zone in self.pool.seq_zones() {
            if self.bad_zones.contains(&zone)
                || self.leased.contains(&zone)
                || busy.contains(&zone)
                || self.pool.is_empty(zone)
            {
                continue;
            }
            let (Some(start), Some(wp), Some(log)) = (
                self.pool.start_lba(zone),
                self.pool.write_pointer(zone),
                self.state.zlogs.zone(zone),
            ) else {
                continue;
            };
            let exts = log.live_extents();
            let room = room_total - rooms.iter().find(|r| r.0 == zone).map_or(0, |r| r.1);
            // Moved pieces are packed into extents of up to `max_extent` bytes, each costing
            // about two sectors more (padding and a metadata block), one extent per piece at
            // worst; a cleaning must gain more than that, and the moved data must fit
            // elsewhere.
            let max_extent = self.opts.max_extent.max(ss);
            let cost = |live: u64, n: usize| {
                if live == 0 {
                    0
                } else {
                    let extents = (live.div_ceil(max_extent) + 1).min(n as u64 + 1);
                    live + (extents + 1) * 2 * ss
                }
            };
            let worth = |gain: u64, live: u64, n: usize, room: u64| {
                gain >= cost(live, n) + min_gain && cost(live, n) <= room
            };
            let used = (wp - start) * ss;
            let pieces: usize = exts.iter().map(|e| e.pieces).sum();
            if worth(used, log.live_bytes(), pieces, room) {
                out.push(CleanCandidate {
                    zone,
                    kind: CleanKind::Whole,
                    to: start,
                    gain: used,
                    live: log.live_bytes(),
                });
            }
            // The tail: the live extents that touch the write pointer back to the last hole.
            let mut cut = wp;
            let mut live = 0;
            let mut n = 0;
            let mut to = None;
            for e in exts.iter().rev() {
                let end = e.lba + self.pool.extent_sectors(e.len);
                if end < cut {
                    to = Some(end);
                    break;
                }
                live += e.live;
                n += e.pieces;
                cut = e.lba;
            }
            // Tail cleaning sets the write pointer back: only on a device that can.
            if let Some(to) = to.filter(|_| self.pool.can_rewind()) {
                let gain = (wp - to) * ss;
                if worth(gain, live, n, room.saturating_sub(reserve_room)) {
                    out.push(CleanCandidate {
                        zone,
                        kind: CleanKind::Tail,
                        to,
                        gain,
                        live,
                    });
                }
            }
        }
        out
    }

    /// The cleaning the policy would start now, if any zone is worth it. Under the tail
    /// policy a whole-zone cleaning is still chosen when no zone has room for new data and
    /// no tail can be cleaned (holes in the middle of zones are out of tail cleaning's reach,
    /// and a file system must not stop for them).
    pub fn clean_victim(&self) -> Option<CleanCandidate> {
        let c = self.clean_candidates();
        let best_profit = |kind: Option<CleanKind>| {
            c.iter()
                .filter(|x| kind.is_none_or(|k| x.kind == k))
                .max_by(|a, b| {
                    a.profit()
                        .total_cmp(&b.profit())
                        .then(a.gain.cmp(&b.gain))
                        .then(b.zone.cmp(&a.zone))
                })
                .copied()
        };
        match self.opts.clean {
            CleanPolicy::Whole => c
                .iter()
                .filter(|x| x.kind == CleanKind::Whole)
                .max_by_key(|x| (x.gain - x.live, std::cmp::Reverse(x.zone)))
                .copied(),
            CleanPolicy::Tail => best_profit(Some(CleanKind::Tail)).or_else(|| {
                self.pick_zone(crate::fs::zones::Stream::User, 1, false)
                    .is_none()
                    .then(|| best_profit(Some(CleanKind::Whole)))
                    .flatten()
            }),
            CleanPolicy::Auto => best_profit(None),
        }
    }

    /// The zone being cleaned, if any.
    pub fn cleaning_zone(&self) -> Option<u32> {
        self.job.map(|j| j.zone)
    }

    /// Live pieces the cleaning under way still has to move, oldest files first under age
    /// fit (so that the oldest data lands at the head of its new zone), else in disk order.
    fn job_pieces(&self, job: &CleanJob) -> Vec<LivePiece> {
        let mut v: Vec<LivePiece> = self
            .state
            .zlogs
            .live_pieces(job.zone)
            .into_iter()
            .filter(|p| p.piece.ext_lba >= job.to)
            .collect();
        if self.placement == Placement::AgeFit {
            v.sort_by_key(|p| std::cmp::Reverse(age_class(p.ino, self.state.next_ino)));
        }
        v
    }

    /// One step of cleaning: starts a cleaning if none is under way, moves live pieces until
    /// `budget` bytes moved (at least one piece), and finishes the cleaning (commit, then
    /// reset or set back) when nothing live is left to move.
    pub fn clean_step(&mut self, budget: u64) -> Result<CleanStep> {
        self.writable()?;
        let job = match self.job {
            Some(j) => j,
            None => {
                let Some(c) = self.clean_victim() else {
                    return Ok(CleanStep::Nothing);
                };
                let j = CleanJob {
                    zone: c.zone,
                    kind: c.kind,
                    to: c.to,
                    moved: 0,
                };
                self.job = Some(j);
                j
            }
        };
        let pieces = self.job_pieces(&job);
        let mut moved = 0;
        let mut left = pieces.len();
        let mut batch: Vec<(LivePiece, Vec<u8>)> = Vec::new();
        let mut batch_bytes = 0u64;
        for p in pieces {
            if moved >= budget && moved > 0 {
                break;
            }
            // A batch holds pieces of one stream, up to one extent's worth.
            let same = batch
                .first()
                .is_none_or(|(b, _)| self.stream_of(b.ino, true) == self.stream_of(p.ino, true));
            if !same || batch_bytes + p.piece.len > self.opts.max_extent {
                if let Err(e) = self.relocate(std::mem::take(&mut batch)) {
                    self.job = None;
                    return Err(e);
                }
                batch_bytes = 0;
            }
            let data = match self.pool.read(&p.piece, 0, p.piece.len) {
                Ok(d) => d,
                Err(e) => {
                    // Leave a zone with unreadable live data alone (its data stays in place).
                    tracing::warn!("cleaner skips zone {}: {e}", p.piece.zone);
                    self.bad_zones.push(p.piece.zone);
                    self.job = None;
                    return Err(e);
                }
            };
            moved += p.piece.len;
            batch_bytes += p.piece.len;
            left -= 1;
            batch.push((p, data));
        }
        if let Err(e) = self.relocate(batch) {
            self.job = None;
            return Err(e);
        }
        if let Some(j) = &mut self.job {
            j.moved += moved;
        }
        if left > 0 {
            return Ok(CleanStep::Moved(moved));
        }
        self.finish_cleaning().map(CleanStep::Done)
    }

    /// Moves a batch of live pieces (of one stream, with their data) to the zones that
    /// stream writes moved data to, packed into as few extents as the zones' room allows:
    /// each piece becomes a run of its new extent (a `Map` op with the run's offset in it).
    fn relocate(&mut self, batch: Vec<(LivePiece, Vec<u8>)>) -> Result<()> {
        let Some((first, _)) = batch.first() else {
            return Ok(());
        };
        let stream = self.stream_of(first.ino, true);
        // Only a whole-zone cleaning, which empties its victim, may fill the reserve zone.
        let may_take_reserve = self.job.is_none_or(|j| j.kind == CleanKind::Whole);
        // (piece, bytes of it already moved)
        let mut queue: std::collections::VecDeque<(LivePiece, Vec<u8>, usize)> =
            batch.into_iter().map(|(p, d)| (p, d, 0)).collect();
        while !queue.is_empty() {
            let rest: u64 = queue
                .iter()
                .map(|(_, d, done)| (d.len() - done) as u64)
                .sum();
            let want = rest.min(self.opts.max_extent);
            let zone = self
                .pick_zone(stream, want, may_take_reserve)
                .ok_or_else(|| FsError::NoSpace("no zone has room for the cleaner".into()))?;
            let n = want.min(self.pool.max_put(zone)) as usize;
            if n == 0 {
                return Err(FsError::NoSpace(format!("zone {zone} has no room")));
            }
            // The extent's data and the runs it holds: (ino, file offset, offset in extent, len).
            let mut data = Vec::with_capacity(n);
            let mut runs: Vec<(u64, u64, u64, u64)> = Vec::new();
            while data.len() < n {
                let Some((p, d, done)) = queue.front_mut() else {
                    break;
                };
                let take = (d.len() - *done).min(n - data.len());
                runs.push((p.ino, p.off + *done as u64, data.len() as u64, take as u64));
                data.extend_from_slice(&d[*done..*done + take]);
                *done += take;
                if *done == d.len() {
                    queue.pop_front();
                }
            }
            let (tag, zba) = (runs[0].0, runs[0].1);
            let placed = self.pool.put(zone, zba, tag, &data).inspect_err(|e| {
                if !matches!(e, FsError::NoSpace(_)) {
                    self.broken = Some(e.to_string());
                }
            })?;
            self.used_zone(stream, zone);
            for (ino, off, ext_off, len) in runs {
                self.log(Op::Map {
                    ino,
                    off,
                    piece: Piece {
                        len,
                        zone,
                        ext_lba: placed.lba,
                        ext_len: data.len() as u64,
                        ext_off,
                    },
                    mtime: None,
                })?;
            }
            self.moved_bytes += data.len() as u64;
        }
        Ok(())
    }

    /// Ends the cleaning under way: logs that nothing live is left (past the new write
    /// pointer), commits, then resets the zone or sets its write pointer back.
    fn finish_cleaning(&mut self) -> Result<CleanReport> {
        let Some(job) = self.job else {
            return Err(FsError::Invalid("no cleaning under way".into()));
        };
        let zone = job.zone;
        let wp = self.pool.write_pointer(zone).unwrap_or(job.to);
        let start = self.pool.start_lba(zone).unwrap_or(job.to);
        // Nothing live may be left at or past the new write pointer.
        if let Some(log) = self.state.zlogs.zone(zone) {
            if let Some((lba, len)) = log
                .live_extents()
                .iter()
                .map(|e| (e.lba, e.len))
                .find(|&(lba, len)| lba + self.pool.extent_sectors(len) > job.to)
            {
                self.job = None;
                return Err(FsError::Invalid(format!(
                    "zone {zone}: extent at LBA {lba} ({len} bytes) is live past LBA {}",
                    job.to
                )));
            }
        }
        let op = if job.to == start {
            Op::ZoneReset { zone }
        } else {
            Op::ZoneRewind { zone, lba: job.to }
        };
        let res = self.log(op).and_then(|_| self.commit()).and_then(|_| {
            if job.to == start {
                self.pool.reset(zone)
            } else {
                self.pool.rewind(zone, job.to)
            }
        });
        self.job = None;
        if let Err(e) = res {
            if !matches!(e, FsError::NoSpace(_)) {
                self.broken = Some(e.to_string());
            }
            return Err(e);
        }
        self.forget_zone(zone);
        let reclaimed = (wp - job.to) * self.pool.sector();
        self.cleanings += 1;
        if job.kind == CleanKind::Tail {
            self.tail_cleanings += 1;
        }
        self.reclaimed_bytes += reclaimed;
        Ok(CleanReport {
            zone,
            kind: job.kind,
            moved: job.moved,
            reclaimed,
        })
    }

    /// Cleans one zone to the end; `None` when no zone is worth cleaning.
    pub fn clean(&mut self) -> Result<Option<CleanReport>> {
        loop {
            match self.clean_step(u64::MAX)? {
                CleanStep::Nothing => return Ok(None),
                CleanStep::Moved(_) => {}
                CleanStep::Done(r) => return Ok(Some(r)),
            }
        }
    }
}
