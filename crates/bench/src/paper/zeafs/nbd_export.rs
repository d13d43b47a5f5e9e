//! `crates/nbd`'s server on a Unix socket for the ext4 drives: an accept loop that can be
//! stopped, each connection served by [`tegula_nbd::serve_connection`] on its own thread.

use crate::error::{Error, Result};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use tegula_device::BlockDevice;
use tegula_nbd::{serve_connection, ServerOptions};

/// A running export; stopped on drop.
pub(super) struct NbdExport {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<Vec<JoinHandle<()>>>>,
}

impl NbdExport {
    /// Serves `dev` on the Unix socket `path`.
    pub fn start(path: &Path, dev: Arc<dyn BlockDevice>) -> Result<NbdExport> {
        let _ = std::fs::remove_file(path);
        let l = UnixListener::bind(path)
            .map_err(|e| Error::io(format!("binding {}", path.display()), e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let accept = std::thread::spawn(move || {
            let mut conns = Vec::new();
            for c in l.incoming() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(c) = c else { continue };
                let dev = dev.clone();
                conns.push(std::thread::spawn(move || {
                    let opts = ServerOptions::default();
                    if let Ok(w) = c.try_clone() {
                        // The client disconnecting ends the connection; other errors end it
                        // too, and the run then fails on the client's side.
                        let _ = serve_connection(c, w, dev.as_ref(), &opts);
                    }
                }));
            }
            conns
        });
        Ok(NbdExport {
            path: path.to_path_buf(),
            stop,
            accept: Some(accept),
        })
    }

    /// Stops accepting and waits for every connection to end (the client disconnected).
    pub fn stop(&mut self) {
        if let Some(h) = self.accept.take() {
            self.stop.store(true, Ordering::Relaxed);
            let _ = UnixStream::connect(&self.path);
            if let Ok(conns) = h.join() {
                for c in conns {
                    let _ = c.join();
                }
            }
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Drop for NbdExport {
    fn drop(&mut self) {
        self.stop();
    }
}
