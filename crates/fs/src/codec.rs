//! Little-endian encoding helpers with bounds-checked decoding (never panics on bad bytes).

/// Appends little-endian fields to a byte vector.
#[derive(Debug, Default)]
pub struct Enc {
    /// The bytes so far.
    pub buf: Vec<u8>,
}

impl Enc {
    /// An empty encoder.
    pub fn new() -> Self {
        Enc::default()
    }
    /// Appends one byte.
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    /// Appends a u32.
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Appends a u64.
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Appends an i64.
    pub fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Appends a length-prefixed byte string.
    pub fn bytes(&mut self, v: &[u8]) {
        self.u32(v.len() as u32);
        self.buf.extend_from_slice(v);
    }
}

/// Reads little-endian fields; every read fails cleanly past the end.
#[derive(Debug)]
pub struct Dec<'a> {
    b: &'a [u8],
    pos: usize,
}

/// Decoding ran past the end or met an impossible value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed record at byte {at}: {what}")]
pub struct DecodeError {
    /// Byte offset.
    pub at: usize,
    /// What was wrong.
    pub what: &'static str,
}

impl<'a> Dec<'a> {
    /// A decoder over `b`.
    pub fn new(b: &'a [u8]) -> Self {
        Dec { b, pos: 0 }
    }
    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.b.len() - self.pos
    }
    /// A decode error at the current position.
    pub fn err(&self, what: &'static str) -> DecodeError {
        DecodeError { at: self.pos, what }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(self.err("truncated"));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    /// Reads one byte.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    /// Reads a u32.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }
    /// Reads a u64.
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    /// Reads an i64.
    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(self.u64()? as i64)
    }
    /// Reads a length-prefixed byte string.
    pub fn bytes(&mut self) -> Result<Vec<u8>, DecodeError> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    /// Reads a count that must be plausible for the bytes left (each item ≥ `min_item` bytes).
    pub fn count(&mut self, min_item: usize) -> Result<usize, DecodeError> {
        let n = self.u64()? as usize;
        if n.saturating_mul(min_item.max(1)) > self.remaining() {
            return Err(self.err("count exceeds the record"));
        }
        Ok(n)
    }
}
