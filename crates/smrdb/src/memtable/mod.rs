//! The in-memory table: every version of every key written since the last flush, sorted by
//! key ascending and sequence number descending (the internal key order shared by bands).
//!
//! A point lookup is one descent of the tree: the first version at or after the probe
//! `(key, snap)` in internal order is the newest version of `key` visible at `snap`, if its
//! user key is `key`. Each version carries the first 24 bytes of its key inline (as
//! big-endian integers), so the comparisons on the way down rarely leave the tree's nodes to
//! read a key out of its chunk, and the probe borrows the caller's key instead of allocating a
//! copy. Keys and values are copied one after another into chunks of 1 MiB (`arena.rs`, as
//! RocksDB's memtable arena), so an insert costs no allocation of its own and a version no
//! allocator header or rounding; each version holds its chunk by reference count, so a scan's
//! batch ([`Memtable::batch_into`]) takes a reference to each version instead of copying its
//! bytes, and keeps the chunks it refers to after the memtable is gone.
//!
//! Optionally ([`Memtable::for_band`] with a point index) a hash table also finds the newest
//! version of each key (`point.rs`), so that a get at the latest snapshot costs one hash probe
//! instead of a descent of the tree (as Redis's dictionary; RocksDB's hash-linked-list memtable serves the
//! same purpose). Older snapshots still descend the tree. Beside a point index the versions
//! are not sorted as they arrive but kept in a log that is sorted when first read in order,
//! usually by the flush (`order.rs`).

mod arena;
mod order;
mod point;

use crate::memfilter::KeyFilter;
use arena::{Chunk, CHUNK_BYTES, OWN_CHUNK};
use hashbrown::DefaultHashBuilder;
use order::Order;
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use point::PointIndex;
use std::borrow::Borrow;
use std::cmp::Ordering as CmpOrdering;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One version of a key: a value or a tombstone (`value == None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// User key.
    pub key: Vec<u8>,
    /// Sequence number of the write.
    pub seq: u64,
    /// Value, or `None` for a deletion.
    pub value: Option<Vec<u8>>,
}

impl Entry {
    /// Bytes this entry occupies in a data block, roughly (key, value, header).
    pub fn encoded_len(&self) -> usize {
        encoded_len(&self.key, self.value.as_deref())
    }

    /// The entry as borrowed parts.
    pub fn as_ref(&self) -> EntryRef<'_> {
        EntryRef {
            key: &self.key,
            seq: self.seq,
            value: self.value.as_deref(),
        }
    }
}

/// Bytes an entry occupies in a data block, roughly (key, value, header).
pub fn encoded_len(key: &[u8], value: Option<&[u8]>) -> usize {
    key.len() + value.map_or(0, |v| v.len()) + 14
}

/// One version of a key, borrowed (from a memtable, a data block or an [`Entry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryRef<'a> {
    /// User key.
    pub key: &'a [u8],
    /// Sequence number of the write.
    pub seq: u64,
    /// Value, or `None` for a deletion.
    pub value: Option<&'a [u8]>,
}

impl EntryRef<'_> {
    /// Bytes this entry occupies in a data block, roughly (key, value, header).
    pub fn encoded_len(&self) -> usize {
        encoded_len(self.key, self.value)
    }

    /// An owned copy.
    pub fn to_entry(&self) -> Entry {
        Entry {
            key: self.key.to_vec(),
            seq: self.seq,
            value: self.value.map(<[u8]>::to_vec),
        }
    }
}

impl<'a> From<&'a Entry> for EntryRef<'a> {
    fn from(e: &'a Entry) -> Self {
        e.as_ref()
    }
}

/// Bytes of a key kept inline in each version: 16 in a `u128` and 8 in a `u64` (a version is
/// 48 bytes with them, its lengths and offset packed into one `u64`).
const INLINE: usize = 24;

