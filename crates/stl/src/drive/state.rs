//! The drive state in the image (clock, damaged sectors, statistics), written on FLUSH, close
//! and power cut, and about once a second unsynced; and the poisoned handle that refuses
//! writes after a metadata failure.

use super::{DevResult, DmDrive, Inner};
use crate::error::Result;
use crate::image::DriveState;
use std::time::{Duration, Instant};
use tegula_device::image::ImageState;
use tegula_device::DeviceError;

impl DmDrive {
    /// Persists the drive state (clock, damaged sectors, statistics) to the image now.
    pub fn save_state(&self) -> Result<()> {
        self.inner.lock().save_state()
    }
}

impl Inner {
    /// Writes the drive state to the image and syncs it (the media's damage survives even a
    /// power cut the host process does not outlive).
    pub(super) fn save_state(&mut self) -> Result<()> {
        self.save_state_with(true)
    }

    /// At most once a second of wall time, writes the drive state without syncing, so that a
    /// server killed between FLUSHes leaves counters and clock nearly current.
    pub(super) fn maybe_save_state(&mut self) {
        if self.image.is_some()
            && !self.crash_armed
            && self.last_save.elapsed() >= Duration::from_secs(1)
        {
            let _ = self.save_state_with(false);
        }
    }

    /// Writes the drive state to the image, `fdatasync`ing it with `sync`; a failed write
    /// poisons the drive.
    fn save_state_with(&mut self, sync: bool) -> Result<()> {
        self.last_save = Instant::now();
        if self.read_only || self.crash_armed {
            return Ok(());
        }
        let Some(img) = &mut self.image else {
            return Ok(());
        };
        let state = DriveState {
            seq: 0,
            media: ImageState {
                seq: 0,
                now: self.media.now(),
                zones: Vec::new(),
                destroyed: self.media.shingling().destroyed().clone(),
                injected: self.media.injected_errors().clone(),
                stats: self.media.stats(),
            },
            stl: self.layer.stats(),
        };
        if let Err(e) = img.write_state(state, sync) {
            self.poisoned = Some(e.to_string());
            return Err(e);
        }
        Ok(())
    }

    /// Refuses writes on a read-only or poisoned drive.
    pub(super) fn writable(&self) -> DevResult<()> {
        if self.read_only {
            return Err(DeviceError::ReadOnlyHandle);
        }
        if let Some(p) = &self.poisoned {
            return Err(DeviceError::Poisoned(p.clone()));
        }
        Ok(())
    }

    /// Appends the media's queued damage events to the metadata log (a failure poisons the
    /// drive). Not after an armed crash: the process is gone.
    pub(super) fn log_damage(&mut self) {
        if self.crash_armed || self.read_only {
            return;
        }
        if let Err(e) = self.layer.log().log_media(&mut self.media) {
            self.poisoned = Some(e.to_string());
        }
    }

    /// After a failed command: a power cut persists the media's damage (the torn write's
    /// included) and the drive state, unless it stands for a crashed process; a metadata
    /// failure poisons the drive.
    pub(super) fn after_error(&mut self, e: &DeviceError) {
        match e {
            DeviceError::PowerLoss => {
                if let Some(c) = &mut self.vcache {
                    c.clear();
                }
                if self.crash_armed {
                    self.poisoned =
                        Some("the host process crashed (fault injection): reopen the image".into());
                    return;
                }
                self.log_damage();
                let _ = self.save_state();
            }
            DeviceError::Poisoned(m) if self.poisoned.is_none() => {
                self.poisoned = Some(m.clone());
            }
            _ => {}
        }
    }
}
