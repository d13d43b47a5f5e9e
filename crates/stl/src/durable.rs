//! What survives a power cut: the layer's last checkpoint (the map copy on the media) and the
//! records committed since (the out-of-band metadata of completed journal entries, cache block
//! headers, band remap records). Data of the map is kept in memory structures, but it is only
//! appended here after the media write that carries it has completed, and recovery rebuilds
//! the whole layer state from it alone.

/// State rebuilt by replaying records.
pub(crate) trait Replay: Clone {
    /// The record type.
    type Rec: Clone;
    /// Applies one committed record.
    fn apply(&mut self, r: &Self::Rec);
}

/// The live state plus its durable image.
#[derive(Debug, Clone)]
pub(crate) struct Durable<S: Replay> {
    /// Current state (what the controller has in memory).
    pub live: S,
    checkpoint: S,
    records: Vec<S::Rec>,
}

impl<S: Replay> Durable<S> {
    /// Starts from an empty state that is also the first checkpoint.
    pub fn new(s: S) -> Self {
        Durable {
            live: s.clone(),
            checkpoint: s,
            records: Vec::new(),
        }
    }

    /// Commits a record whose media write has completed.
    pub fn commit(&mut self, r: S::Rec) {
        self.live.apply(&r);
        self.records.push(r);
    }

    /// Records committed since the last checkpoint.
    pub fn pending(&self) -> usize {
        self.records.len()
    }

    /// The live state became the checkpoint (a completed map copy).
    pub fn checkpoint(&mut self) {
        self.checkpoint = self.live.clone();
        self.records.clear();
    }

    /// Throws away the live state and rebuilds it from the checkpoint and the records;
    /// returns how many records were replayed.
    pub fn recover(&mut self) -> usize {
        let mut s = self.checkpoint.clone();
        for r in &self.records {
            s.apply(r);
        }
        self.live = s;
        self.records.len()
    }
}
