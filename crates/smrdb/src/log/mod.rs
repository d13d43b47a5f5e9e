//! The write-ahead log, kept in log bands. Records are gathered in a log buffer and written
//! as one chunk per device write ([`chunk`]: a checksummed header and a checksummed payload,
//! zero-padded to a sector; a *continued* chunk fills whole sectors and its last record goes
//! on in the next chunk). The payloads of a band's chunks are a run of batch records
//! `varint rec_len | varint first_seq | varint count | op*`, an op being
//! `kind u8 (0 delete, 1 put) | bytes key | [bytes value]`. [`replay`] reads a band back and
//! tells a torn tail (the end of the log) from damage (corruption, wherever it lies).

pub mod chunk;
pub mod replay;
pub mod tail;

pub use chunk::{
    frame, frame_continued, frame_v1, CHUNK_HEADER, LOG_MAGIC, LOG_MAGIC_CONTINUED, LOG_MAGIC_V1,
};
pub use replay::{
    chunks_beyond_write_pointer, chunks_beyond_write_pointer_in_pieces, replay_zone, LogEnd,
};

use tegula_codec::{varint_len, Dec, Enc, FormatError};

/// One operation of a batch: a put (`Some(value)`) or a delete (`None`).
pub type Op = (Vec<u8>, Option<Vec<u8>>);

/// Appends one encoded operation (the body of a batch record).
pub fn encode_op(buf: &mut Enc, key: &[u8], value: Option<&[u8]>) {
    buf.u8(value.is_some() as u8);
    buf.bytes_varint(key);
    if let Some(v) = value {
        buf.bytes_varint(v);
    }
}

/// Bytes [`append_record`] appends.
pub fn record_len(first_seq: u64, count: usize, ops: &[u8]) -> usize {
    let body = varint_len(first_seq) + varint_len(count as u64) + ops.len();
    varint_len(body as u64) + body
}

/// Appends a batch record (length prefix included) whose operations are already encoded.
pub fn append_record(buf: &mut Vec<u8>, first_seq: u64, count: usize, ops: &[u8]) {
    let body = varint_len(first_seq) + varint_len(count as u64) + ops.len();
    let mut head = Enc::with_capacity(30);
    head.varint(body as u64);
    head.varint(first_seq);
    head.varint(count as u64);
    buf.extend_from_slice(head.as_bytes());
    buf.extend_from_slice(ops);
}

/// Iterates encoded operations; stops at the first malformed one (the engine only iterates
/// operations it encoded itself).
#[derive(Debug, Clone)]
pub struct OpIter<'a> {
    r: Dec<'a>,
}

impl<'a> OpIter<'a> {
    /// Iterates `ops`.
    pub fn new(ops: &'a [u8]) -> Self {
        OpIter { r: Dec::new(ops) }
    }
}

impl<'a> Iterator for OpIter<'a> {
    type Item = (&'a [u8], Option<&'a [u8]>);
    fn next(&mut self) -> Option<Self::Item> {
        if self.r.is_empty() {
            return None;
        }
        let kind = self.r.u8().ok()?;
        let k = self.r.bytes_varint().ok()?;
        match kind {
            0 => Some((k, None)),
            1 => Some((k, Some(self.r.bytes_varint().ok()?))),
            _ => None,
        }
    }
}

/// Encodes a batch record (with its length prefix) for the log buffer.
pub fn encode_batch(first_seq: u64, ops: &[Op]) -> Vec<u8> {
    let mut rep = Enc::new();
    for (k, v) in ops {
        encode_op(&mut rep, k, v.as_deref());
    }
    let mut out = Vec::with_capacity(rep.len() + 24);
    append_record(&mut out, first_seq, ops.len(), rep.as_bytes());
    out
}

/// One batch record of a chunk payload, borrowed: its operations take sequence numbers
/// `first_seq .. first_seq + count`; `count = 0` is a gap marker (see `docs/formats/smrdb.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Sequence number of the first operation (of the unlogged write, for a gap marker).
    pub first_seq: u64,
    /// Number of operations.
    pub count: u64,
    /// The encoded operations (checked: [`OpIter`] yields exactly `count` of them).
    pub ops: &'a [u8],
}

impl<'a> Record<'a> {
    /// The operations.
    pub fn ops(&self) -> OpIter<'a> {
        OpIter::new(self.ops)
    }
}

/// The batch records of a chunk payload in order, each checked (lengths, operation kinds,
/// count); an `Err` item ends the iteration.
pub fn records(p: &[u8]) -> impl Iterator<Item = Result<Record<'_>, FormatError>> + '_ {
    let mut r = Dec::new(p);
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || r.is_empty() {
            return None;
        }
        let rec = parse_record(p, &mut r);
        failed = rec.is_err();
        Some(rec)
    })
}

