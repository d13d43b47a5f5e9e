//! Seq: free tracks in physical order, bottom and top alike, from where the file (or, for a
//! new file, the previous allocation) left off.

use super::{walk, Allocator, Request, View};

/// The sequential allocator.
#[derive(Debug, Default)]
pub struct Seq {
    cursor: usize,
}

impl Allocator for Seq {
    fn pick(&mut self, view: &View<'_>, req: &Request) -> Vec<u32> {
        let start = match req.prev {
            Some(t) => view.pos(t) + 1,
            None => self.cursor,
        };
        let mut need = req.sectors;
        let mut got = Vec::new();
        walk(view, start, &mut need, &mut got, |_| true);
        if let Some(&t) = got.last() {
            self.cursor = view.pos(t) + 1;
        }
        got
    }
}
