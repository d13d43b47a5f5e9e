//! SIGINT, SIGTERM and SIGHUP for long-running commands: the first one sets a flag that the
//! command polls between device commands, so it can stop, persist the drive state of every
//! completed command (and print what finished) and exit; a second one ends the process at
//! once, as a user who presses Ctrl-C twice expects.

use anyhow::Result;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The exit status of a command that stopped on a signal (128 + SIGINT, as shells report it).
pub const EXIT_CODE: u8 = 130;

/// The error a command returns when it stopped because it was asked to.
#[derive(Debug, thiserror::Error)]
#[error("interrupted{0}")]
pub struct Interrupted(pub String);

/// Installs the handlers (once) and returns the flag they set.
pub fn install() -> Result<Arc<AtomicBool>> {
    if let Some(f) = FLAG.get() {
        return Ok(f.clone());
    }
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        // Order matters: the conditional exit sees the flag as the previous signal left it.
        signal_hook::flag::register_conditional_shutdown(sig, EXIT_CODE as i32, flag.clone())?;
        signal_hook::flag::register(sig, flag.clone())?;
    }
    Ok(FLAG.get_or_init(|| flag).clone())
}

/// Whether a stop was requested (false when no handler is installed).
pub fn requested() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::Relaxed))
}