/// The batch record at `r`'s position in payload `p`. Errors name the payload offset of
/// what failed.
fn parse_record<'a>(p: &'a [u8], r: &mut Dec<'a>) -> Result<Record<'a>, FormatError> {
    let bad = FormatError::field("log batch record");
    let rec = r.bytes_varint().map_err(bad)?;
    // Decode the record's fields over the payload up to the record's end, so that an error
    // names the payload offset and no field reads past the record.
    let end = r.pos();
    let mut q = Dec::new(&p[..end]);
    q.take(end - rec.len()).map_err(bad)?;
    let first_seq = q.varint().map_err(bad)?;
    let count = q.varint().map_err(bad)?;
    let ops = &p[q.pos()..end];
    for _ in 0..count {
        let kind = q.u8().map_err(bad)?;
        q.bytes_varint().map_err(bad)?;
        match kind {
            0 => {}
            1 => {
                q.bytes_varint().map_err(bad)?;
            }
            _ => return Err(bad(q.invalid("unknown operation kind"))),
        }
    }
    if !q.is_empty() {
        return Err(bad(q.invalid("trailing bytes")));
    }
    Ok(Record {
        first_seq,
        count,
        ops,
    })
}

/// Bytes of the whole records at the start of `p`, judged by their length prefixes only (a
/// continued chunk's payload, or what a replay carries over from one, ends in part of a
/// record; [`records`] checks the whole ones).
pub fn whole_records_len(p: &[u8]) -> usize {
    let mut r = Dec::new(p);
    let mut whole = 0;
    while !r.is_empty() {
        if r.bytes_varint().is_err() {
            break;
        }
        whole = r.pos();
    }
    whole
}

/// Decodes a chunk payload into batches `(first_seq, ops)`.
pub fn decode_payload(p: &[u8]) -> Result<Vec<(u64, Vec<Op>)>, FormatError> {
    records(p)
        .map(|r| {
            r.map(|r| {
                let ops = r
                    .ops()
                    .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
                    .collect();
                (r.first_seq, ops)
            })
        })
        .collect()
}

/// The log buffer: batch records gathered behind room for a chunk header, so that a chunk is
/// framed in place (no copy of the buffer per log write). After a continued chunk
/// ([`LogBuffer::framed_sectors`]) it starts with the rest of the record that chunk ended in.
#[derive(Debug, Clone)]
pub struct LogBuffer {
    /// Header room, log bytes, and (once framed) the padding to a sector.
    buf: Vec<u8>,
    /// End of the log bytes in `buf`.
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
    /// Bytes of log gathered (records, after a continued chunk the rest of one first).
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
        chunk::seal(&mut self.buf, false);
        let n = (self.buf.len() as u64).div_ceil(ss.max(1)) * ss.max(1);
        self.buf.resize(n as usize, 0);
        &self.buf
    }

    /// Whole sectors of `ss` bytes that a continued chunk of the gathered log can fill, with
    /// the bytes left after them: `(0, _)` when the log does not fill one sector.
    pub fn whole_sectors(&self, ss: u64) -> (u64, usize) {
        let ss = ss.max(1);
        let n = self.end as u64 / ss;
        (n, self.end - (n * ss) as usize)
    }

    /// The first `sectors` whole sectors of the gathered log framed as a continued chunk
    /// (no padding); once it is written, [`LogBuffer::consume_sectors`] drops them.
    pub fn framed_sectors(&mut self, ss: u64, sectors: u64) -> &[u8] {
        self.buf.truncate(self.end);
        let n = ((sectors * ss.max(1)) as usize).min(self.end);
        chunk::seal(&mut self.buf[..n], true);
        &self.buf[..n]
    }

    /// Drops the log bytes of the first `sectors` sectors (written as a continued chunk): the
    /// rest of the log moves to the front.
    pub fn consume_sectors(&mut self, ss: u64, sectors: u64) {
        let n = ((sectors * ss.max(1)) as usize).min(self.end);
        self.buf.truncate(self.end);
        self.buf.drain(CHUNK_HEADER..n);
        self.end = self.buf.len();
    }

    /// Appends log bytes as they are (recovery: the rest of a record and the records after
    /// it, taken from a tail slot).
    pub fn append_raw(&mut self, bytes: &[u8]) {
        self.buf.truncate(self.end);
        self.buf.extend_from_slice(bytes);
        self.end = self.buf.len();
    }

    /// The gathered log bytes (what a chunk of them would carry as its payload).
    pub fn records(&self) -> &[u8] {
        &self.buf[CHUNK_HEADER..self.end]
    }

    /// Drops the gathered records (the buffer keeps its capacity).
    pub fn clear(&mut self) {
        self.buf.truncate(CHUNK_HEADER);
        self.end = CHUNK_HEADER;
    }
}

