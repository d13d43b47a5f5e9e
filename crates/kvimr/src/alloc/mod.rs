//! Track allocation policies: given the tracks' state, which free data tracks a file's next
//! data goes to. Each policy is one module: [`seq`] (physical order), [`three_phase`]
//! (bottoms, then every other top, then the rest, by space usage) and [`aware`] (KVIMR's
//! compaction-aware allocation by LSM level).

pub mod aware;
pub mod seq;
pub mod three_phase;

use crate::layout::{Layout, NONE};
use crate::options::{Options, Policy};
use crate::tracks::TrackState;

/// What an allocator may look at.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// The layout.
    pub layout: &'a Layout,
    /// The tracks' state.
    pub state: &'a TrackState,
}

impl View<'_> {
    /// Whether track `t` is free.
    pub fn free(&self, t: u32) -> bool {
        self.state.is_free(t)
    }

    /// Whether track `t` is a bottom track.
    pub fn bottom(&self, t: u32) -> bool {
        self.layout.track(t).bottom
    }

    /// Neighbours of `t` holding valid data (what writing bottom track `t` would damage).
    pub fn valid_neighbours(&self, t: u32) -> usize {
        self.layout
            .track(t)
            .neighbours()
            .filter(|&n| self.state.is_valid(n))
            .count()
    }

    /// Neighbours of `t` that are free (bottoms that may be written later, damaging top `t`).
    pub fn free_neighbours(&self, t: u32) -> usize {
        self.layout
            .track(t)
            .neighbours()
            .filter(|&n| self.state.is_free(n))
            .count()
    }

    /// Fraction of the data tracks' sectors in use.
    pub fn usage(&self) -> f64 {
        self.state.usage(self.layout)
    }

    /// Number of data tracks.
    pub fn data_len(&self) -> usize {
        self.layout.data.len()
    }

    /// Position in the data track list of track `t`.
    pub fn pos(&self, t: u32) -> usize {
        let p = self.layout.data_pos[t as usize];
        debug_assert_ne!(p, NONE);
        p as usize
    }

    /// The data track at position `p` (modulo the number of data tracks).
    pub fn at(&self, p: usize) -> u32 {
        self.layout.data[p % self.layout.data.len()]
    }
}

/// One allocation request: tracks for `sectors` more sectors of a file.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// The file's LSM level hint.
    pub level: Option<u8>,
    /// The file's last track so far (to continue sequentially after it).
    pub prev: Option<u32>,
    /// Sectors the new tracks must hold at least.
    pub sectors: u64,
}

/// A track allocation policy.
pub trait Allocator: Send {
    /// Picks free data tracks holding at least `req.sectors` sectors, in the order the file
    /// will use them; fewer when the free tracks run out.
    fn pick(&mut self, view: &View<'_>, req: &Request) -> Vec<u32>;
}

/// Takes tracks for `need` sectors: walks data positions from `start` (wrapping once) and
/// takes those `take` accepts, skipping tracks already in `got`.
pub(crate) fn walk(
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
        let t = view.at(start + i);
        if view.free(t) && !got.contains(&t) && take(t) {
            got.push(t);
            *need = need.saturating_sub(view.layout.track(t).sectors as u64);
        }
    }
}

/// The allocator of `opts.policy`.
pub fn new(opts: &Options) -> Box<dyn Allocator> {
    match opts.policy {
        Policy::Seq => Box::new(seq::Seq::default()),
        Policy::ThreePhase => Box::new(three_phase::ThreePhase::default()),
        Policy::CompactionAware => Box::new(aware::CompactionAware::new(
            opts.hot_levels,
            opts.bottom_share,
            opts.cold_runs,
        )),
    }
}
