//! The drive's static logical-to-physical map. Host sectors are laid over the data tracks in
//! three-phase order (Tracklace; Gao, Zhu and Gage): first every bottom track, then every other
//! top track (cylinders 1, 5, 9, …: each bottom then has at most one written neighbour),
//! then the remaining tops. A host that fills its address space from the start therefore
//! writes bottoms only while it uses less than about 55% of the drive, and needs no
//! read-modify-write until the second phase.

use tegula_kvimr::layout::Layout;

/// Which phase of the three-phase order a track belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Bottom tracks.
    Bottoms,
    /// Every other top track.
    AlternateTops,
    /// The remaining top tracks.
    RemainingTops,
}

impl Phase {
    /// The phase of a track at cylinder `cyl`, bottom or not.
    pub fn of(bottom: bool, cyl: u32) -> Phase {
        if bottom {
            Phase::Bottoms
        } else if cyl % 4 == 1 {
            Phase::AlternateTops
        } else {
            Phase::RemainingTops
        }
    }
}

/// One contiguous part of a host command on one physical track.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Physical track.
    pub track: u32,
    /// First physical LBA.
    pub lba: u64,
    /// Sectors.
    pub sectors: u64,
    /// Byte offset of the piece in the host's buffer.
    pub at: usize,
    /// Whether the track is a bottom track.
    pub bottom: bool,
}

/// The logical-to-physical map.
#[derive(Debug, Clone)]
pub struct Mapping {
    /// First logical sector of each logical track.
    starts: Vec<u64>,
    /// Physical track of each logical track.
    phys: Vec<u32>,
    /// Logical sectors (the host-visible capacity).
    capacity: u64,
    /// Logical sectors at the end of the first and of the second phase.
    phase_ends: [u64; 2],
}

impl Mapping {
    /// The three-phase map over `layout`'s data tracks.
    pub fn three_phase(layout: &Layout) -> Mapping {
        let mut order: Vec<u32> = layout.data.clone();
        order.sort_by_key(|&t| {
            let tr = layout.track(t);
            (Phase::of(tr.bottom, tr.cyl), t)
        });
        let mut starts = Vec::with_capacity(order.len());
        let mut at = 0u64;
        let mut phase_ends = [0u64; 2];
        for &t in &order {
            let tr = layout.track(t);
            starts.push(at);
            at += tr.sectors as u64;
            match Phase::of(tr.bottom, tr.cyl) {
                Phase::Bottoms => phase_ends = [at, at],
                Phase::AlternateTops => phase_ends[1] = at,
                Phase::RemainingTops => {}
            }
        }
        Mapping {
            starts,
            phys: order,
            capacity: at,
            phase_ends,
        }
    }

    /// Host-visible sectors.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Logical sectors at the end of the bottoms-only phase and of the alternate-tops phase.
    pub fn phase_ends(&self) -> [u64; 2] {
        self.phase_ends
    }

    /// The physical pieces of logical sectors `[lba, lba + sectors)` (which must lie inside
    /// the capacity), in logical order; `ss` is the sector size.
    pub fn pieces(&self, layout: &Layout, lba: u64, sectors: u64, ss: u64) -> Vec<Piece> {
        let mut out = Vec::new();
        let end = lba + sectors;
        let mut pos = lba;
        let mut i = self.starts.partition_point(|&s| s <= pos).saturating_sub(1);
        while pos < end && i < self.phys.len() {
            let t = self.phys[i];
            let tr = layout.track(t);
            let within = pos - self.starts[i];
            let n = (tr.sectors as u64 - within).min(end - pos);
            out.push(Piece {
                track: t,
                lba: tr.lba + within,
                sectors: n,
                at: ((pos - lba) * ss) as usize,
                bottom: tr.bottom,
            });
            pos += n;
            i += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tegula_device::{profile, TrackLayout};
    use tegula_kvimr::FormatOptions;

    fn layout() -> Layout {
        let mut cfg = profile("imr").unwrap();
        cfg.capacity = 256 << 20;
        let d = tegula_device::Disk::in_memory(cfg).unwrap();
        let tl: TrackLayout = d.track_layout().unwrap().clone();
        Layout::new(
            &tl,
            4096,
            &FormatOptions {
                map_slot_bytes: 8192,
                staging_bytes: 16 << 20,
                raw_bytes: 0,
                safe_files: 0,
                safe_file_bytes: 0,
                file_bytes: 0,
            },
        )
        .unwrap()
    }

    #[test]
    fn every_data_sector_is_mapped_once_bottoms_first() {
        let l = layout();
        let m = Mapping::three_phase(&l);
        assert_eq!(m.capacity(), l.data_sectors);
        let mut seen = std::collections::BTreeSet::new();
        let mut last_phase = Phase::Bottoms;
        for p in m.pieces(&l, 0, m.capacity(), 4096) {
            let tr = l.track(p.track);
            assert_eq!((p.lba, p.sectors), (tr.lba, tr.sectors as u64));
            let ph = Phase::of(tr.bottom, tr.cyl);
            assert!(ph >= last_phase, "phases out of order");
            last_phase = ph;
            assert!(seen.insert(p.track));
        }
        assert_eq!(seen.len(), l.data.len());
        let [b, a] = m.phase_ends();
        assert!(0 < b && b < a && a < m.capacity());
    }

    #[test]
    fn pieces_cover_a_range_exactly() {
        let l = layout();
        let m = Mapping::three_phase(&l);
        for (lba, n) in [
            (0, 1),
            (500, 2000),
            (m.capacity() - 7, 7),
            (m.phase_ends()[0] - 3, 9),
        ] {
            let ps = m.pieces(&l, lba, n, 4096);
            assert_eq!(ps.iter().map(|p| p.sectors).sum::<u64>(), n);
            let mut at = 0;
            for p in &ps {
                assert_eq!(p.at, at);
                at += (p.sectors * 4096) as usize;
                let tr = l.track(p.track);
                assert!(p.lba >= tr.lba && p.lba + p.sectors <= tr.end());
            }
        }
    }
}
