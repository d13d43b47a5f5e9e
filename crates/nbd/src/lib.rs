//! An NBD server for tegula: serves any [`tegula_device::BlockDevice`] (CMR disks, drive-managed
//! SMR drives, zoned drives as plain block devices) over a Unix socket or a loopback TCP port,
//! so that unmodified tools — `nbdinfo`, `nbdcopy`, `fio --ioengine=nbd`, `nbdfuse` plus ext4 —
//! run on emulated drives. Fixed newstyle negotiation (NBD_OPT_GO, EXPORT_NAME, INFO, LIST,
//! ABORT), simple replies, READ, WRITE with FUA, FLUSH, TRIM, WRITE_ZEROES and DISC; malformed
//! requests get an error reply or end the connection, never the server. Three threads per
//! connection (reader, executor, writer), with a connection limit, handshake, idle and write
//! timeouts, eviction of idle connections when the server is full, and bounded buffers
//! ([`ServerOptions`]). See `docs/cli/serve-nbd.md`.

mod accept;
mod bytes;
pub mod client;
mod negotiate;
pub mod proto;
pub mod server;
mod socket;
mod table;
mod transmission;

pub use client::{ClientError, Command, NbdClient};
pub use server::{serve_connection, Listener, NbdError, ServerOptions, MAX_REQUEST};
pub use transmission::{READ_PIECE, WRITE_PIECE};
