//! The media's damage journal: when enabled, every change a host-visible operation makes to
//! the damage state (a media write shingling its neighbours and clearing injected errors, a
//! discard, an injected error) is queued as a [`MediaEvent`], so that a layer above can persist
//! the events in order next to the metadata they belong to, and replay them onto a saved
//! damage state with [`Media::apply_event`] after a crash of the host process.

use super::Media;

/// One change to the media's damage state (destroyed and injected-error sectors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaEvent {
    /// `sectors` at `lba` reached the media: they read back again, the tracks after them in
    /// their band are shingled over, and injected errors there are cleared.
    Write {
        /// First sector written.
        lba: u64,
        /// Sectors that reached the media (a torn write counts only its persisted prefix).
        sectors: u64,
    },
    /// `sectors` at `lba` were discarded: their damage is forgotten.
    Discard {
        /// First sector.
        lba: u64,
        /// Sectors.
        sectors: u64,
    },
    /// `sectors` at `lba` read back as media errors from now on (fault injection).
    Inject {
        /// First sector.
        lba: u64,
        /// Sectors.
        sectors: u64,
    },
}

impl MediaEvent {
    /// The range the event covers, as `(lba, sectors)`.
    pub fn range(&self) -> (u64, u64) {
        match *self {
            MediaEvent::Write { lba, sectors }
            | MediaEvent::Discard { lba, sectors }
            | MediaEvent::Inject { lba, sectors } => (lba, sectors),
        }
    }
}

impl Media {
    /// Starts (or stops, dropping what is queued) queuing damage events.
    pub fn record_events(&mut self, on: bool) {
        self.events = on.then(Vec::new);
    }

    /// Whether damage events are queued and some are waiting.
    pub fn has_events(&self) -> bool {
        self.events.as_ref().is_some_and(|e| !e.is_empty())
    }

    /// Takes the queued damage events, oldest first.
    pub fn take_events(&mut self) -> Vec<MediaEvent> {
        self.events.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Queues an event when recording is on.
    pub(super) fn push_event(&mut self, e: MediaEvent) {
        if let Some(q) = &mut self.events {
            q.push(e);
        }
    }

    /// Replays an event onto the damage state: no data moves, no time passes, nothing is
    /// queued. Events outside the media are clipped to it.
    pub fn apply_event(&mut self, e: &MediaEvent) {
        let (lba, n) = e.range();
        let lba = lba.min(self.capacity);
        let n = n.min(self.capacity - lba);
        if n == 0 {
            return;
        }
        match e {
            MediaEvent::Write { .. } => {
                self.shingle.on_write(self.mech.geometry(), lba, n);
                self.faults.injected.remove(lba, lba + n);
            }
            MediaEvent::Discard { .. } => self.shingle.clear(lba, n),
            MediaEvent::Inject { .. } => self.faults.injected.insert(lba, lba + n),
        }
    }
}
