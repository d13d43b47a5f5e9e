//! Three-phase write management (Tracklace; Gao, Zhu and Gage's patent), as the KVIMR slides
//! give it: with space usage below 50% only bottom tracks are written (no top track is ever
//! rewritten); up to 75% also every other top track (a bottom write rewrites at most one top);
//! beyond, every track (at most two). Within the allowed tracks, physical order from where
//! the file or the previous allocation left off; when none of them is free, any free track.

use super::{walk, Allocator, Request, View};

/// The three-phase allocator.
#[derive(Debug, Default)]
pub struct ThreePhase {
    cursor: usize,
}

/// The phase (1, 2 or 3) at space usage `u`.
pub fn phase(u: f64) -> u8 {
    if u < 0.5 {
        1
    } else if u < 0.75 {
        2
    } else {
        3
    }
}

/// Whether phase `phase` may write track `t`: bottoms always; in phase 2 also the top tracks
/// at cylinders 1, 5, 9, … (every other top of a surface); in phase 3 everything.
pub fn allowed(view: &View<'_>, t: u32, phase: u8) -> bool {
    let tr = view.layout.track(t);
    tr.bottom || phase >= 3 || (phase == 2 && tr.cyl % 4 == 1)
}

impl Allocator for ThreePhase {
    fn pick(&mut self, view: &View<'_>, req: &Request) -> Vec<u32> {
        let start = match req.prev {
            Some(t) => view.pos(t) + 1,
            None => self.cursor,
        };
        let ph = phase(view.usage());
        let mut need = req.sectors;
        let mut got = Vec::new();
        walk(view, start, &mut need, &mut got, |t| allowed(view, t, ph));
        walk(view, start, &mut need, &mut got, |_| true);
        if let Some(&t) = got.last() {
            self.cursor = view.pos(t) + 1;
        }
        got.sort_by_key(|&t| view.pos(t));
        got
    }
}
