//! Replay of a log band: its chunks in order up to the zone's write pointer, each checked.
//!
//! What may end a band's log, and what is corruption, follows from what the device promises:
//! the write pointer never covers a sector that did not reach the media (after a power cut it
//! rolls back to the first lost sector; a host-kept pointer is persisted only after the data
//! is synced), and a sector is written whole. So every chunk that lies entirely below the
//! write pointer was written entirely, and a power cut can only leave a *torn tail*: a chunk
//! whose header sector is there but whose last sectors are not, so that it claims to run past
//! the write pointer. Hence, as LevelDB's log reader tells a record cut short by the end of
//! the file (the writer died) from one whose checksum fails (corruption):
//!
//! * a chunk whose (checksummed) header claims sectors past the write pointer is the torn
//!   tail: replay of the band ends there, and nothing is ever appended behind it;
//! * anything else that is wrong below the write pointer — no chunk magic where a chunk must
//!   start, a damaged header, a payload whose checksum fails, a malformed record — is
//!   [`Error::Corruption`] naming the zone and byte offset of the chunk, wherever it lies,
//!   whether or not valid chunks follow. A flipped bit in the last chunk of the log is no more
//!   a torn write than one in the first.
//!
//! One exception: a sector of zeros where a chunk must start, with no valid chunk after it in
//! the band, ends the log cleanly: the zone was finished (its write pointer moved to its end
//! over sectors never written) or the device keeps whole zones. Zeros with a valid chunk
//! behind them are corruption like any other damage.
//!
//! A continued chunk's last record goes on in the next chunk: replay carries its bytes over
//! and reads the record once the next chunk completes it. A record still incomplete where the
//! band's log ends is handed back ([`LogEnd::carry`]): a log tail slot may hold its rest, and
//! without one it was never acknowledged (the slot is written before the write returns).
//!
//! Version 1 chunks (see [`super::chunk`]) have no header checksum, so a damaged length field
//! can make one claim to run past the write pointer; such a chunk is taken for the torn tail
//! only if no valid chunk starts after it in the band.

use super::chunk::{chunk_payload, read_head, Head};
use super::{records, whole_records_len, Record};
use crate::error::{Error, Result};
use crate::io::{Dev, IoKind};

/// How replay of one log band ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogEnd {
    /// The first bytes of a record that a continued chunk began and no chunk after it
    /// completed (empty when the log ends at a record's end).
    pub carry: Vec<u8>,
    /// Sector just past the last chunk replayed.
    pub end_sector: u64,
    /// A chunk torn by a power cut starts at `end_sector`.
    pub torn: bool,
    /// The visitor asked to stop (after the chunk ending at `end_sector`).
    pub stopped: bool,
}

