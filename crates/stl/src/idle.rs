//! Aggressive cleaning in idle time, shared by the translation layers: wait until the host has
//! been idle for `idle_before_cleaning`, then clean one victim after another until the host's
//! next command is due.

use crate::config::{Cleaning, DmConfig};
use crate::error::Result;
use tegula_device::media::Media;
use tegula_device::Nanos;

/// When idle cleaning may start between `last_io` and `until`: `None` under lazy cleaning,
/// when the idle delay has not passed by `until`, or when there is nothing to clean.
pub(crate) fn idle_start(
    cfg: &DmConfig,
    last_io: Nanos,
    until: Nanos,
    work: bool,
) -> Option<Nanos> {
    if cfg.cleaning == Cleaning::Lazy {
        return None;
    }
    let start = last_io + cfg.idle_before_cleaning;
    (until > start && work).then_some(start)
}

/// From `start` (idling the media up to it), calls `clean_one` until the media's clock reaches
/// `until` or `clean_one` finds nothing left (returns `false`); returns whether it cleaned
/// anything.
pub(crate) fn clean_until(
    m: &mut Media,
    start: Nanos,
    until: Nanos,
    mut clean_one: impl FnMut(&mut Media) -> Result<bool>,
) -> Result<bool> {
    if m.now() < start {
        m.idle(start - m.now());
    }
    let mut ran = false;
    while m.now() < until {
        if !clean_one(m)? {
            break;
        }
        ran = true;
    }
    Ok(ran)
}
