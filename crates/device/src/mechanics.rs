//! The mechanical timing model: command overhead, seek (Lee's curve) or head switch,
//! rotational latency from the platter angle at the current virtual time, and media transfer
//! with track switches inside long transfers. A read-ahead window lets a sequential read
//! stream continue at media rate across commands, as a drive's look-ahead buffer does.

use crate::error::{DeviceError, Result};
use crate::geometry::{Geometry, GeometryParams, Location, SkewTimes, ANGLE_FULL};
use crate::seek::{SeekCurve, SeekPoints};
use crate::units::{ms, Nanos};
use serde::{Deserialize, Serialize};

/// Timing parameters of a drive; see `docs/guides/device-model.md` for the sources of each profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingParams {
    /// Seek curve points for reads.
    pub seek_read: SeekPoints,
    /// Seek curve points for writes (longer: write settle).
    pub seek_write: SeekPoints,
    /// Head switch time in ms.
    pub head_switch_ms: f64,
    /// Controller overhead per command in ms.
    pub command_overhead_ms: f64,
    /// Host interface rate in MB/s (cache hits and cached writes move at this rate).
    pub interface_mb_s: f64,
    /// Read-ahead window in bytes after a read (0 disables look-ahead).
    pub read_ahead_bytes: u64,
    /// Time of a sequential switch to the adjacent track, settle included, in ms; the track
    /// skew is laid out for it. Default: the larger track-to-track seek.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub track_switch_ms: Option<f64>,
}

/// Counters the mechanics keep; folded into the device statistics.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MechStats {
    /// Repositionings that moved the arm.
    pub seeks: u64,
    /// Sum of cylinders moved by those seeks.
    pub seek_distance: u64,
    /// Head switches at the start of a command.
    pub head_switches: u64,
    /// Track or surface changes inside a transfer.
    pub track_switches: u64,
    /// Time spent seeking or switching heads.
    pub seek_ns: u64,
    /// Time spent waiting for the platter.
    pub rotation_ns: u64,
    /// Time spent transferring to or from the media.
    pub transfer_ns: u64,
    /// Reads served (in part) from the read-ahead stream.
    pub read_ahead_hits: u64,
}

#[derive(Debug, Clone, Copy)]
struct ReadAhead {
    /// The stream has read every sector below `next_lba` by time `t`.
    next_lba: u64,
    t: Nanos,
    /// The drive stops prefetching here.
    limit: u64,
}

/// Mechanical state and timing computations of one actuator.
#[derive(Debug, Clone)]
pub struct Mechanics {
    geo: Geometry,
    read_curve: SeekCurve,
    write_curve: SeekCurve,
    head_switch: Nanos,
    overhead: Nanos,
    bus_ns_per_byte: f64,
    read_ahead_sectors: u64,
    cyl: u64,
    head: u32,
    ra: Option<ReadAhead>,
    /// Counters since creation.
    pub stats: MechStats,
}

/// Safety margin added to each skew so that integer rounding never loses a revolution.
const SKEW_MARGIN: Nanos = 50_000;

impl Mechanics {
    /// Fits the seek curves and builds the geometry with matching track skews.
    pub fn new(gp: GeometryParams, tp: &TimingParams) -> Result<Self> {
        let cyl = gp.cylinders.max(2);
        let read_curve = SeekCurve::fit(tp.seek_read, cyl)?;
        let write_curve = SeekCurve::fit(tp.seek_write, cyl)?;
        let head_switch = ms(tp.head_switch_ms);
        let stroke = gp.stroke.min(gp.cylinders).max(1);
        let pos = |d: u64, switch: bool| {
            let s = read_curve.seek(d).max(write_curve.seek(d));
            if switch {
                s.max(head_switch)
            } else {
                s
            }
        };
        let surface = if gp.serpentine {
            pos(0, true)
        } else {
            pos(stroke - 1, true)
        };
        let section = if gp.serpentine && gp.heads.is_multiple_of(2) {
            pos(stroke, false)
        } else {
            pos(1, false)
        };
        let track = tp.track_switch_ms.map(ms).unwrap_or(0).max(pos(1, false));
        let skew = SkewTimes {
            track: track + SKEW_MARGIN,
            surface: surface + SKEW_MARGIN,
            section: section + SKEW_MARGIN,
        };
        if tp.interface_mb_s <= 0.0 {
            return Err(DeviceError::Config(
                "interface_mb_s must be positive".into(),
            ));
        }
        let sector = gp.sector_size as u64;
        let geo = Geometry::new(gp, skew)?;
        Ok(Mechanics {
            geo,
            read_curve,
            write_curve,
            head_switch,
            overhead: ms(tp.command_overhead_ms),
            bus_ns_per_byte: 1e3 / tp.interface_mb_s,
            read_ahead_sectors: tp.read_ahead_bytes / sector,
            cyl: 0,
            head: 0,
            ra: None,
            stats: MechStats::default(),
        })
    }

    /// The drive's geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// Controller overhead per command.
    pub fn overhead(&self) -> Nanos {
        self.overhead
    }

    /// Time to move `sectors` over the host interface.
    pub fn bus_time(&self, sectors: u64) -> Nanos {
        (sectors as f64 * self.geo.sector_size() as f64 * self.bus_ns_per_byte) as Nanos
    }

    /// Current (cylinder, head).
    pub fn position(&self) -> (u64, u32) {
        (self.cyl, self.head)
    }

    /// Forgets the read-ahead stream (after a write or any other head movement).
    pub fn cancel_read_ahead(&mut self) {
        self.ra = None;
    }