/// The first [`INLINE`] (24) bytes of a key as big-endian integers (16 bytes, then 8),
/// zero-padded. Keys compare like their prefixes whenever the prefixes differ (a zero pad
/// sorts before any byte a longer key has there, as the shorter key does), so equal prefixes
/// are the only case that needs the keys themselves, which live out of line (a cache miss).
/// 24 bytes hold the keys of redis-benchmark (17 and 21 bytes as the RESP server stores them)
/// and of YCSB (24): with 16, the comparisons among keys sharing their first 16 bytes were a
/// fifth of the server's CPU time under `redis-benchmark -t get -P 16`; with 20, a tenth under
/// `-t incr -P 16` (its 21-byte keys).
type Prefix = (u128, u64);

fn prefix_of(key: &[u8]) -> Prefix {
    let mut b = [0u8; INLINE];
    let n = key.len().min(INLINE);
    b[..n].copy_from_slice(&key[..n]);
    let mut hi = [0u8; 16];
    hi.copy_from_slice(&b[..16]);
    let mut lo = [0u8; 8];
    lo.copy_from_slice(&b[16..]);
    (u128::from_be_bytes(hi), u64::from_be_bytes(lo))
}

/// What the tree compares: a stored version ([`IKey`]) or a lookup probe ([`Probe`]).
/// `IKey: Borrow<dyn Lookup>` lets a probe borrow the caller's key.
trait Lookup {
    /// The key's first 16 bytes ([`Prefix`]'s first part).
    fn prefix(&self) -> u128;
    /// Its next 8 (asked only when the first 16 are equal).
    fn prefix_tail(&self) -> u64;
    fn key(&self) -> &[u8];
    fn seq(&self) -> u64;
}

/// Internal key order: user key ascending, then sequence number descending.
fn cmp_lookup(a: &(impl Lookup + ?Sized), b: &(impl Lookup + ?Sized)) -> CmpOrdering {
    match a.prefix().cmp(&b.prefix()) {
        CmpOrdering::Equal => {}
        o => return o,
    }
    match a.prefix_tail().cmp(&b.prefix_tail()) {
        CmpOrdering::Equal => {}
        o => return o,
    }
    let (ka, kb) = (a.key(), b.key());
    // Equal prefixes of keys no longer than the prefix: equal keys iff equal lengths.
    let keys = if ka.len() <= INLINE && kb.len() <= INLINE {
        ka.len().cmp(&kb.len())
    } else {
        ka.cmp(kb)
    };
    keys.then_with(|| b.seq().cmp(&a.seq()))
}

impl PartialEq for dyn Lookup + '_ {
    fn eq(&self, o: &Self) -> bool {
        cmp_lookup(self, o) == CmpOrdering::Equal
    }
}
impl Eq for dyn Lookup + '_ {}
impl PartialOrd for dyn Lookup + '_ {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl Ord for dyn Lookup + '_ {
    fn cmp(&self, o: &Self) -> CmpOrdering {
        cmp_lookup(self, o)
    }
}

/// One version in the memtable: its key and value are in a [`Chunk`] (which it holds), and the
/// key's first 24 bytes are also kept inline. Cloning shares the chunk.
#[derive(Debug, Clone)]
struct IKey {
    prefix: u128,
    chunk: Arc<Chunk>,
    seq: u64,
    /// Bytes 16 to 24 of the key (the rest of [`Prefix`]).
    prefix_tail: u64,
    /// Where the version is in its chunk and how long it is ([`Place`]).
    place: Place,
}

/// A version's offset in its chunk, key length, value length and whether it has a value,
/// packed into 64 bits: the offset in bits 0-19 (below [`CHUNK_BYTES`]; 0 in a chunk of its
/// own), the key length in bits 20-36 (at most [`crate::db::MAX_KEY_LEN`]), the put flag in
/// bit 37 (clear: a tombstone), the value length in bits 38-56 ([`OWN_VALUE`] in a chunk of
/// its own, whose `own_len` gives the length).
#[derive(Debug, Clone, Copy)]
struct Place(u64);

