//! KVIMR's compaction-aware track allocation. The LSM level of a file tells how long it will
//! live: files of the small, often compacted ("hot") levels die soon, files of the large
//! ("cold") levels live long. Bottom-track writes are what can need a read-modify-write, so:
//!
//! * With `cold_runs` (the default), a cold file first takes a **run**: physically contiguous
//!   free tracks, its bottoms and the tops between them, whose bottoms have no valid
//!   neighbour outside the run. Its bottoms are written before its own tops, so nothing is
//!   damaged, and when the file dies the run frees whole: the next cold file finds bottoms
//!   and tops free together. (Taking lone clean bottoms instead, as the paper's allocation
//!   does, interleaves every cold file with the tops of others: near full every free bottom
//!   lies between valid tops and each cold file needs an RMW of several victims.) When no
//!   such run is free, the steps below; when they find too few clean bottoms, the run with
//!   the fewest victims outside it.
//! * While bottom tracks with no valid neighbouring top are plentiful (space usage below
//!   `bottom_share`, as three-phase's first phase), every file takes them: nothing is damaged
//!   and the faster bottom tracks carry all the data.
//! * Beyond, bottom tracks are kept for the cold levels (key idea 1): a cold file takes free
//!   bottoms with no valid neighbour (no RMW), then the top tracks between its own bottoms
//!   (they die with the file, so the file's next tenant finds bottom and top free together),
//!   then tops whose neighbouring bottoms are all in use (no RMW now), then bottoms with valid
//!   neighbours (an RMW, merged per file in KVIMR-M), then anything. A hot file takes tops
//!   whose neighbouring bottoms are in use (writing a top damages nothing, and it blocks no
//!   free bottom), then any top, then anything.
//! * Each level is a stream whose files follow one another physically from where the level's
//!   last file ended, so the outputs of one compaction — created together, compacted together
//!   later — are as sequential as the free space allows (key idea 2).
//!
//! A file's tracks are ordered bottoms first, then tops, each in physical order: its bottoms
//! are written before its own tops, which therefore never need a read-modify-write. Files
//! without a level (a log that found no safe slot) count as hot.

use super::{walk, Allocator, Request, View};

/// The compaction-aware allocator.
#[derive(Debug)]
pub struct CompactionAware {
    hot_levels: u8,
    bottom_share: f64,
    cold_runs: bool,
    /// Per level (256: no level): where its next file starts (a data position).
    cursor: Vec<Option<usize>>,
}

impl CompactionAware {
    /// Levels below `hot_levels` are hot; below `bottom_share` space usage every file takes
    /// bottom tracks; with `cold_runs` cold files take runs of bottoms and tops first.
    pub fn new(hot_levels: u8, bottom_share: f64, cold_runs: bool) -> Self {
        CompactionAware {
            hot_levels,
            bottom_share,
            cold_runs,
            cursor: vec![None; 257],
        }
    }
}

impl Allocator for CompactionAware {
    fn pick(&mut self, view: &View<'_>, req: &Request) -> Vec<u32> {
        let hot = req.level.is_none_or(|l| l < self.hot_levels);
        let slot = req.level.map_or(256, |l| l as usize);
        let start = match req.prev {
            Some(t) => view.pos(t) + 1,
            None => self.cursor[slot].unwrap_or(0),
        };
        let plenty = view.usage() < self.bottom_share;
        let mut need = req.sectors;
        let mut got: Vec<u32> = Vec::new();
        // Neighbours of `t` that are free and not taken by this file already.
        let free_outside = |t: u32, got: &[u32]| {
            view.layout
                .track(t)
                .neighbours()
                .filter(|&n| view.free(n) && !got.contains(&n))
                .count()
        };
        let clean_bottom = |t: u32| view.bottom(t) && view.valid_neighbours(t) == 0;
        let runs = self.cold_runs && !hot;
        if runs {
            // A run whose bottoms damage nothing outside it.
            if let Some(w) = window(view, start, req.sectors).filter(|w| w.1 == 0) {
                got = w.0;
                need = 0;
            }
        }
        if (plenty || !hot) && need > 0 {
            walk(view, start, &mut need, &mut got, clean_bottom);
        }
        if runs && !plenty && need > 0 {
            // Too few clean bottoms: the run with the fewest victims outside it (the file's
            // bottoms are written before its own tops, so only tracks outside can be).
            if let Some(w) = window(view, start, req.sectors) {
                got = w.0;
                need = 0;
            }
        }
        if hot {
            let g = got.clone();
            walk(view, start, &mut need, &mut got, |t| {
                !view.bottom(t) && free_outside(t, &g) == 0
            });
            walk(view, start, &mut need, &mut got, |t| !view.bottom(t));
        } else {
            // Tops between this file's own bottoms, then tops over bottoms in use.
            let g = got.clone();
            walk(view, start, &mut need, &mut got, |t| {
                !view.bottom(t) && view.layout.track(t).neighbours().all(|n| g.contains(&n))
            });
            let g = got.clone();
            walk(view, start, &mut need, &mut got, |t| {
                !view.bottom(t) && free_outside(t, &g) == 0
            });
            walk(view, start, &mut need, &mut got, |t| {
                view.bottom(t) && view.valid_neighbours(t) <= 1
            });
            walk(view, start, &mut need, &mut got, |t| view.bottom(t));
        }
        walk(view, start, &mut need, &mut got, |_| true);
        if let Some(high) = got.iter().map(|&t| view.pos(t)).max() {
            self.cursor[slot] = Some(high + 1);
        }
        got.sort_by_key(|&t| (!view.bottom(t), view.pos(t)));
        got
    }
}