    fn angle_at(&self, t: Nanos) -> u64 {
        let rpm = self.geo.rpm() as u64;
        // u64 arithmetic while it cannot overflow (the first ~10 days of virtual time): the
        // same value as the u128 form, several times faster.
        match t.checked_mul(rpm) {
            Some(x) => x % ANGLE_FULL,
            None => ((t as u128 * rpm as u128) % ANGLE_FULL as u128) as u64,
        }
    }

    /// Nanoseconds from `t` until angle `target` is under the head. A wait of almost a full
    /// revolution is rounding of an exact arrival and counts as zero.
    fn wait_for(&self, t: Nanos, target: u64) -> Nanos {
        let rpm = self.geo.rpm() as u64;
        let now = self.angle_at(t);
        let delta = (target + ANGLE_FULL - now) % ANGLE_FULL;
        if delta > ANGLE_FULL - 1_000 * rpm {
            return 0;
        }
        delta.div_ceil(rpm)
    }

    fn positioning(&self, to: &Location, write: bool) -> (Nanos, u64, bool) {
        let d = self.cyl.abs_diff(to.cyl);
        let curve = if write {
            &self.write_curve
        } else {
            &self.read_curve
        };
        let s = curve.seek(d);
        let switch = self.head != to.head;
        let t = if switch { s.max(self.head_switch) } else { s };
        (t, d, switch)
    }

    fn transfer_time(&self, loc: &Location, sectors: u64) -> Nanos {
        let rpm = self.geo.rpm() as u64;
        match sectors.checked_mul(ANGLE_FULL) {
            Some(x) => (x / loc.spt).div_ceil(rpm),
            None => {
                let span = sectors as u128 * ANGLE_FULL as u128 / loc.spt as u128;
                span.div_ceil(rpm as u128) as Nanos
            }
        }
    }

    /// Moves the head to `lba`, waits for it, and transfers `sectors` starting at `start`.
    /// Returns the time the last sector has passed the head. The first positioning counts as a
    /// seek in the statistics (unless the access `continues` a read-ahead stream); later track
    /// changes count as track switches.
    fn media_access(
        &mut self,
        start: Nanos,
        lba: u64,
        sectors: u64,
        write: bool,
        continues: bool,
    ) -> Nanos {
        let mut t = start;
        let mut lba = lba;
        let mut left = sectors;
        let mut first = !continues;
        while left > 0 {
            let loc = self.geo.locate(lba);
            let (pos, d, switch) = self.positioning(&loc, write);
            if first {
                if d > 0 {
                    self.stats.seeks += 1;
                    self.stats.seek_distance += d;
                }
                if switch {
                    self.stats.head_switches += 1;
                }
                first = false;
            } else if d > 0 || switch || !continues || left < sectors {
                self.stats.track_switches += 1;
            }
            self.stats.seek_ns += pos;
            t += pos;
            let wait = self.wait_for(t, self.geo.sector_angle(&loc, loc.sector));
            self.stats.rotation_ns += wait;
            t += wait;
            let n = left.min(loc.spt - loc.sector);
            let xfer = self.transfer_time(&loc, n);
            self.stats.transfer_ns += xfer;
            t += xfer;
            self.cyl = loc.cyl;
            self.head = loc.head;
            lba += n;
            left -= n;
        }
        t
    }

    /// Service of a media read arriving at `arrival`; returns its completion time.
    pub fn read(&mut self, arrival: Nanos, lba: u64, sectors: u64) -> Nanos {
        let end = lba + sectors;
        if let Some(ra) = self.ra {
            if lba >= ra.next_lba && end <= ra.limit {
                // The stream keeps reading from where it was; no repositioning.
                let reached = self.media_access(ra.t, ra.next_lba, end - ra.next_lba, false, true);
                self.stats.read_ahead_hits += 1;
                let done = (arrival + self.overhead + self.bus_time(sectors)).max(reached);
                self.set_read_ahead(end, reached);
                return done;
            }
        }
        let done = self.media_access(arrival + self.overhead, lba, sectors, false, false);
        self.set_read_ahead(end, done);
        done
    }

    fn set_read_ahead(&mut self, next_lba: u64, t: Nanos) {
        if self.read_ahead_sectors == 0 || next_lba >= self.geo.total_sectors() {
            self.ra = None;
            return;
        }
        let limit = (next_lba + self.read_ahead_sectors).min(self.geo.total_sectors());
        self.ra = Some(ReadAhead { next_lba, t, limit });
    }

    /// Service of a media write arriving at `arrival` (command overhead, then the access).
    pub fn write(&mut self, arrival: Nanos, lba: u64, sectors: u64) -> Nanos {
        self.write_at(arrival + self.overhead, lba, sectors)
    }

    /// A media write whose command was already processed: the head starts moving at `start`.
    /// Queued commands use this, their overhead overlapping the previous transfer.
    pub fn write_at(&mut self, start: Nanos, lba: u64, sectors: u64) -> Nanos {
        self.ra = None;
        self.media_access(start, lba, sectors, true, false)
    }

    /// A media read whose command was already processed (see [`Self::write_at`]).
    pub fn read_at(&mut self, start: Nanos, lba: u64, sectors: u64) -> Nanos {
        let done = self.media_access(start, lba, sectors, false, false);
        self.set_read_ahead(lba + sectors, done);
        done
    }

    /// Seek time of a read of `d` cylinders (for documentation and tests).
    pub fn read_seek(&self, d: u64) -> Nanos {
        self.read_curve.seek(d)
    }

    /// Seek time of a write of `d` cylinders.
    pub fn write_seek(&self, d: u64) -> Nanos {
        self.write_curve.seek(d)
    }
}