const OFF_BITS: u32 = 20;
const KLEN_BITS: u32 = 17;
const PUT_SHIFT: u32 = OFF_BITS + KLEN_BITS;
const VLEN_SHIFT: u32 = PUT_SHIFT + 1;
const VLEN_BITS: u32 = 19;
/// The value length of a version in a chunk of its own (longer than any in a shared chunk,
/// which hold at most [`OWN_CHUNK`] bytes of key and value).
const OWN_VALUE: u64 = (1 << VLEN_BITS) - 1;
const _: () = {
    assert!(CHUNK_BYTES <= 1 << OFF_BITS);
    assert!(crate::db::MAX_KEY_LEN < 1 << KLEN_BITS);
    assert!((OWN_CHUNK as u64) < OWN_VALUE);
    assert!(VLEN_SHIFT + VLEN_BITS <= 64);
};

impl Place {
    /// `off` is below [`CHUNK_BYTES`] and `klen` at most `MAX_KEY_LEN` (every write path
    /// checks it); `vlen` is `None` for a value in a chunk of its own.
    fn new(off: usize, klen: usize, put: bool, vlen: Option<usize>) -> Place {
        let vlen = vlen.map_or(OWN_VALUE, |v| v as u64);
        Place(
            off as u64 | (klen as u64) << OFF_BITS | (put as u64) << PUT_SHIFT | vlen << VLEN_SHIFT,
        )
    }
    fn off(self) -> usize {
        (self.0 & ((1 << OFF_BITS) - 1)) as usize
    }
    fn klen(self) -> usize {
        ((self.0 >> OFF_BITS) & ((1 << KLEN_BITS) - 1)) as usize
    }
    fn put(self) -> bool {
        self.0 >> PUT_SHIFT & 1 == 1
    }
    /// The value's length, `None` for a chunk of its own.
    fn vlen(self) -> Option<usize> {
        let v = self.0 >> VLEN_SHIFT;
        (v != OWN_VALUE).then_some(v as usize)
    }
}

impl IKey {
    fn klen(&self) -> usize {
        self.place.klen()
    }
    fn key(&self) -> &[u8] {
        // SAFETY: `place` wrote the key there before this version was made.
        unsafe { self.chunk.bytes(self.place.off(), self.klen()) }
    }
    fn value_len(&self) -> usize {
        self.place
            .vlen()
            .unwrap_or_else(|| self.chunk.own_len.saturating_sub(self.klen()))
    }
    fn value(&self) -> Option<&[u8]> {
        // SAFETY: `place` wrote the value right after the key before this version was made.
        self.place.put().then(|| unsafe {
            self.chunk
                .bytes(self.place.off() + self.klen(), self.value_len())
        })
    }
    fn entry_ref(&self) -> EntryRef<'_> {
        EntryRef {
            key: self.key(),
            seq: self.seq,
            value: self.value(),
        }
    }
}

impl Lookup for IKey {
    fn prefix(&self) -> u128 {
        self.prefix
    }
    fn prefix_tail(&self) -> u64 {
        self.prefix_tail
    }
    fn key(&self) -> &[u8] {
        IKey::key(self)
    }
    fn seq(&self) -> u64 {
        self.seq
    }
}

impl<'a> Borrow<dyn Lookup + 'a> for IKey {
    fn borrow(&self) -> &(dyn Lookup + 'a) {
        self
    }
}

impl PartialEq for IKey {
    fn eq(&self, o: &Self) -> bool {
        cmp_lookup(self, o) == CmpOrdering::Equal
    }
}
impl Eq for IKey {}
impl Ord for IKey {
    fn cmp(&self, o: &Self) -> CmpOrdering {
        cmp_lookup(self, o)
    }
}
impl PartialOrd for IKey {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}

/// A lookup position `(key, seq)` borrowing the caller's key.
struct Probe<'a> {
    prefix: Prefix,
    key: &'a [u8],
    seq: u64,
}

impl<'a> Probe<'a> {
    fn new(key: &'a [u8], seq: u64) -> Self {
        Probe {
            prefix: prefix_of(key),
            key,
            seq,
        }
    }
}

impl Lookup for Probe<'_> {
    fn prefix(&self) -> u128 {
        self.prefix.0
    }
    fn prefix_tail(&self) -> u64 {
        self.prefix.1
    }
    fn key(&self) -> &[u8] {
        self.key
    }
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// The versions, under one lock: in internal order (or to be sorted, beside a point index),
/// and the point index if there is one.
#[derive(Debug, Default)]
struct Versions {
    order: Order,
    /// The newest version of each key in `order`.
    newest: Option<PointIndex>,
    /// The chunk keys and values are being copied into, and how many of its bytes are used.
    arena: Option<(Arc<Chunk>, usize)>,
}

