//! The media's damage in the metadata log (format version 2): a checkpoint carries the damage
//! state (destroyed and injected-error sectors) and every record carries the damage events of
//! the media writes that completed since the previous frame, so that the damage rebuilt from
//! the log always agrees with the data and map rebuilt from it — whenever the host process
//! stops. Encodings and their bounds checks.

use crate::durable::dec_count;
use tegula_codec::{Dec, Enc, FormatError};
use tegula_device::media::{Media, MediaEvent};
use tegula_device::RangeSet;

/// The damage state of a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Damage {
    /// Sectors destroyed by shingled writes.
    pub destroyed: RangeSet,
    /// Sectors failing by fault injection.
    pub injected: RangeSet,
}

impl Damage {
    /// The media's current damage.
    pub fn of(m: &Media) -> Self {
        Damage {
            destroyed: m.shingling().destroyed().clone(),
            injected: m.injected_errors().clone(),
        }
    }

    /// Replaces the media's damage with this one.
    pub fn restore(self, m: &mut Media) {
        m.shingling_mut().set_destroyed(self.destroyed);
        m.set_injected(self.injected);
    }

    /// Encodes both range sets.
    pub fn encode(&self, e: &mut Enc) {
        enc_ranges(e, &self.destroyed);
        enc_ranges(e, &self.injected);
    }

    /// Decodes and checks both range sets against a media of `sectors`.
    pub fn decode(d: &mut Dec<'_>, sectors: u64) -> Result<Self, FormatError> {
        Ok(Damage {
            destroyed: dec_ranges(d, "destroyed", sectors)?,
            injected: dec_ranges(d, "injected-error", sectors)?,
        })
    }
}

fn enc_ranges(e: &mut Enc, r: &RangeSet) {
    e.u64(r.len() as u64);
    for (a, b) in r.iter() {
        e.u64(a);
        e.u64(b);
    }
}

/// Ranges: non-empty, in order, disjoint and not touching (as a `RangeSet` keeps them), inside
/// the media.
fn dec_ranges(d: &mut Dec<'_>, what: &str, sectors: u64) -> Result<RangeSet, FormatError> {
    let n = dec_count(d, &format!("{what} ranges"), 16)?;
    let mut r = RangeSet::new();
    let mut prev_end: Option<u64> = None;
    for _ in 0..n {
        let (a, b) = (d.u64()?, d.u64()?);
        if a >= b || b > sectors || prev_end.is_some_and(|p| a <= p) {
            return Err(FormatError::invalid(format!(
                "{what} range {a}..{b} is empty, out of order or outside the media ({sectors} sectors)"
            )));
        }
        prev_end = Some(b);
        r.insert(a, b);
    }
    Ok(r)
}

const EV_WRITE: u8 = 1;
const EV_DISCARD: u8 = 2;
const EV_INJECT: u8 = 3;

/// Encodes damage events (count, then tag, lba, sectors each).
pub(crate) fn encode_events(e: &mut Enc, events: &[MediaEvent]) {
    e.u64(events.len() as u64);
    for ev in events {
        let tag = match ev {
            MediaEvent::Write { .. } => EV_WRITE,
            MediaEvent::Discard { .. } => EV_DISCARD,
            MediaEvent::Inject { .. } => EV_INJECT,
        };
        let (lba, n) = ev.range();
        e.u8(tag);
        e.u64(lba);
        e.u64(n);
    }
}

/// Decodes damage events, each checked against a media of `sectors`.
pub(crate) fn decode_events(d: &mut Dec<'_>, sectors: u64) -> Result<Vec<MediaEvent>, FormatError> {
    let n = dec_count(d, "damage events", 17)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let (tag, lba, k) = (d.u8()?, d.u64()?, d.u64()?);
        if k == 0 || lba.checked_add(k).is_none_or(|e| e > sectors) {
            return Err(FormatError::invalid(format!(
                "damage event at {lba}+{k} is empty or outside the media ({sectors} sectors)"
            )));
        }
        v.push(match tag {
            EV_WRITE => MediaEvent::Write { lba, sectors: k },
            EV_DISCARD => MediaEvent::Discard { lba, sectors: k },
            EV_INJECT => MediaEvent::Inject { lba, sectors: k },
            t => {
                return Err(FormatError::invalid(format!(
                    "unknown damage event type {t}"
                )))
            }
        });
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damage_and_events_round_trip_and_refuse_bad_ranges() {
        let mut dmg = Damage::default();
        dmg.destroyed.insert(10, 20);
        dmg.destroyed.insert(30, 31);
        dmg.injected.insert(5, 6);
        let mut e = Enc::new();
        dmg.encode(&mut e);
        let evs = vec![
            MediaEvent::Write { lba: 1, sectors: 2 },
            MediaEvent::Discard { lba: 3, sectors: 4 },
            MediaEvent::Inject { lba: 5, sectors: 6 },
        ];
        encode_events(&mut e, &evs);
        let b = e.into_bytes();
        let mut d = Dec::new(&b);
        assert_eq!(Damage::decode(&mut d, 100), Ok(dmg));
        assert_eq!(decode_events(&mut d, 100), Ok(evs));
        assert_eq!(d.remaining(), 0);
        // The same bytes on a smaller media: out of range.
        assert!(Damage::decode(&mut Dec::new(&b), 25).is_err());
        // Overlapping ranges are refused.
        let mut e = Enc::new();
        e.u64(2);
        for v in [10u64, 20, 15, 25] {
            e.u64(v);
        }
        assert!(dec_ranges(&mut Dec::new(e.as_bytes()), "x", 100).is_err());
    }
}
