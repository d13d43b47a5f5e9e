//! Fault injection on the whole drive: power cuts (armed or immediate) that lose the volatile
//! cache, and power-on recovery of the translation layer from its metadata log.

use super::DmDrive;
use crate::error::Result;
use tegula_device::media::PowerOnReport;

impl DmDrive {
    /// Arms a power cut during the `after`-th media write from now (cleaning and metadata
    /// writes count too); see
    /// [`Media::arm_power_cut`](tegula_device::Media::arm_power_cut).
    pub fn arm_power_cut(&self, after: u64, seed: u64) {
        self.inner.lock().media.arm_power_cut(after, seed);
    }

    /// Arms a crash of the host process during the `after`-th media write from now: the write
    /// is torn as in [`Self::arm_power_cut`], and then the drive persists nothing more (no
    /// metadata, no drive state), as when the server is killed with SIGKILL. Drop the drive and
    /// reopen the image to recover; the drive refuses every command until then.
    pub fn arm_crash(&self, after: u64, seed: u64) {
        let mut g = self.inner.lock();
        g.media.arm_power_cut(after, seed);
        g.crash_armed = true;
    }

    /// Cuts power now: the volatile cache is lost.
    pub fn power_cut(&self) {
        let mut g = self.inner.lock();
        g.media.power_cut();
        if let Some(c) = &mut g.vcache {
            c.clear();
        }
        g.log_damage();
    }

    /// Whether the drive has power.
    pub fn is_powered(&self) -> bool {
        self.inner.lock().media.is_powered()
    }

    /// Restores power and recovers the translation layer from its metadata log.
    pub fn power_on(&self) -> Result<PowerOnReport> {
        let mut g = self.inner.lock();
        let g = &mut *g;
        if g.crash_armed {
            return Err(crate::error::StlError::Meta(
                "the host process crashed (fault injection): reopen the image".into(),
            ));
        }
        let r = g.media.power_on();
        if let Some(c) = &mut g.vcache {
            c.clear();
        }
        // Recovery rebuilds the damage from the log: everything the media did must be in it.
        g.log_damage();
        let redo = !g.read_only;
        g.layer.recover(&mut g.media, redo)?;
        g.last_io = g.media.now();
        g.save_state()?;
        Ok(r)
    }
}