impl Versions {
    /// Copies `key` and `value` into the arena: the chunk and offset they are at.
    fn place(&mut self, key: &[u8], value: &[u8]) -> (Arc<Chunk>, usize) {
        let n = key.len() + value.len();
        if n > OWN_CHUNK {
            let mut c = Chunk::with_capacity(n);
            c.own_len = n;
            // SAFETY: a new chunk of at least `n` bytes, referred to by nothing yet.
            unsafe { c.write(0, key, value) };
            return (Arc::new(c), 0);
        }
        let (c, used) = match &mut self.arena {
            Some((c, used)) if c.cap - *used >= n => (c, used),
            slot => {
                let (c, used) = slot.insert((Arc::new(Chunk::with_capacity(CHUNK_BYTES)), 0));
                (c, used)
            }
        };
        let at = *used;
        // SAFETY: `n` bytes fit past `used`, which no version refers to (every version's bytes
        // are below `used`), and the write lock on the versions is held (`&mut self`).
        unsafe { c.write(at, key, value) };
        *used += n;
        (c.clone(), at)
    }

    /// Makes a version of `key` (a copy in the arena).
    fn make(&mut self, key: &[u8], seq: u64, value: Option<&[u8]>) -> IKey {
        let v = value.unwrap_or(&[]);
        let (chunk, at) = self.place(key, v);
        let (prefix, prefix_tail) = prefix_of(key);
        let own = chunk.own_len > 0;
        IKey {
            prefix,
            chunk,
            seq,
            prefix_tail,
            // Keys are limited to `MAX_KEY_LEN` by every write path; `at` is below
            // CHUNK_BYTES, or 0 in a chunk of its own.
            place: Place::new(at, key.len(), value.is_some(), (!own).then_some(v.len())),
        }
    }

    /// Adds one version (and makes it its key's newest if it is).
    fn insert(&mut self, hasher: &DefaultHashBuilder, k: IKey) {
        if let Some(idx) = &mut self.newest {
            idx.note(&self.order, hasher, &k);
        }
        self.order.insert(k);
    }
}

/// A sorted, concurrently readable memtable.
#[derive(Debug)]
pub struct Memtable {
    map: RwLock<Versions>,
    /// Hashes keys for the point index.
    hasher: DefaultHashBuilder,
    bytes: AtomicU64,
    min_seq: AtomicU64,
    max_seq: AtomicU64,
    /// Sequence number of the first write inserted without a log record
    /// (`WriteOptions::disable_wal`), `u64::MAX` if none.
    first_unlogged: AtomicU64,
    /// The keys held, for gets of keys it lacks ([`KeyFilter`]); none in [`Memtable::new`].
    filter: Option<KeyFilter>,
}

impl Memtable {
    /// An empty memtable.
    pub fn new() -> Self {
        Memtable {
            map: RwLock::new(Versions::default()),
            hasher: DefaultHashBuilder::default(),
            bytes: AtomicU64::new(0),
            min_seq: AtomicU64::new(u64::MAX),
            max_seq: AtomicU64::new(0),
            first_unlogged: AtomicU64::new(u64::MAX),
            filter: None,
        }
    }

    /// An empty memtable with a key filter sized for `capacity` bytes of versions (the band
    /// it will be flushed into), so that a get of a key it lacks costs one filter probe
    /// instead of a descent of its tree.
    pub fn with_key_filter(capacity: u64) -> Self {
        Memtable {
            filter: Some(KeyFilter::for_memtable(capacity)),
            ..Memtable::new()
        }
    }

    /// An empty memtable for a band of `capacity` bytes: with a point index if `point_index`
    /// (see the module doc; its memory, [`Memtable::point_index_bytes`], is not charged to
    /// [`Memtable::approximate_bytes`], which measures what the band will hold), else with a
    /// key filter ([`Memtable::with_key_filter`]; a point index answers a miss
    /// with one probe as well).
    pub fn for_band(capacity: u64, point_index: bool) -> Self {
        if point_index {
            Memtable {
                map: RwLock::new(Versions {
                    order: Order::log(),
                    newest: Some(PointIndex::new()),
                    ..Versions::default()
                }),
                ..Memtable::new()
            }
        } else {
            Memtable::with_key_filter(capacity)
        }
    }

