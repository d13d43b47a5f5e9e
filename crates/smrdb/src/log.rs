//! The write-ahead log, kept in log bands. Records are gathered in a log buffer and written
//! as one chunk per device write:
//!
//! `magic "SLOG" u32 | crc u32 | len u32 | payload (len bytes) | zero padding to a sector`
//!
//! where the crc (masked crc32c) covers `len | payload`, and the payload is a run of batch
//! records `varint rec_len | varint first_seq | varint count | op*`, an op being
//! `kind u8 (0 delete, 1 put) | bytes key | [bytes value]`. Replay of a log band stops at the
//! first chunk that is missing or fails its checksum when nothing valid follows it in the band
//! (a torn or unwritten tail); a damaged chunk followed by a valid one is corruption, reported
//! as such and never written over (recovery never appends behind a damaged chunk).

use crate::codec::{crc, put_bytes, put_u32, put_varint, Reader};
use crate::error::{Error, Result};
use crate::io::{Dev, IoKind};

/// Chunk magic.
pub const LOG_MAGIC: u32 = u32::from_le_bytes(*b"SLOG");
/// Bytes of a chunk header.
pub const CHUNK_HEADER: usize = 12;

/// One operation of a batch: a put (`Some(value)`) or a delete (`None`).
pub type Op = (Vec<u8>, Option<Vec<u8>>);

/// Appends one encoded operation (the body of a batch record).
pub fn encode_op(buf: &mut Vec<u8>, key: &[u8], value: Option<&[u8]>) {
    buf.push(value.is_some() as u8);
    put_bytes(buf, key);
    if let Some(v) = value {
        put_bytes(buf, v);
    }
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Bytes [`append_record`] appends.
pub fn record_len(first_seq: u64, count: usize, ops: &[u8]) -> usize {
    let body = varint_len(first_seq) + varint_len(count as u64) + ops.len();
    varint_len(body as u64) + body
}

/// Appends a batch record (length prefix included) whose operations are already encoded.
pub fn append_record(buf: &mut Vec<u8>, first_seq: u64, count: usize, ops: &[u8]) {
    let body = varint_len(first_seq) + varint_len(count as u64) + ops.len();
    put_varint(buf, body as u64);
    put_varint(buf, first_seq);
    put_varint(buf, count as u64);
    buf.extend_from_slice(ops);
}

/// Iterates encoded operations; stops at the first malformed one (the engine only iterates
/// operations it encoded itself).
#[derive(Debug, Clone)]
pub struct OpIter<'a> {
    r: Reader<'a>,
}

impl<'a> OpIter<'a> {
    /// Iterates `ops`.
    pub fn new(ops: &'a [u8]) -> Self {
        OpIter {
            r: Reader::new(ops),
        }
    }
}

impl<'a> Iterator for OpIter<'a> {
    type Item = (&'a [u8], Option<&'a [u8]>);
    fn next(&mut self) -> Option<Self::Item> {
        if self.r.is_empty() {
            return None;
        }
        let kind = self.r.u8()?;
        let k = self.r.bytes()?;
        match kind {
            0 => Some((k, None)),
            1 => Some((k, Some(self.r.bytes()?))),
            _ => None,
        }
    }
}

/// Encodes a batch record (with its length prefix) for the log buffer.
pub fn encode_batch(first_seq: u64, ops: &[Op]) -> Vec<u8> {
    let mut rep = Vec::new();
    for (k, v) in ops {
        encode_op(&mut rep, k, v.as_deref());
    }
    let mut out = Vec::with_capacity(rep.len() + 24);
    append_record(&mut out, first_seq, ops.len(), &rep);
    out
}

/// Decodes a chunk payload into batches `(first_seq, ops)`.
pub fn decode_payload(p: &[u8]) -> Result<Vec<(u64, Vec<Op>)>, String> {
    let mut r = Reader::new(p);
    let mut out = Vec::new();
    while !r.is_empty() {
        let rec = r.bytes().ok_or("truncated batch record")?;
        let mut q = Reader::new(rec);
        let bad = || "malformed batch record".to_string();
        let seq = q.varint().ok_or_else(bad)?;
        let n = q.varint().ok_or_else(bad)?;
        let mut ops = Vec::new();
        for _ in 0..n {
            let kind = q.u8().ok_or_else(bad)?;
            let k = q.bytes().ok_or_else(bad)?.to_vec();
            let v = match kind {
                0 => None,
                1 => Some(q.bytes().ok_or_else(bad)?.to_vec()),
                _ => return Err(bad()),
            };
            ops.push((k, v));
        }
        if !q.is_empty() {
            return Err(bad());
        }
        out.push((seq, ops));
    }
    Ok(out)
}