/// The tracks of a window of a physically contiguous run of free tracks, from data position
/// `start` on (wrapping), that holds `sectors`, and the number of valid tracks outside it next
/// to its bottoms (the victims of writing it): the first window without victims, else the
/// first with the fewest. A window is aligned to one end of its run, so that what it leaves
/// free stays one run (a window inside a run would leave a lone bottom between valid tops,
/// which no file can take without a read-modify-write).
fn window(view: &View<'_>, start: usize, sectors: u64) -> Option<(Vec<u32>, usize)> {
    let n = view.data_len();
    let layout = view.layout;
    // Victims outside the window [a, b] (track numbers) of writing its bottoms.
    let cost = |a: u32, b: u32| -> usize {
        let mut c = 0;
        for t in [a, b] {
            if view.bottom(t) {
                c += layout
                    .track(t)
                    .neighbours()
                    .filter(|&x| (x < a || x > b) && view.state.is_valid(x))
                    .count();
            }
            if a == b {
                break;
            }
        }
        c
    };
    let mut best: Option<(usize, u64, u32, u32)> = None;
    let mut i = 0;
    while i < n {
        let t0 = view.at(start + i);
        if !view.free(t0) {
            i += 1;
            continue;
        }
        // The run of free tracks physically following t0 (same surface, adjacent cylinders).
        let mut run = vec![t0];
        let mut j = i + 1;
        while j < n {
            let prev = *run.last().unwrap_or(&t0);
            let t = view.at(start + j);
            if !view.free(t) || !layout.track(prev).neighbours().any(|x| x == t) {
                break;
            }
            run.push(t);
            j += 1;
        }
        i = j;
        let size = |t: &u32| layout.track(*t).sectors as u64;
        if run.iter().map(size).sum::<u64>() < sectors {
            continue;
        }
        // The shortest window at each end of the run, or one track in from an end that is a
        // top (a lone top is left, which a hot file takes without harm): the one with the
        // fewest victims, then the least room left unused in its last track.
        let shortest = |from: &mut dyn Iterator<Item = usize>| -> Option<(usize, usize, u64)> {
            let mut cap = 0u64;
            let mut first = None;
            for k in from {
                first.get_or_insert(k);
                cap += size(&run[k]);
                if cap >= sectors {
                    return first.map(|f| (f, k, cap - sectors));
                }
            }
            None
        };
        let m = run.len();
        let top = |k: usize| !view.bottom(run[k]);
        let mut cands = Vec::new();
        cands.extend(shortest(&mut (0..m)));
        cands.extend(shortest(&mut (0..m).rev()));
        if m > 1 && top(0) {
            cands.extend(shortest(&mut (1..m)));
        }
        if m > 1 && top(m - 1) {
            cands.extend(shortest(&mut (0..m - 1).rev()));
        }
        for (x, y, slack) in cands {
            let (a, b) = (run[x].min(run[y]), run[x].max(run[y]));
            let c = cost(a, b);
            if best.is_none_or(|(bc, bs, ..)| (c, slack) < (bc, bs)) {
                best = Some((c, slack, a, b));
            }
        }
        if best.is_some_and(|(c, ..)| c == 0) {
            break;
        }
    }
    let (c, _, a, b) = best?;
    Some(((a..=b).collect(), c))
}