    /// Whether gets of the newest versions use a hash index.
    pub fn has_point_index(&self) -> bool {
        self.map.read().newest.is_some()
    }

    /// Bytes of memory the point index takes (0 without one): its table of 4-byte positions
    /// in the log (of 48-byte version handles beside a tree) and control bytes.
    pub fn point_index_bytes(&self) -> usize {
        self.map
            .read()
            .newest
            .as_ref()
            .map_or(0, PointIndex::allocation_size)
    }

    /// Records that the write with sequence number `seq` is in no log.
    pub fn mark_unlogged(&self, seq: u64) {
        self.first_unlogged.fetch_min(seq, Ordering::AcqRel);
    }

    /// The first write held here without a log record, if any: until this memtable is in a
    /// band, a crash loses it.
    pub fn first_unlogged(&self) -> Option<u64> {
        let s = self.first_unlogged.load(Ordering::Acquire);
        (s != u64::MAX).then_some(s)
    }

    /// Bytes charged for one version: key, value and a fixed overhead.
    fn charge(key: &[u8], value: Option<&[u8]>) -> u64 {
        (key.len() + value.map_or(0, |v| v.len()) + 32) as u64
    }

    /// Adds one version.
    pub fn insert(&self, key: &[u8], seq: u64, value: Option<&[u8]>) {
        if let Some(f) = &self.filter {
            f.insert(key);
        }
        let mut m = self.map.write();
        let k = m.make(key, seq, value);
        m.insert(&self.hasher, k);
        drop(m);
        self.account(Self::charge(key, value), seq, seq);
    }

