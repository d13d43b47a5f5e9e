//! How Redis keys, hash fields and sorted-set members map onto the engine's flat, ordered key
//! space (format version 3; the spec is `docs/formats/resp-keys.md`).
//!
//! ```text
//! engine key                               engine value
//! 0x00 "format"                            format version (u32 LE): 3
//! 0x00 "sync"                              empty: the sync marker (see crate::backend)
//! 'b' key                                  empty: `key` is stored as several records
//! 'f' len(key) (u32 BE) key field          the field's value (field-record hashes only)
//! 'k' key                                  type (1) | flags (1) | [expire_at_ms u64 LE] | payload
//!                                            type 's' string: payload = the value
//!                                            type 'z' hash, inline: payload = its fields
//!                                            type 'h' hash, field records: payload = field count (u64 LE)
//!                                            type 'o' sorted set: payload = member count (u64 LE)
//! 'm' len(key) (u32 BE) key member         the member's score (8 bytes, see score_bits)
//! 'r' len(key) (u32 BE) key score member   empty: the sorted set's order (score, then member)
//! ```
//!
//! Every Redis key has one `'k'` record, so `DBSIZE`, `KEYS` and `SCAN` are a range scan of
//! `'k'`. A small hash (at most [`INLINE_MAX_FIELDS`] fields and [`INLINE_MAX_BYTES`] bytes
//! of fields) lives inside its `'k'` record, as Redis keeps small hashes in one listpack: one
//! engine get reads it whole. A larger one has a record per field; its fields sort together
//! after their key's length and bytes, so `HGETALL` is a range scan of `'f' len key` (the
//! length prefix keeps the fields of `a` and of `ab` apart), and its name is registered under
//! `'b'` so that the server can keep the set of such keys in memory: a string written over
//! any other key needs no read first. A sorted set is always stored as records (registered
//! too): a member's score under `'m'` (one get answers `ZSCORE` and finds the old score a
//! `ZADD` replaces), and an index record under `'r'` whose key sorts by score, so that
//! `ZRANGEBYSCORE` is a range scan. Flag bit 0 says an expiry time (Unix milliseconds)
//! follows; an expired key reads as absent and is deleted by the read that finds it (lazily,
//! as Redis does besides its active expiry).

use tegula_codec::{varint_len, Dec, Enc};

/// Prefix of key records.
pub const KEY: u8 = b'k';
/// Prefix of hash field records.
pub const FIELD: u8 = b'f';
/// Prefix of sorted-set member records (member to score).
pub const MEMBER: u8 = b'm';
/// Prefix of sorted-set index records (score and member to nothing).
pub const SCORE: u8 = b'r';
/// Prefix of the registry of keys stored as several records (field-record hashes, sorted
/// sets).
pub const REGISTRY: u8 = b'b';
/// Type byte of a string.
pub const TYPE_STRING: u8 = b's';
/// Type byte of a hash stored as field records.
pub const TYPE_HASH: u8 = b'h';
/// Type byte of a hash stored inside its key record.
pub const TYPE_HASH_INLINE: u8 = b'z';
/// Type byte of a sorted set.
pub const TYPE_ZSET: u8 = b'o';
/// The engine key of the format version record.
pub const FORMAT_KEY: &[u8] = b"\0format";
/// The format version this server writes (1: every hash as field records, no registry; 2:
/// no sorted sets).
pub const FORMAT_VERSION: u32 = 3;
/// Most fields an inline hash holds; one more converts it to field records.
pub const INLINE_MAX_FIELDS: usize = 128;
/// Most bytes of encoded fields an inline hash holds (an update rewrites them all).
pub const INLINE_MAX_BYTES: usize = 4096;
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

/// The registry key of `k` (present while `k` is a field-record hash or a sorted set).
pub fn registry(k: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(k.len() + 1);
    v.push(REGISTRY);
    v.extend_from_slice(k);
    v
}

/// The Redis key of a registry record, if it is one.
pub fn registry_user_key(engine_key: &[u8]) -> Option<&[u8]> {
    match engine_key.split_first() {
        Some((&REGISTRY, k)) => Some(k),
        _ => None,
    }
}

/// The prefix shared by the records of kind `tag` of key `k`: the tag, the key's length
/// (u32 BE, so that the records of `a` and `ab` do not interleave) and the key.
fn sub_prefix(tag: u8, k: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(k.len() + 5 + 16);
    v.push(tag);
    v.extend_from_slice(&(k.len() as u32).to_be_bytes());
    v.extend_from_slice(k);
    v
}