/// The log buffer: batch records gathered behind room for a chunk header, so that a chunk is
/// framed in place (no copy of the buffer per log write).
#[derive(Debug, Clone)]
pub struct LogBuffer {
    /// Header room, records, and (once framed) the padding to a sector.
    buf: Vec<u8>,
    /// End of the records in `buf`.
    end: usize,
}

impl Default for LogBuffer {
    fn default() -> Self {
        LogBuffer {
            buf: vec![0; CHUNK_HEADER],
            end: CHUNK_HEADER,
        }
    }
}

impl LogBuffer {
    /// Bytes of records gathered.
    pub fn len(&self) -> usize {
        self.end - CHUNK_HEADER
    }

    /// Whether no record was gathered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends a batch record (see [`append_record`]).
    pub fn append_record(&mut self, first_seq: u64, count: usize, ops: &[u8]) {
        // Drop the padding of a framing whose write failed.
        self.buf.truncate(self.end);
        append_record(&mut self.buf, first_seq, count, ops);
        self.end = self.buf.len();
    }

    /// The gathered records framed as one chunk padded to whole sectors of `ss` bytes (the
    /// bytes [`frame`] would return); call [`LogBuffer::clear`] once it is written.
    pub fn framed(&mut self, ss: u64) -> &[u8] {
        self.buf.truncate(self.end);
        let len = self.len();
        self.buf[..4].copy_from_slice(&LOG_MAGIC.to_le_bytes());
        self.buf[8..12].copy_from_slice(&(len as u32).to_le_bytes());
        let c = crc(&self.buf[8..]);
        self.buf[4..8].copy_from_slice(&c.to_le_bytes());
        let n = (self.buf.len() as u64).div_ceil(ss.max(1)) * ss.max(1);
        self.buf.resize(n as usize, 0);
        &self.buf
    }

    /// Drops the gathered records (the buffer keeps its capacity).
    pub fn clear(&mut self) {
        self.buf.truncate(CHUNK_HEADER);
        self.end = CHUNK_HEADER;
    }
}

/// Frames a payload as a chunk padded to whole sectors.
pub fn frame(payload: &[u8], ss: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(payload.len() + CHUNK_HEADER + ss as usize);
    put_u32(&mut b, LOG_MAGIC);
    put_u32(&mut b, 0);
    put_u32(&mut b, payload.len() as u32);
    b.extend_from_slice(payload);
    let c = crc(&b[8..]);
    b[4..8].copy_from_slice(&c.to_le_bytes());
    let n = (b.len() as u64).div_ceil(ss) * ss;
    b.resize(n as usize, 0);
    b
}

/// Decodes the chunk at the start of `buf`: its batches and the bytes it occupies (padding
/// included, for sectors of `ss` bytes). `Ok(None)` when `buf` holds no chunk (no magic: an
/// unwritten tail); `Err` when a chunk is there but torn or damaged.
#[allow(clippy::type_complexity)]
pub fn decode_chunk(buf: &[u8], ss: u64) -> Result<Option<(Vec<(u64, Vec<Op>)>, usize)>, String> {
    let mut r = Reader::new(buf);
    let (Some(magic), Some(stored), Some(len)) = (r.u32(), r.u32(), r.u32()) else {
        return Ok(None);
    };
    if magic != LOG_MAGIC {
        return Ok(None);
    }
    let end = CHUNK_HEADER
        .checked_add(len as usize)
        .filter(|&e| e <= buf.len())
        .ok_or_else(|| format!("chunk of {len} bytes runs past the data"))?;
    if crc(&buf[8..end]) != stored {
        return Err("log chunk checksum mismatch".into());
    }
    let batches = decode_payload(&buf[CHUNK_HEADER..end])?;
    let bytes = (chunk_sectors(len as usize, ss.max(1)) * ss.max(1)) as usize;
    Ok(Some((batches, bytes)))
}

/// Sectors a chunk of `payload_len` bytes occupies.
pub fn chunk_sectors(payload_len: usize, ss: u64) -> u64 {
    ((payload_len + CHUNK_HEADER) as u64).div_ceil(ss)
}