    /// Adds the versions `(key, value)` with consecutive sequence numbers from `seq0`, under
    /// one lock acquisition (a write batch).
    pub fn insert_many<'a>(
        &self,
        seq0: u64,
        ops: impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)>,
    ) {
        let mut m = self.map.write();
        let mut len = 0u64;
        let mut seq = seq0;
        for (k, v) in ops {
            len += Self::charge(k, v);
            if let Some(f) = &self.filter {
                f.insert(k);
            }
            let version = m.make(k, seq, v);
            m.insert(&self.hasher, version);
            seq += 1;
        }
        drop(m);
        if seq > seq0 {
            self.account(len, seq0, seq - 1);
        }
    }

    fn account(&self, len: u64, lo: u64, hi: u64) {
        self.bytes.fetch_add(len, Ordering::Relaxed);
        self.min_seq.fetch_min(lo, Ordering::Relaxed);
        self.max_seq.fetch_max(hi, Ordering::Relaxed);
    }

    /// The newest version of `key` with a sequence number ≤ `snap`: `Some((seq, value))`,
    /// where a `None` value is a tombstone.
    pub fn get(&self, key: &[u8], snap: u64) -> Option<(u64, Option<Vec<u8>>)> {
        self.get_with(key, snap, |v| v.map(<[u8]>::to_vec))
    }

    /// Like [`Memtable::get`], handing the value (`None`: a tombstone) to `f` in place.
    pub fn get_with<T>(
        &self,
        key: &[u8],
        snap: u64,
        f: impl FnOnce(Option<&[u8]>) -> T,
    ) -> Option<(u64, T)> {
        if self.filter.as_ref().is_some_and(|fl| !fl.may_contain(key)) {
            return None;
        }
        let probe = Probe::new(key, snap);
        let mut m = self.map.read();
        if let Some(idx) = &m.newest {
            match idx.find(&m.order, &self.hasher, &probe) {
                None => return None,
                Some(k) if k.seq <= snap => return Some((k.seq, f(k.value()))),
                // Newer than the snapshot: an older version is in the order (sorted first).
                Some(_) => {}
            }
            if m.order.needs_sort() {
                drop(m);
                m = self.ordered();
            }
        }
        // The first version at or after (key, snap) in internal order: one descent.
        let k = m
            .order
            .range(Bound::Included(&probe as &dyn Lookup))
            .next()?;
        (k.key() == key).then(|| (k.seq, f(k.value())))
    }

    /// Copies up to `limit` entries (and not many more than `max_bytes` of keys and values,
    /// at least one entry) in internal order from a position into `out`, replacing what it
    /// held: one allocation-free copy per batch, for cursors that fetch in batches without
    /// holding the lock. Returns whether it stopped at a limit (more entries may follow)
    /// rather than at the end of the memtable.
    pub fn batch_into(
        &self,
        from: BatchFrom<'_>,
        limit: usize,
        max_bytes: usize,
        out: &mut FlatBatch,
    ) -> bool {
        out.clear();
        let (probe, incl) = match from {
            BatchFrom::Start(k) => (Probe::new(k, u64::MAX), true),
            BatchFrom::After(k, seq) => (Probe::new(k, seq), false),
        };
        let p: &dyn Lookup = &probe;
        let lower = if incl {
            Bound::Included(p)
        } else {
            Bound::Excluded(p)
        };
        let m = self.ordered();
        for k in m.order.range(lower) {
            if out.len() >= limit.max(1) || (!out.is_empty() && out.bytes >= max_bytes) {
                return true;
            }
            if out.is_empty() {
                out.items.reserve(limit.max(1));
            }
            out.bytes += k.klen() + k.value_len();
            out.items.push(k.clone());
        }
        false
    }

    /// Runs `f` on an iterator over every version in internal order, without copying (a
    /// flush streams the memtable into band writers this way). The read lock is held
    /// meanwhile: the memtable must not be written (it is immutable by then); readers may
    /// proceed.
    pub fn with_iter<R>(&self, f: impl FnOnce(&mut dyn Iterator<Item = EntryRef<'_>>) -> R) -> R {
        let m = self.ordered();
        let mut it = m.order.range(Bound::Unbounded).map(IKey::entry_ref);
        f(&mut it)
    }

    /// The versions under the read lock, in internal order: a log not yet sorted is sorted
    /// first (under the write lock; the flush of an immutable memtable does it, once).
    fn ordered(&self) -> RwLockReadGuard<'_, Versions> {
        let m = self.map.read();
        if !m.order.needs_sort() {
            return m;
        }
        drop(m);
        let mut w = self.map.write();
        w.order.sort();
        let Versions { order, newest, .. } = &mut *w;
        if let Some(idx) = newest {
            idx.rebuild(order, &self.hasher);
        }
        RwLockWriteGuard::downgrade(w)
    }

    /// Approximate bytes held.
    pub fn approximate_bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Number of versions held.
    pub fn len(&self) -> usize {
        self.ordered().order.len()
    }

    /// Whether nothing was inserted.
    pub fn is_empty(&self) -> bool {
        self.map.read().order.is_empty()
    }

    /// Largest sequence number inserted (0 when empty).
    pub fn max_seq(&self) -> u64 {
        self.max_seq.load(Ordering::Relaxed)
    }
}

impl Default for Memtable {
    fn default() -> Self {
        Self::new()
    }
}

/// Entries taken out of a memtable ([`Memtable::batch_into`]): references to the versions
/// (and so to their chunks), no bytes copied.
#[derive(Debug, Default)]
pub struct FlatBatch {
    items: Vec<IKey>,
    /// Bytes of keys and values referred to.
    bytes: usize,
}

impl FlatBatch {
    /// Empties the batch, keeping its buffer.
    pub fn clear(&mut self) {
        self.items.clear();
        self.bytes = 0;
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Entry `i`.
    pub fn get(&self, i: usize) -> Option<EntryRef<'_>> {
        self.items.get(i).map(IKey::entry_ref)
    }
}

/// Where a [`Memtable::batch_into`] starts.
#[derive(Debug, Clone, Copy)]
pub enum BatchFrom<'a> {
    /// At the first version of this user key.
    Start(&'a [u8]),
    /// Just after this internal key.
    After(&'a [u8], u64),
}

#[cfg(test)]
mod tests;
