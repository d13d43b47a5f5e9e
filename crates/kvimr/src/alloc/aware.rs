//! KVIMR's compaction-aware track allocation. The LSM level of a file tells how long it will
//! live: files of the small, often compacted ("hot") levels die soon, files of the large
//! ("cold") levels live long. Bottom-track writes are what can need a read-modify-write, so:
//!
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
    /// Per level (256: no level): where its next file starts (a data position).
    cursor: Vec<Option<usize>>,
}

impl CompactionAware {
    /// Levels below `hot_levels` are hot; below `bottom_share` space usage every file takes
    /// bottom tracks.
    pub fn new(hot_levels: u8, bottom_share: f64) -> Self {
        CompactionAware {
            hot_levels,
            bottom_share,
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
        if plenty || !hot {
            walk(view, start, &mut need, &mut got, clean_bottom);
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