/// What replaying one log band found.
#[derive(Debug, Default)]
pub struct Replay {
    /// Batches in log order.
    pub batches: Vec<(u64, Vec<Op>)>,
    /// Sector just past the last valid chunk.
    pub end_sector: u64,
}

/// Reads the valid chunks of log band `zone` up to its write pointer `wp_sectors`.
pub fn replay_zone(dev: &Dev, zone: u32, wp_sectors: u64) -> Result<Replay> {
    let ss = dev.ss;
    let mut out = Replay::default();
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
    while pos < wp_sectors {
        ensure(&mut buf, &mut buf_start, pos, 1)?;
        let at = ((pos - buf_start) * ss) as usize;
        let secs = match Reader::new(&buf[at..]).u32().zip(header_len(&buf[at..])) {
            Some((LOG_MAGIC, len)) => chunk_sectors(len as usize, ss),
            _ => 0,
        };
        let decoded = if secs == 0 || pos + secs > wp_sectors {
            None
        } else {
            ensure(&mut buf, &mut buf_start, pos, secs)?;
            let at = ((pos - buf_start) * ss) as usize;
            decode_chunk(&buf[at..], ss).ok().flatten()
        };
        let Some((b, _)) = decoded else {
            // Missing, torn or damaged: the end of the log only if nothing valid follows.
            if let Some(next) = valid_chunk_after(dev, zone, pos + 1, wp_sectors)? {
                return Err(Error::corruption(
                    zone,
                    pos * ss,
                    format!(
                        "damaged log chunk at sector {pos} followed by a valid chunk at sector \
                         {next} (not a torn tail)"
                    ),
                ));
            }
            break;
        };
        out.batches.extend(b);
        pos += secs;
        out.end_sector = pos;
    }
    Ok(out)
}

/// The payload length a chunk header at the start of `b` claims, if the header is there.
fn header_len(b: &[u8]) -> Option<u32> {
    let mut r = Reader::new(b);
    r.u32()?;
    r.u32()?;
    r.u32()
}

/// The first sector in `from..wp_sectors` of log band `zone` at which a whole, valid chunk
/// starts. Recovery asks this after a damaged chunk: a torn tail has nothing valid behind it.
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
            if Reader::new(head).u32() != Some(LOG_MAGIC) {
                continue;
            }
            let Some(len) = header_len(head) else {
                continue;
            };
            let secs = chunk_sectors(len as usize, ss);
            if s + i + secs > wp_sectors {
                continue;
            }
            let whole;
            let chunk = if at + (secs * ss) as usize <= buf.len() {
                head
            } else {
                whole = dev.read_at(zone, (s + i) * ss, (secs * ss) as usize, IoKind::Log)?;
                &whole[..]
            };
            if let Ok(Some(_)) = decode_chunk(chunk, ss) {
                return Ok(Some(s + i));
            }
        }
        s += n;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_round_trip_and_garbage() {
        let ops: Vec<Op> = vec![(b"a".to_vec(), Some(b"1".to_vec())), (b"b".to_vec(), None)];
        let mut p = encode_batch(5, &ops);
        p.extend(encode_batch(7, &ops[..1]));
        let d = decode_payload(&p).unwrap();
        assert_eq!(d, vec![(5, ops.clone()), (7, ops[..1].to_vec())]);
        for i in 0..p.len() {
            let mut b = p.clone();
            b[i] ^= 0xff;
            let _ = decode_payload(&b);
        }
        assert!(decode_payload(&p[..p.len() - 1]).is_err());
        let f = frame(&p, 512);
        assert_eq!(f.len(), 512);
        assert_eq!(&f[..4], b"SLOG");
        // The in-place buffer frames the same bytes, and again after a clear.
        let mut lb = LogBuffer::default();
        for _ in 0..2 {
            let rep: Vec<u8> = ops.iter().fold(Vec::new(), |mut b, (k, v)| {
                encode_op(&mut b, k, v.as_deref());
                b
            });
            lb.append_record(5, ops.len(), &rep);
            lb.append_record(7, 1, &rep[..rep.len() - 3]);
            assert_eq!(lb.len(), p.len());
            assert_eq!(lb.framed(512), &f[..]);
            // Framing again (a retried write) gives the same chunk.
            assert_eq!(lb.framed(512), &f[..]);
            lb.clear();
            assert!(lb.is_empty());
        }
    }
}
