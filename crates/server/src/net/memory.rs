//! The memory of all clients together (Redis's `maxmemory-clients`, client eviction): the
//! network loop counts each connection's buffers as allocated ([`Conn::memory`]: query
//! buffer, pending replies, parser state, spare buffers) after every read, write and reply,
//! and while the total is past [`crate::ServerOptions::max_client_memory`] it closes the
//! connection holding the most, reporting [`ServerEvent::ClientEvicted`]. Many clients each
//! sending a huge argument slowly therefore cannot grow the server past the limit (plus one
//! read of one client, at most `max_request`). Once large buffers are freed, the loop hands
//! the free memory back to the system at its next sweep ([`Loop::trim_if_freed`]).

use super::conn::Conn;
use super::Loop;
use crate::events::ServerEvent;
use crate::stats::Stats;
use std::sync::atomic::Ordering;

/// Buffers of at least this many bytes freed make the loop hand free memory back to the
/// system at its next sweep.
const TRIM_AFTER: usize = 1 << 20;

/// Hands the allocator's free memory back to the system (glibc's `malloc_trim`): glibc keeps
/// freed buffers of up to 32 MiB in its heaps (its mmap threshold grows with the largest
/// buffer freed), so without this the memory of evicted or finished large requests would stay
/// resident after they are gone.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of the allocator's own heaps to the
    // kernel; it touches no memory in use.
    unsafe {
        libc::malloc_trim(0);
    }
}

impl Loop {
    /// Counts connection `t`'s buffers again.
    pub(super) fn account(&mut self, t: usize) {
        let Some(Some(c)) = self.conns.get_mut(t) else {
            return;
        };
        let now = c.memory();
        if c.accounted >= now + TRIM_AFTER {
            self.trim_pending = true;
        }
        self.client_memory = self.client_memory - c.accounted + now;
        c.accounted = now;
        self.publish_memory();
    }

    /// Takes a closed connection's buffers off the count.
    pub(super) fn forget_memory(&mut self, c: &Conn) {
        if c.accounted >= TRIM_AFTER {
            self.trim_pending = true;
        }
        self.client_memory -= c.accounted;
        self.publish_memory();
    }

    /// Gives the memory of large buffers freed since the last call back to the system (at
    /// most once per sweep of the loop).
    pub(super) fn trim_if_freed(&mut self) {
        if std::mem::take(&mut self.trim_pending) {
            release_free_memory();
        }
    }

    fn publish_memory(&self) {
        self.shared
            .stats
            .client_memory
            .store(self.client_memory as u64, Ordering::Relaxed);
    }

    /// Closes the connections holding the most until all together are under the limit.
    pub(super) fn enforce_client_memory(&mut self) {
        let limit = self.shared.opts.max_client_memory;
        if limit == 0 {
            return;
        }
        while self.client_memory > limit {
            let biggest = self
                .conns
                .iter()
                .enumerate()
                .filter_map(|(t, c)| c.as_ref().map(|c| (t, c.accounted, c.peer)))
                .max_by_key(|&(_, bytes, _)| bytes);
            let Some((t, client_bytes, peer)) = biggest else {
                return;
            };
            if client_bytes == 0 {
                return;
            }
            let total_bytes = self.client_memory;
            self.close(t);
            Stats::add(&self.shared.stats.evicted_clients, 1);
            self.report(ServerEvent::ClientEvicted {
                peer,
                client_bytes,
                total_bytes,
                limit,
            });
        }
    }
}