/// Decodes the chunk (either version) at the start of `buf`: its batches (of a continued
/// chunk, those whole in it) and the bytes it occupies (padding included, for sectors of `ss` bytes). `Ok(None)` when `buf` holds no
/// chunk magic; `Err` when a chunk is there but torn or damaged.
#[allow(clippy::type_complexity)]
pub fn decode_chunk(
    buf: &[u8],
    ss: u64,
) -> Result<Option<(Vec<(u64, Vec<Op>)>, usize)>, FormatError> {
    let Some(payload) = chunk::chunk_payload(buf)? else {
        return Ok(None);
    };
    let head = chunk::read_head(buf);
    // A continued chunk's last record goes on in the next chunk: only its whole ones.
    let payload = match head {
        chunk::Head::Chunk {
            continued: true, ..
        } => &payload[..whole_records_len(payload)],
        _ => payload,
    };
    let batches = decode_payload(payload)?;
    let bytes = (head.sectors(ss.max(1)) * ss.max(1)) as usize;
    Ok(Some((batches, bytes)))
}

/// Sectors a version 2 chunk of `payload_len` bytes occupies.
pub fn chunk_sectors(payload_len: usize, ss: u64) -> u64 {
    ((payload_len + CHUNK_HEADER) as u64).div_ceil(ss.max(1))
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
        // Errors are typed and name the payload offset of what failed.
        let mut bad = p.clone();
        let second = encode_batch(5, &ops).len();
        // The first op's kind of the second record (after its length, first_seq and count); it
        // is judged once its key ("a": 2 bytes) is read.
        bad[second + 3] = 7;
        let e = decode_payload(&bad).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "log batch record: malformed record at byte {}: unknown operation kind",
                second + 6
            )
        );
        assert!(matches!(e, FormatError::In { .. }));
        let f = frame(&p, 512);
        assert_eq!(f.len(), 512);
        assert_eq!(&f[..4], b"SLG2");
        assert_eq!(
            decode_chunk(&f, 512).unwrap().map(|(b, n)| (b.len(), n)),
            Some((2, 512))
        );
        // The in-place buffer frames the same bytes, and again after a clear.
        let mut lb = LogBuffer::default();
        for _ in 0..2 {
            let rep = ops.iter().fold(Enc::new(), |mut b, (k, v)| {
                encode_op(&mut b, k, v.as_deref());
                b
            });
            let rep = rep.as_bytes();
            lb.append_record(5, ops.len(), rep);
            lb.append_record(7, 1, &rep[..rep.len() - 3]);
            assert_eq!(lb.len(), p.len());
            assert_eq!(lb.framed(512), &f[..]);
            // Framing again (a retried write) gives the same chunk.
            assert_eq!(lb.framed(512), &f[..]);
            lb.clear();
            assert!(lb.is_empty());
        }
    }

    /// A log buffer larger than a sector gives whole sectors as a continued chunk and keeps
    /// the rest (a record's end, then whole records) for the next chunk; the two chunks'
    /// payloads, joined, are the records.
    #[test]
    fn continued_chunks_split_the_log_at_sector_boundaries() {
        let ss = 512u64;
        let mut lb = LogBuffer::default();
        let mut want = Vec::new();
        for i in 0..5u64 {
            let ops: Vec<Op> = vec![(vec![b'k'; 8], Some(vec![i as u8; 300]))];
            let rec = encode_batch(i + 1, &ops);
            want.extend_from_slice(&rec);
            lb.append_raw(&rec);
        }
        let (sectors, rest) = lb.whole_sectors(ss);
        assert_eq!(sectors, (CHUNK_HEADER + want.len()) as u64 / ss);
        assert_eq!(rest, CHUNK_HEADER + want.len() - (sectors * ss) as usize);
        let first = lb.framed_sectors(ss, sectors).to_vec();
        assert_eq!(first.len() as u64, sectors * ss);
        assert_eq!(&first[..4], b"SLC2");
        lb.consume_sectors(ss, sectors);
        assert_eq!(lb.len(), rest);
        let second = lb.framed(ss).to_vec();
        assert_eq!(&second[..4], b"SLG2");
        let p1 = chunk::chunk_payload(&first).unwrap().unwrap();
        let p2 = chunk::chunk_payload(&second).unwrap().unwrap();
        let joined = [p1, p2].concat();
        assert_eq!(joined, want);
        // The continued chunk alone yields its whole records only.
        let (alone, n) = decode_chunk(&first, ss).unwrap().unwrap();
        assert_eq!(n as u64, sectors * ss);
        assert_eq!(
            alone.len(),
            decode_payload(&p1[..whole_records_len(p1)]).unwrap().len()
        );
        assert!(alone.len() < 5);
        assert_eq!(decode_payload(&joined).unwrap().len(), 5);
    }
}
