//! How Redis keys and hash fields map onto the engine's flat, ordered key space.
//!
//! ```text
//! engine key                               engine value
//! 'k' key                                  type (1) | flags (1) | [expire_at_ms u64 LE] | payload
//!                                            type 's' string: payload = the value
//!                                            type 'h' hash:   payload = field count (u64 LE)
//! 'f' len(key) (u32 BE) key field          the field's value
//! 0x00 ...                                 reserved for the server (the sync marker)
//! ```
//!
//! Every Redis key has one `'k'` record, so `DBSIZE`, `KEYS` and `SCAN` are a range scan of
//! `'k'`. A hash's fields sort together after their key's length and bytes, so `HGETALL` is a
//! range scan of `'f' len key` (the length prefix keeps the fields of `a` and of `ab` apart).
//! Flag bit 0 says an expiry time (Unix milliseconds) follows; an expired key reads as absent
//! and is deleted by the read that finds it (lazily, as Redis does besides its active expiry).

/// Prefix of key records.
pub const KEY: u8 = b'k';
/// Prefix of hash field records.
pub const FIELD: u8 = b'f';
/// Type byte of a string.
pub const TYPE_STRING: u8 = b's';
/// Type byte of a hash.
pub const TYPE_HASH: u8 = b'h';
/// Flag bit: an expiry time follows the flags.
pub const FLAG_EXPIRE: u8 = 1;

/// The engine key of Redis key `k`.
pub fn key(k: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(k.len() + 1);
    v.push(KEY);
    v.extend_from_slice(k);
    v
}

/// The Redis key of an engine key record, if it is one.
pub fn user_key(engine_key: &[u8]) -> Option<&[u8]> {
    match engine_key.split_first() {
        Some((&KEY, k)) => Some(k),
        _ => None,
    }
}

/// The prefix shared by every field of hash `k`.
pub fn field_prefix(k: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(k.len() + 5);
    v.push(FIELD);
    v.extend_from_slice(&(k.len() as u32).to_be_bytes());
    v.extend_from_slice(k);
    v
}

/// The engine key of field `f` of hash `k`.
pub fn field(k: &[u8], f: &[u8]) -> Vec<u8> {
    let mut v = field_prefix(k);
    v.extend_from_slice(f);
    v
}

/// The smallest key greater than every key starting with `prefix` (`None`: no bound).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut v = prefix.to_vec();
    while let Some(last) = v.pop() {
        if last < 0xff {
            v.push(last + 1);
            return Some(v);
        }
    }
    None
}

/// A decoded key record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// [`TYPE_STRING`] or [`TYPE_HASH`].
    pub kind: u8,
    /// Expiry time in Unix milliseconds.
    pub expire_at: Option<u64>,
    /// The string's bytes, or the hash's field count.
    pub payload: Vec<u8>,
}

impl Record {
    /// A string record.
    pub fn string(value: Vec<u8>, expire_at: Option<u64>) -> Self {
        Record {
            kind: TYPE_STRING,
            expire_at,
            payload: value,
        }
    }

    /// A hash record with `fields` fields.
    pub fn hash(fields: u64, expire_at: Option<u64>) -> Self {
        Record {
            kind: TYPE_HASH,
            expire_at,
            payload: fields.to_le_bytes().to_vec(),
        }
    }

    /// The field count of a hash record (0 if the payload is not one).
    pub fn fields(&self) -> u64 {
        <[u8; 8]>::try_from(self.payload.as_slice()).map_or(0, u64::from_le_bytes)
    }

    /// Whether the record has expired at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.expire_at.is_some_and(|t| t <= now_ms)
    }

    /// The engine value.
    pub fn encode(&self) -> Vec<u8> {
        encode_value(self.kind, self.expire_at, &self.payload)
    }

    /// Decodes an engine value; `None` if it is not a valid record.
    pub fn decode(v: &[u8]) -> Option<Record> {
        let (&kind, rest) = v.split_first()?;
        if kind != TYPE_STRING && kind != TYPE_HASH {
            return None;
        }
        let (&flags, rest) = rest.split_first()?;
        let (expire_at, payload) = if flags & FLAG_EXPIRE != 0 {
            let t: [u8; 8] = rest.get(..8)?.try_into().ok()?;
            (Some(u64::from_le_bytes(t)), &rest[8..])
        } else {
            (None, rest)
        };
        if kind == TYPE_HASH && payload.len() != 8 {
            return None;
        }
        Some(Record {
            kind,
            expire_at,
            payload: payload.to_vec(),
        })
    }
}

/// Encodes a record's value without building a [`Record`].
pub fn encode_value(kind: u8, expire_at: Option<u64>, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(payload.len() + 10);
    v.push(kind);
    match expire_at {
        Some(t) => {
            v.push(FLAG_EXPIRE);
            v.extend_from_slice(&t.to_le_bytes());
        }
        None => v.push(0),
    }
    v.extend_from_slice(payload);
    v
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn records_round_trip_and_bad_bytes_are_refused() {
        for r in [
            Record::string(b"v".to_vec(), None),
            Record::string(Vec::new(), Some(42)),
            Record::hash(3, None),
            Record::hash(0, Some(u64::MAX)),
        ] {
            assert_eq!(Record::decode(&r.encode()), Some(r.clone()));
        }
        for bad in [&b""[..], b"x\0", b"s", b"s\x01\0\0", b"h\0abc"] {
            assert_eq!(Record::decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn fields_of_a_hash_sort_together_and_apart_from_other_hashes() {
        let a = field_prefix(b"a");
        let end = prefix_end(&a).unwrap();
        let inside = field(b"a", b"zzz\xff");
        let other = field(b"ab", b"");
        assert!(a <= inside && inside < end);
        assert!(!(a <= other && other < end));
        assert_eq!(prefix_end(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff"), None);
        assert_eq!(user_key(&key(b"x")), Some(&b"x"[..]));
        assert_eq!(user_key(&field(b"x", b"y")), None);
    }
}