/// Reads log band `zone` up to its write pointer `wp_sectors`, handing each batch record to
/// `visit` in log order until it returns `false`. Damage below the write pointer is
/// [`Error::Corruption`] (see the module documentation).
pub fn replay_zone(
    dev: &Dev,
    zone: u32,
    wp_sectors: u64,
    visit: &mut dyn FnMut(Record<'_>) -> bool,
) -> Result<LogEnd> {
    let ss = dev.ss;
    let mut pos = 0u64;
    // Read in large pieces; a chunk may span pieces.
    let piece = (1u64 << 20).div_ceil(ss).max(1);
    let mut buf: Vec<u8> = Vec::new();
    let mut buf_start = 0u64;
    let ensure = |buf: &mut Vec<u8>, buf_start: &mut u64, pos: u64, secs: u64| -> Result<()> {
        let have = buf.len() as u64 / ss;
        if pos < *buf_start || pos + secs > *buf_start + have {
            let n = secs.max(piece).min(wp_sectors - pos);
            *buf = dev.read_at(zone, pos * ss, (n * ss) as usize, IoKind::Log)?;
            *buf_start = pos;
        }
        Ok(())
    };
    let damaged = |pos: u64, what: String| {
        Error::corruption(
            zone,
            pos * ss,
            format!(
                "log chunk at sector {pos}, below the write pointer (sector {wp_sectors}): \
                 {what}; not a torn write"
            ),
        )
    };
    // The same, keeping the decoder's error as the cause (its text ends the message, as
    // every error of the stack does with its source).
    let undecodable = |pos: u64, e: tegula_codec::FormatError| {
        Error::corruption_from(
            zone,
            pos * ss,
            format!(
                "log chunk at sector {pos}, below the write pointer (sector {wp_sectors}), does \
                 not decode, so it is not a torn write: {e}"
            ),
            e,
        )
    };
    // The start of a record a continued chunk began.
    let mut carry: Vec<u8> = Vec::new();
    while pos < wp_sectors {
        ensure(&mut buf, &mut buf_start, pos, 1)?;
        let at = ((pos - buf_start) * ss) as usize;
        let head = read_head(&buf[at..]);
        let version = match head {
            Head::Missing if buf[at..at + ss as usize].iter().all(|&b| b == 0) => {
                // A never-written sector below the write pointer: a finished zone, or a device
                // that keeps whole zones (kvimr's safe slots). The log ends here unless a valid
                // chunk follows, which would make this a damaged one.
                if let Some(next) = valid_chunk_after(dev, zone, pos + 1, wp_sectors)? {
                    return Err(damaged(
                        pos,
                        format!("a zeroed sector, but a valid chunk follows at sector {next}"),
                    ));
                }
                return Ok(LogEnd {
                    end_sector: pos,
                    carry,
                    ..LogEnd::default()
                });
            }
            Head::Missing => return Err(damaged(pos, "no chunk magic".into())),
            Head::Damaged(e) => return Err(undecodable(pos, e.into())),
            Head::Chunk { version, .. } => version,
        };
        let secs = head.sectors(ss);
        if pos + secs > wp_sectors {
            if version == 1 {
                if let Some(next) = valid_chunk_after(dev, zone, pos + 1, wp_sectors)? {
                    return Err(damaged(
                        pos,
                        format!(
                            "its length runs past the write pointer but a valid chunk \
                             follows at sector {next}"
                        ),
                    ));
                }
            }
            return Ok(LogEnd {
                end_sector: pos,
                torn: true,
                carry,
                ..LogEnd::default()
            });
        }
        ensure(&mut buf, &mut buf_start, pos, secs)?;
        let at = ((pos - buf_start) * ss) as usize;
        let chunk = &buf[at..at + (secs * ss) as usize];
        let payload = match chunk_payload(chunk) {
            Ok(Some(p)) => p,
            Ok(None) => return Err(damaged(pos, "no chunk magic".into())),
            Err(e) => return Err(undecodable(pos, e)),
        };
        let joined;
        let log: &[u8] = if carry.is_empty() {
            payload
        } else {
            joined = [&carry[..], payload].concat();
            &joined
        };
        let continued = matches!(
            head,
            Head::Chunk {
                continued: true,
                ..
            }
        );
        let whole = if continued {
            whole_records_len(log)
        } else {
            log.len()
        };
        for r in records(&log[..whole]) {
            let r = r.map_err(|e| undecodable(pos, e))?;
            if !visit(r) {
                return Ok(LogEnd {
                    end_sector: pos + secs,
                    stopped: true,
                    ..LogEnd::default()
                });
            }
        }
        carry = log[whole..].to_vec();
        pos += secs;
    }
    Ok(LogEnd {
        end_sector: pos,
        carry,
        ..LogEnd::default()
    })
}

/// The first sector in `from..wp_sectors` of log band `zone` at which a whole, valid chunk
/// starts (asked about version 1 chunks, whose length has no checksum of its own, and about
/// a zeroed sector where a chunk must start).
fn valid_chunk_after(dev: &Dev, zone: u32, from: u64, wp_sectors: u64) -> Result<Option<u64>> {
    let ss = dev.ss;
    let piece = (1u64 << 20).div_ceil(ss).max(1);
    let mut s = from;
    while s < wp_sectors {
        let n = piece.min(wp_sectors - s);
        let buf = dev.read_at(zone, s * ss, (n * ss) as usize, IoKind::Log)?;
        for i in 0..n {
            let at = (i * ss) as usize;
            let head = &buf[at..];
            let secs = read_head(head).sectors(ss);
            if secs == 0 || s + i + secs > wp_sectors {
                continue;
            }
            let whole;
            let chunk = if at + (secs * ss) as usize <= buf.len() {
                head
            } else {
                whole = dev.read_at(zone, (s + i) * ss, (secs * ss) as usize, IoKind::Log)?;
                &whole[..]
            };
            // A version 2 chunk checks itself (header and payload crcs; its records may
            // continue a record of the chunk before); a version 1 chunk's records must decode.
            if let Ok(Some(p)) = chunk_payload(chunk) {
                let v1 = matches!(read_head(chunk), Head::Chunk { version: 1, .. });
                if !v1 || records(p).all(|r| r.is_ok()) {
                    return Ok(Some(s + i));
                }
            }
        }
        s += n;
    }
    Ok(None)
}

/// Sectors [`chunks_beyond_write_pointer`] reads at a time (1 MiB of 512-byte sectors, 4 MiB of
/// 4 KiB ones).
const PIECE_SECTORS: u64 = 2048;

/// The records of the chunks a crashed process wrote to log band `zone` from its saved write
/// pointer `from` up to sector `to` (where a log tail slot says the log went on), read past
/// the write pointer ([`Dev::read_beyond`]): the payloads of whole, valid chunks lying back to
/// back from `from` to exactly `to`, concatenated (the log bytes, which may begin with the rest
/// of a record and end in part of one); `None` when anything else is there (a
/// chunk that is missing, damaged or stale, one that runs past `to`) or the device keeps
/// nothing past its write pointers. The caller checks the records' sequence numbers.
pub fn chunks_beyond_write_pointer(
    dev: &Dev,
    zone: u32,
    from: u64,
    to: u64,
) -> Result<Option<Vec<u8>>> {
    chunks_beyond_write_pointer_in_pieces(dev, zone, from, to, PIECE_SECTORS)
}

/// [`chunks_beyond_write_pointer`] reading at most `piece` sectors at a time (more for a
/// chunk longer than that); public so that tests can make the pieces small.
pub fn chunks_beyond_write_pointer_in_pieces(
    dev: &Dev,
    zone: u32,
    from: u64,
    to: u64,
    piece: u64,
) -> Result<Option<Vec<u8>>> {
    let piece = piece.max(1);
    if to <= from {
        return Ok((to == from).then(Vec::new));
    }
    let ss = dev.ss;
    let total = to - from;
    // Read in pieces, so that a band's worth of chunks is never one allocation.
    let mut window: Vec<u8> = Vec::new();
    let mut wstart = 0u64;
    let mut out = Vec::new();
    let mut pos = 0u64;
    while pos < total {
        let have = |window: &Vec<u8>, wstart: u64, upto: u64| {
            pos >= wstart && upto <= wstart + window.len() as u64 / ss
        };
        if !have(&window, wstart, pos + 1) {
            let n = piece.min(total - pos);
            let Some(b) = dev.read_beyond(zone, from + pos, n)? else {
                return Ok(None);
            };
            (window, wstart) = (b, pos);
        }
        let head = read_head(&window[((pos - wstart) * ss) as usize..]);
        if !matches!(head, Head::Chunk { version: 2, .. }) {
            return Ok(None);
        }
        let secs = head.sectors(ss);
        if secs == 0 || pos + secs > total {
            return Ok(None);
        }
        if !have(&window, wstart, pos + secs) {
            // A chunk longer than what is left of the piece: read it whole.
            let n = secs.max(piece.min(total - pos));
            let Some(b) = dev.read_beyond(zone, from + pos, n)? else {
                return Ok(None);
            };
            (window, wstart) = (b, pos);
        }
        let at = ((pos - wstart) * ss) as usize;
        let chunk = &window[at..at + (secs * ss) as usize];
        // Each chunk checks itself; the caller decodes the records (which may run from one
        // chunk into the next after a continued one).
        match chunk_payload(chunk) {
            Ok(Some(p)) => out.extend_from_slice(p),
            _ => return Ok(None),
        }
        pos += secs;
    }
    Ok(Some(out))
}
