//! TEST 14 (section 4.12): zone structure from sequential reads. Reading the whole drive (the
//! paper's Figure 24 took hours) is replaced by two views a host can afford:
//!
//! * a fine scan from LBA 0 in 256 KiB reads: a read that crosses to the next track waits for
//!   the switch, so the slow reads mark track boundaries, and the rarer, differently priced
//!   ones surface changes (a head switch at the same cylinder in a serpentine layout; a jump
//!   back across the stroke with long per-surface strokes) and section changes;
//! * a profile at evenly spaced offsets: at each, the median of a few sequential reads is the
//!   media rate there exactly (a read crossing no track boundary streams at the track's bytes
//!   per revolution). The rate steps down at each recording zone and, with per-surface strokes, jumps back up at
//!   each surface change: the sawtooth whose teeth count the surfaces.

use crate::error::Result;
use crate::plot::Plot;
use crate::report::{bytes, Plateau, ZoneLayout, ZonesReport};
use crate::session::Session;
use crate::stats::median;
use serde_json::json;

/// Read size of the scans: large enough that the media, not the interface, sets the pace
/// (smaller reads stream from the drive's look-ahead buffer and hide the track switches).
const CHUNK: u64 = 256 << 10;

/// Surface runs shorter than this many tracks are a serpentine's narrow strokes.
const NARROW: u64 = 48;

/// A read that crossed a track: its position (bytes) and extra latency (ms).
#[derive(Debug, Clone, Copy)]
struct Cross {
    at: u64,
    extra: f64,
}

/// Reads `n` chunks from `start`; the crossings found (after the first read).
fn scan(
    s: &mut Session<'_>,
    start: u64,
    n: u64,
    stop_after: Option<usize>,
) -> Result<(Vec<Cross>, Vec<f64>)> {
    let mut lat = Vec::with_capacity(n as usize);
    for k in 0..n {
        let off = start + k * CHUNK;
        if off + CHUNK > s.cap {
            break;
        }
        lat.push(s.read(off, CHUNK)?);
        if let Some(m) = stop_after {
            if k >= 8 {
                let base = median(&lat[1..]);
                let c = lat[1..].iter().filter(|&&l| l > base * 1.15 + 0.1).count();
                if c > m {
                    break;
                }
            }
        }
    }
    let base = median(lat.get(1..).unwrap_or(&[]));
    let cross = lat
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, &l)| l > base * 1.15 + 0.1)
        .map(|(k, &l)| Cross {
            at: start + k as u64 * CHUNK,
            extra: l - base,
        })
        .collect();
    Ok((cross, lat))
}

