//! KVIMR's compaction-aware track allocation. Files of the small, often compacted ("hot")
//! levels go to top tracks, which are written without damaging anything; files of the larger,
//! longer-lived ("cold") levels go to bottom tracks, so that the bottom writes that need a
//! read-modify-write are the rare ones. Each level is one stream whose files follow each
//! other physically, so the outputs of one compaction (created together, compacted together
//! later) are as sequential as the free space allows.
//!
//! The two kinds grow toward each other: cold bottoms from the outer diameter inward, hot tops
//! from the inner diameter outward, so that hot tops rarely sit next to the bottoms cold files
//! are written to. In order of preference a cold file takes: free bottom tracks with no valid
//! neighbouring top (no RMW now); free top tracks whose neighbouring bottoms are all in use
//! (no RMW now, and only when one of those bottoms is rewritten); free bottoms with valid
//! neighbours (an RMW, merged per file in KVIMR-M); then anything free. A hot file takes free
//! top tracks, then anything free. A file's tracks are used in physical order. Files
//! without a level (a log that found no safe slot) count as hot.

use super::{walk, Allocator, Request, View};

/// The compaction-aware allocator.
#[derive(Debug)]
pub struct CompactionAware {
    hot_levels: u8,
    /// Per level: where its next file starts (data positions; hot levels count down).
    cursor: Vec<Option<usize>>,
}

impl CompactionAware {
    /// Levels below `hot_levels` are hot.
    pub fn new(hot_levels: u8) -> Self {
        CompactionAware {
            hot_levels,
            cursor: vec![None; 257],
        }
    }

    fn slot(level: Option<u8>) -> usize {
        level.map_or(256, |l| l as usize)
    }
}

/// Like [`walk`], downward from `start`.
fn walk_down(
    view: &View<'_>,
    start: usize,
    need: &mut u64,
    got: &mut Vec<u32>,
    mut take: impl FnMut(u32) -> bool,
) {
    let n = view.data_len();
    for i in 0..n {
        if *need == 0 {
            return;
        }
        let t = view.at(start + n - (i % n));
        if view.free(t) && !got.contains(&t) && take(t) {
            got.push(t);
            *need = need.saturating_sub(view.layout.track(t).sectors as u64);
        }
    }
}

impl Allocator for CompactionAware {
    fn pick(&mut self, view: &View<'_>, req: &Request) -> Vec<u32> {
        let n = view.data_len();
        // Files without a level (a log that found no safe slot) are the hottest of all.
        let hot = req.level.is_none_or(|l| l < self.hot_levels);
        let slot = Self::slot(req.level);
        let mut need = req.sectors;
        let mut got = Vec::new();
        if hot {
            // Downward from the level's cursor (the inner end at first); a file continuing
            // after an earlier persist looks just above its last track first.
            let start = match req.prev {
                Some(t) => view.pos(t) + 1,
                None => self.cursor[slot].unwrap_or(n - 1),
            };
            if req.prev.is_some() {
                walk(view, start, &mut need, &mut got, |t| {
                    !view.bottom(t) && view.pos(t) >= start
                });
            }
            walk_down(view, start, &mut need, &mut got, |t| !view.bottom(t));
            walk_down(view, start, &mut need, &mut got, |_| true);
            if let Some(low) = got.iter().map(|&t| view.pos(t)).min() {
                self.cursor[slot] = Some(low.saturating_sub(1));
            }
        } else {
            let start = match req.prev {
                Some(t) => view.pos(t) + 1,
                None => self.cursor[slot].unwrap_or(0),
            };
            walk(view, start, &mut need, &mut got, |t| {
                view.bottom(t) && view.valid_neighbours(t) == 0
            });
            walk(view, start, &mut need, &mut got, |t| {
                !view.bottom(t) && view.free_neighbours(t) == 0
            });
            walk(view, start, &mut need, &mut got, |t| view.bottom(t));
            walk(view, start, &mut need, &mut got, |_| true);
            if let Some(high) = got.iter().map(|&t| view.pos(t)).max() {
                self.cursor[slot] = Some(high + 1);
            }
        }
        got.sort_by_key(|&t| view.pos(t));
        got
    }
}