/// The prefix shared by every field of hash `k`.
pub fn field_prefix(k: &[u8]) -> Vec<u8> {
    sub_prefix(FIELD, k)
}

/// The prefix shared by every member record of sorted set `k`.
pub fn member_prefix(k: &[u8]) -> Vec<u8> {
    sub_prefix(MEMBER, k)
}

/// The engine key of member `m` of sorted set `k` (its value is the score's bits).
pub fn member(k: &[u8], m: &[u8]) -> Vec<u8> {
    let mut v = member_prefix(k);
    v.extend_from_slice(m);
    v
}

/// The prefix shared by every index record of sorted set `k`.
pub fn score_prefix(k: &[u8]) -> Vec<u8> {
    sub_prefix(SCORE, k)
}

/// The engine key of the index record of member `m` with score bits `bits` in sorted set `k`.
pub fn score_entry(k: &[u8], bits: u64, m: &[u8]) -> Vec<u8> {
    let mut v = score_prefix(k);
    v.extend_from_slice(&bits.to_be_bytes());
    v.extend_from_slice(m);
    v
}

/// A score as 8 bytes whose unsigned order is the scores' numeric order (the sign bit set
/// for positive numbers, every bit inverted for negative ones); -0 is stored as 0, as Redis
/// does not tell them apart. NaN is never a score.
pub fn score_bits(score: f64) -> u64 {
    let b = if score == 0.0 { 0 } else { score.to_bits() };
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

/// The score [`score_bits`] made `bits` of; `None` for NaN (damage: no score is NaN).
pub fn score_from_bits(bits: u64) -> Option<f64> {
    let b = if bits >> 63 == 1 {
        bits & !(1 << 63)
    } else {
        !bits
    };
    Some(f64::from_bits(b)).filter(|s| !s.is_nan())
}

/// The score of a member record's value; `None` if it is not 8 bytes of a score.
pub fn decode_score(v: &[u8]) -> Option<f64> {
    score_from_bits(u64::from_be_bytes(v.try_into().ok()?))
}

/// The score bits and member of an index record's key, given its sorted set's prefix length;
/// `None` if the key is too short.
pub fn split_score_entry(entry: &[u8], prefix_len: usize) -> Option<(u64, &[u8])> {
    let rest = entry.get(prefix_len..)?;
    let bits = u64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
    Some((bits, &rest[8..]))
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
    /// [`TYPE_STRING`], [`TYPE_HASH`], [`TYPE_HASH_INLINE`] or [`TYPE_ZSET`].
    pub kind: u8,
    /// Expiry time in Unix milliseconds.
    pub expire_at: Option<u64>,
    /// The string's bytes, the hash's field count, the inline hash's fields, or the sorted
    /// set's member count.
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

    /// A sorted set record with `members` members.
    pub fn zset(members: u64, expire_at: Option<u64>) -> Self {
        Record {
            kind: TYPE_ZSET,
            expire_at,
            payload: members.to_le_bytes().to_vec(),
        }
    }

    /// An inline hash record holding `fields` (sorted by field, no field twice).
    pub fn inline_hash(fields: &[(&[u8], &[u8])], expire_at: Option<u64>) -> Self {
        Record {
            kind: TYPE_HASH_INLINE,
            expire_at,
            payload: encode_inline(fields),
        }
    }

    /// Whether the record is a hash (of either encoding).
    pub fn is_hash(&self) -> bool {
        self.kind == TYPE_HASH || self.kind == TYPE_HASH_INLINE
    }

    /// Whether the key has records besides this one (a field-record hash, a sorted set),
    /// which must go with it.
    pub fn has_records(&self) -> bool {
        self.kind == TYPE_HASH || self.kind == TYPE_ZSET
    }

    /// The field count of a field-record hash's record or the member count of a sorted
    /// set's (0 if the payload is not one).
    pub fn count(&self) -> u64 {
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

    /// Decodes an engine value, reusing its buffer for the payload; gives the value back if
    /// it is not a valid record.
    pub fn decode_owned(mut v: Vec<u8>) -> Result<Record, Vec<u8>> {
        let Some((kind, expire_at, header)) = Self::header(&v) else {
            return Err(v);
        };
        v.drain(..header);
        Ok(Record {
            kind,
            expire_at,
            payload: v,
        })
    }

    /// The type, expiry and header length of an engine value, if it is a valid record.
    fn header(v: &[u8]) -> Option<(u8, Option<u64>, usize)> {
        let r = Self::decode_ref(v)?;
        Some((r.0, r.1, v.len() - r.2.len()))
    }

    /// Decodes an engine value; `None` if it is not a valid record.
    pub fn decode(v: &[u8]) -> Option<Record> {
        let (kind, expire_at, payload) = Self::decode_ref(v)?;
        Some(Record {
            kind,
            expire_at,
            payload: payload.to_vec(),
        })
    }

    /// Type, expiry and payload of an engine value, borrowed.
    fn decode_ref(v: &[u8]) -> Option<(u8, Option<u64>, &[u8])> {
        let (&kind, rest) = v.split_first()?;
        if ![TYPE_STRING, TYPE_HASH, TYPE_HASH_INLINE, TYPE_ZSET].contains(&kind) {
            return None;
        }
        let (&flags, rest) = rest.split_first()?;
        if flags & !FLAG_EXPIRE != 0 {
            return None;
        }
        let (expire_at, payload) = if flags & FLAG_EXPIRE != 0 {
            let t: [u8; 8] = rest.get(..8)?.try_into().ok()?;
            (Some(u64::from_le_bytes(t)), &rest[8..])
        } else {
            (None, rest)
        };
        if (kind == TYPE_HASH || kind == TYPE_ZSET) && payload.len() != 8 {
            return None;
        }
        Some((kind, expire_at, payload))
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

/// The fields of an inline hash, borrowed: (field, value) in field order.
pub type InlineFields<'a> = Vec<(&'a [u8], &'a [u8])>;

/// Bytes [`encode_inline`] makes of `fields`.
pub fn inline_len(fields: &[(&[u8], &[u8])]) -> usize {
    let v = |n: usize| varint_len(n as u64) + n;
    varint_len(fields.len() as u64)
        + fields
            .iter()
            .map(|(f, x)| v(f.len()) + v(x.len()))
            .sum::<usize>()
}

/// Whether fields that encode to `len` bytes, `count` of them, stay inline.
pub fn fits_inline(count: usize, len: usize) -> bool {
    count <= INLINE_MAX_FIELDS && len <= INLINE_MAX_BYTES
}

/// The payload of an inline hash: the field count, then each field and its value, all with
/// varint lengths, in field order.
pub fn encode_inline(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut e = Enc::with_capacity(inline_len(fields));
    e.varint(fields.len() as u64);
    for (f, v) in fields {
        e.bytes_varint(f);
        e.bytes_varint(v);
    }
    e.into_bytes()
}

/// The fields of an inline hash's payload, in field order; `None` if the bytes are not a
/// payload [`encode_inline`] makes (a count that does not match, fields out of order or named
/// twice, bytes left over).
pub fn decode_inline(payload: &[u8]) -> Option<InlineFields<'_>> {
    let mut d = Dec::new(payload);
    let n = d.varint().ok()?;
    // Every field takes at least two bytes (two empty strings).
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n <= d.remaining() / 2)?;
    let mut out: InlineFields<'_> = Vec::with_capacity(n);
    for _ in 0..n {
        let f = d.bytes_varint().ok()?;
        let v = d.bytes_varint().ok()?;
        if out.last().is_some_and(|(p, _)| *p >= f) {
            return None;
        }
        out.push((f, v));
    }
    d.is_empty().then_some(out)
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
            Record::zset(5, None),
            Record::zset(1, Some(9)),
        ] {
            assert_eq!(Record::decode(&r.encode()), Some(r.clone()));
            assert_eq!(Record::decode_owned(r.encode()), Ok(r.clone()));
        }
        for bad in [
            &b""[..],
            b"x\0",
            b"s",
            b"s\x01\0\0",
            b"h\0abc",
            b"o\0abc",
            b"s\x02v",
        ] {
            assert_eq!(Record::decode(bad), None, "{bad:?}");
            assert_eq!(Record::decode_owned(bad.to_vec()), Err(bad.to_vec()));
        }
    }

    #[test]
    fn score_bits_sort_as_the_scores_and_round_trip() {
        let scores = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -1.0,
            -f64::MIN_POSITIVE,
            0.0,
            f64::MIN_POSITIVE,
            1.0,
            1.5,
            1e300,
            f64::INFINITY,
        ];
        for w in scores.windows(2) {
            assert!(score_bits(w[0]) < score_bits(w[1]), "{} < {}", w[0], w[1]);
        }
        for s in scores {
            assert_eq!(score_from_bits(score_bits(s)), Some(s));
            assert_eq!(decode_score(&score_bits(s).to_be_bytes()), Some(s));
        }
        assert_eq!(score_bits(-0.0), score_bits(0.0));
        assert_eq!(score_from_bits(score_bits(f64::NAN)), None);
        assert_eq!(decode_score(b"1234567"), None);
        // Index records of one set sort by score, then member, and apart from other sets'.
        let a = score_entry(b"z", score_bits(2.0), b"a");
        let b = score_entry(b"z", score_bits(2.0), b"b");
        let c = score_entry(b"z", score_bits(10.0), b"a");
        assert!(a < b && b < c);
        let p = score_prefix(b"z");
        assert!(c < prefix_end(&p).unwrap());
        assert!(score_entry(b"zz", 0, b"") > prefix_end(&p).unwrap());
        assert_eq!(
            split_score_entry(&b, p.len()),
            Some((score_bits(2.0), &b"b"[..]))
        );
        assert_eq!(split_score_entry(&p, p.len()), None);
        assert!(member(b"z", b"m").starts_with(&member_prefix(b"z")));
        assert!(Record::zset(1, None).has_records() && !Record::zset(1, None).is_hash());
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

    #[test]
    fn inline_hashes_round_trip_and_bad_payloads_are_refused() {
        let fields: Vec<(&[u8], &[u8])> = vec![(b"", b"x"), (b"a", b""), (b"b", &[0xff; 200])];
        let p = encode_inline(&fields);
        assert_eq!(p.len(), inline_len(&fields));
        assert_eq!(decode_inline(&p), Some(fields.clone()));
        let r = Record::inline_hash(&fields, Some(7));
        assert_eq!(Record::decode(&r.encode()), Some(r.clone()));
        assert!(r.is_hash() && Record::hash(1, None).is_hash());
        assert!(!Record::string(Vec::new(), None).is_hash());
        assert_eq!(decode_inline(&encode_inline(&[])), Some(Vec::new()));
        let out_of_order: Vec<(&[u8], &[u8])> = vec![(b"b", b"1"), (b"a", b"2")];
        let twice: Vec<(&[u8], &[u8])> = vec![(b"a", b"1"), (b"a", b"2")];
        for bad in [
            encode_inline(&out_of_order),
            encode_inline(&twice),
            [p.as_slice(), b"\0"].concat(),
            p[..p.len() - 1].to_vec(),
            vec![0xff; 11],
            vec![0x80, 0x80, 0x80, 0x80, 0x01],
            Vec::new(),
        ] {
            assert_eq!(decode_inline(&bad), None, "{bad:?}");
        }
        // Every prefix and every one-byte change either decodes to fields in order or is
        // refused; none panics.
        for i in 0..p.len() {
            let _ = decode_inline(&p[..i]);
            let mut q = p.clone();
            q[i] ^= 0x55;
            if let Some(f) = decode_inline(&q) {
                assert!(f.windows(2).all(|w| w[0].0 < w[1].0));
            }
        }
        assert!(fits_inline(INLINE_MAX_FIELDS, INLINE_MAX_BYTES));
        assert!(!fits_inline(INLINE_MAX_FIELDS + 1, 0));
        assert!(!fits_inline(1, INLINE_MAX_BYTES + 1));
        assert_eq!(registry_user_key(&registry(b"h")), Some(&b"h"[..]));
        assert_eq!(registry_user_key(&key(b"h")), None);
    }

    proptest::proptest! {
        /// What the fuzz target `server_record` checks, on random bytes and on valid
        /// encodings with random damage.
        #[test]
        fn decoders_never_panic_and_round_trip(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            fields in proptest::collection::btree_map(
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..20),
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
                0..20,
            ),
            at in proptest::prelude::any::<usize>(),
            flip in 1u8..=255,
        ) {
            let pairs: InlineFields<'_> =
                fields.iter().map(|(f, v)| (f.as_slice(), v.as_slice())).collect();
            let enc = encode_inline(&pairs);
            proptest::prop_assert_eq!(decode_inline(&enc), Some(pairs.clone()));
            let mut damaged = enc.clone();
            let i = at % damaged.len();
            damaged[i] ^= flip;
            for bytes in [&data, &damaged] {
                if let Some(r) = Record::decode(bytes) {
                    proptest::prop_assert_eq!(&r.encode(), bytes);
                }
                if let Some(f) = decode_inline(bytes) {
                    proptest::prop_assert!(f.windows(2).all(|w| w[0].0 < w[1].0));
                    let again = encode_inline(&f);
                    proptest::prop_assert_eq!(decode_inline(&again), Some(f.clone()));
                }
            }
        }
    }
}