/// Groups crossings by extra latency (within 4% or 0.03 ms of a group's first member).
fn kinds(cross: &[Cross]) -> Vec<Vec<Cross>> {
    let mut sorted = cross.to_vec();
    sorted.sort_by(|a, b| a.extra.total_cmp(&b.extra));
    let mut groups: Vec<Vec<Cross>> = Vec::new();
    for c in sorted {
        match groups.last_mut() {
            Some(g) if c.extra - g[0].extra <= (g[0].extra * 0.04).max(0.03) => g.push(c),
            _ => groups.push(vec![c]),
        }
    }
    for g in &mut groups {
        g.sort_by_key(|c| c.at);
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
    groups
}

/// Surfaces from the positions of surface changes spaced `run` apart: a section ends where
/// one is missing (a gap of about two runs) or where another kind of crossing stands in its
/// place. Complete groups of `k` changes mean `k + 1` surfaces.
fn surfaces_from(pos: &[u64], run: u64) -> Option<u32> {
    if pos.len() < 2 || run == 0 {
        return None;
    }
    let mut groups: Vec<usize> = Vec::new();
    let mut cur = 1usize;
    let mut complete_start = false;
    for w in pos.windows(2) {
        let gap = w[1] - w[0];
        if gap as f64 > 1.5 * run as f64 {
            if complete_start {
                groups.push(cur);
            }
            complete_start = true;
            cur = 1;
        } else {
            cur += 1;
        }
    }
    if groups.is_empty() {
        return None;
    }
    let mut counts: Vec<(usize, usize)> = Vec::new();
    for &g in &groups {
        match counts.iter_mut().find(|c| c.0 == g) {
            Some(c) => c.1 += 1,
            None => counts.push((g, 1)),
        }
    }
    counts.sort_by_key(|c| (std::cmp::Reverse(c.1), std::cmp::Reverse(c.0)));
    Some(counts[0].0 as u32 + 1)
}

/// Media rate at `off`, MB/s: a read that crosses no track boundary streams at exactly the
/// track's bytes per revolution, so the median of a few sequential reads is the rate itself,
/// free of how many track switches a longer read happens to include.
fn rate_at(s: &mut Session<'_>, off: u64) -> Result<Option<f64>> {
    let mut lat = Vec::with_capacity(12);
    for k in 0..12 {
        let o = off + k * CHUNK;
        if o + CHUNK > s.cap {
            break;
        }
        lat.push(s.read(o, CHUNK)?);
    }
    if lat.len() < 6 {
        return Ok(None);
    }
    let base = median(&lat[2..]);
    Ok((base > 0.0).then(|| CHUNK as f64 / base / 1e3))
}

/// Runs TEST 14.
pub(crate) fn run(s: &mut Session<'_>) -> Result<String> {
    let samples: u64 = if s.virtual_time() { 4096 } else { 256 };
    s.begin(14, "zone structure", samples + 1);
    let mut z = ZonesReport::default();
    let mut notes = Vec::new();
    // 1. Fine scan from LBA 0.
    let window = (768u64 << 20).min(s.cap / 8) / CHUNK;
    let (cross, lat) = scan(s, 0, window, None)?;
    s.tick(1);
    let groups = kinds(&cross);
    let track_kind = groups
        .first()
        .map(|g| g.iter().map(|c| c.extra).sum::<f64>() / g.len() as f64);
    // Track switches must recur at a steady spacing (a rotating disk); latency spikes at
    // random (a flash device, or noise) are no track structure.
    let track = groups.first().and_then(|g| {
        let gaps: Vec<f64> = g.windows(2).map(|w| (w[1].at - w[0].at) as f64).collect();
        let m = median(&gaps);
        let steady = gaps
            .iter()
            .filter(|&&x| (x - m).abs() <= 0.1 * m + CHUNK as f64)
            .count();
        (gaps.len() >= 8 && steady * 10 >= gaps.len() * 7).then_some(m as u64)
    });
    let regular = track.is_some();
    // The surface change: the next most frequent kind recurring at a steady spacing.
    let mut fine_layout = None;
    for g in groups.iter().skip(1).filter(|_| regular) {
        if g.len() < 3 {
            continue;
        }
        let gaps: Vec<f64> = g.windows(2).map(|w| (w[1].at - w[0].at) as f64).collect();
        let run = median(&gaps) as u64;
        if track.is_some_and(|t| run < 3 * t) {
            continue;
        }
        let pos: Vec<u64> = g.iter().map(|c| c.at).collect();
        let ratio = g[0].extra / track_kind.unwrap_or(1.0).max(1e-6);
        // Narrow strokes of a few dozen tracks (a conventional serpentine) against the
        // thousands of tracks per surface of an SMR drive (section 4.12, Figure 26).
        let tracks = run / track.unwrap_or(run).max(1);
        let layout = if tracks < NARROW {
            ZoneLayout::Serpentine
        } else {
            ZoneLayout::SurfaceStrokes
        };
        fine_layout = Some((layout, ratio));
        z.run_bytes = Some(run);
        z.surfaces = surfaces_from(&pos, run);
        notes.push(format!(
            "fine scan of {}: track switches every {} (+{:.2} ms), surface changes every {} = {tracks} tracks (+{:.2} ms, {ratio:.1}x a track switch)",
            bytes(window * CHUNK),
            bytes(track.unwrap_or(0)),
            track_kind.unwrap_or(0.0),
            bytes(run),
            g[0].extra
        ));
        break;
    }
    if !regular {
        notes.push(format!(
            "fine scan of {}: {} slow reads at no steady spacing: no track structure (not a rotating disk, or too noisy to see one)",
            bytes(window * CHUNK),
            cross.len()
        ));
    } else if fine_layout.is_none() {
        notes.push(format!(
            "fine scan of {}: track switches every {}, no surface change (runs longer than the scan)",
            bytes(window * CHUNK),
            bytes(track.unwrap_or(0))
        ));
    }
    // 2. The profile.
    let step = (s.cap / samples) / CHUNK * CHUNK;
    let mut prof: Vec<(u64, f64)> = Vec::new();
    for k in 0..samples {
        let off = k * step;
        if let Some(r) = rate_at(s, off)? {
            prof.push((off, r));
        }
        s.tick(1);
    }
    // Plateaus: consecutive samples at the same rate.
    let mut plateaus: Vec<Plateau> = Vec::new();
    for &(off, r) in &prof {
        match plateaus.last_mut() {
            Some(p) if (r / p.mb_per_s - 1.0).abs() < 0.003 => {
                p.bytes = off + step - p.offset;
            }
            _ => plateaus.push(Plateau {
                offset: off,
                bytes: step,
                mb_per_s: (r * 10.0).round() / 10.0,
            }),
        }
    }
    // Jumps back up in rate: surface changes with long per-surface strokes.
    let ups: Vec<u64> = prof
        .windows(2)
        .filter(|w| w[1].1 > w[0].1 * 1.01)
        .map(|w| w[1].0)
        .collect();
    let downs = prof.windows(2).filter(|w| w[1].1 < w[0].1 * 0.99).count();
    if regular && fine_layout.is_none() && ups.len() >= 3 {
        let gaps: Vec<f64> = ups.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        // Most spacings are one surface run (twice that at a section end).
        let run = median(&gaps) as u64;
        z.run_bytes = Some(run);
        z.surfaces = surfaces_from(&ups, run);
        fine_layout = Some((ZoneLayout::SurfaceStrokes, 0.0));
        notes.push(format!(
            "profile of {} points: the media rate jumps back up {} times (about every {}), steps down {downs} times",
            prof.len(),
            ups.len(),
            bytes(run)
        ));
    } else {
        notes.push(format!(
            "profile of {} points: the media rate steps down {downs} times, up {} times",
            prof.len(),
            ups.len()
        ));
    }
    z.layout = fine_layout.map(|f| f.0);
    z.plateaus = plateaus;
    s.plots.push(
        Plot::new(
            "t14_throughput.svg",
            "TEST 14: sequential read throughput against offset (Figure 24)",
            "offset (GB)",
            "throughput (MB/s)",
        )
        .line(
            "media rate",
            prof.iter().map(|p| (p.0 as f64 / 1e9, p.1)).collect(),
        ),
    );
    s.plots.push(
        Plot::new(
            "t14_sequential_latency.svg",
            "TEST 14: latency of 256 KiB sequential reads from LBA 0 (Figure 26)",
            "offset (MiB)",
            "latency (ms)",
        )
        .per_op("reads", &lat)
        .log(),
    );
    let evidence = notes.join("; ");
    match z.layout {
        Some(l) => s
            .report
            .set("zones.layout", json!(l), "14", evidence.clone(), 0.8),
        None => s.report.unknown(
            "zones.layout",
            "14",
            format!("no surface change found ({evidence})"),
        ),
    }
    match z.surfaces {
        Some(n) => s
            .report
            .set("zones.surfaces", json!(n), "14", evidence.clone(), 0.7),
        None => s.report.unknown(
            "zones.surfaces",
            "14",
            format!("no complete cycle through the surfaces was seen ({evidence})"),
        ),
    }
    let big: Vec<String> = {
        let mut p = z.plateaus.clone();
        p.sort_by_key(|x| std::cmp::Reverse(x.bytes));
        p.iter()
            .take(3)
            .map(|x| format!("{} at {:.1} MB/s", bytes(x.bytes), x.mb_per_s))
            .collect()
    };
    s.report.set(
        "zones.plateaus",
        json!(z.plateaus.len()),
        "14",
        format!(
            "{} plateaus of constant media rate; the largest: {}{}",
            z.plateaus.len(),
            big.join(", "),
            if regular {
                ""
            } else {
                " (no track structure: these are not a disk's recording zones)"
            }
        ),
        if regular { 0.7 } else { 0.2 },
    );
    let verdict = format!(
        "{} plateaus, layout {}, {} surfaces",
        z.plateaus.len(),
        z.layout.map_or("unknown".into(), |l| format!("{l:?}")),
        z.surfaces.map_or("unknown".into(), |n| n.to_string())
    );
    s.report.zones = Some(z);
    Ok(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surfaces_are_counted_between_missing_changes() {
        // Surface changes every 10 units, 3 per section (4 surfaces), sections of 40.
        let pos: Vec<u64> = (0..5u64)
            .flat_map(|sec| (1..4u64).map(move |k| sec * 40 + k * 10))
            .collect();
        assert_eq!(surfaces_from(&pos, 10), Some(4));
        assert_eq!(surfaces_from(&[10, 20], 10), None);
    }

    #[test]
    fn crossings_group_by_their_price() {
        let c = |at, extra| Cross { at, extra };
        let g = kinds(&[c(1, 1.0), c(2, 1.01), c(3, 5.0), c(4, 1.0)]);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].len(), 3);
    }
}
