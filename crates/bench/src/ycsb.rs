//! YCSB's core workloads A–F, following YCSB's `CoreWorkload` and its RocksDB binding.
//!
//! | workload | operations | request distribution |
//! | --- | --- | --- |
//! | A | 50% read, 50% update | zipfian |
//! | B | 95% read, 5% update | zipfian |
//! | C | 100% read | zipfian |
//! | D | 95% read, 5% insert | latest |
//! | E | 95% scan (length uniform in 1..=100), 5% insert | zipfian |
//! | F | 50% read, 50% read-modify-write | zipfian |
//!
//! Keys are `user` followed by the FNV hash of the record number (YCSB's default hashed insert
//! order); a record is `fieldcount` fields of `fieldlength` bytes stored as one value. As in
//! YCSB's RocksDB binding, an update reads the record, replaces one field and writes it back
//! (`--writeallfields` makes it a blind write of every field); a read-modify-write reads the
//! record and then updates it. The zipfian key chooser is YCSB's scrambled zipfian over
//! `recordcount + 2 × expected inserts` items, redrawing keys not inserted yet.

use crate::error::{Error, Result};
use crate::generators::{fnvhash64, AckCounter, ScrambledZipfian, SkewedLatest};
use crate::keys::ValueGen;
use crate::observer::Observer;
use crate::report::BenchResult;
use crate::runner::{report_result, run_phase, Phase, ThreadCtx};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use tegula_kv::SyncPolicy;
use tegula_kv::{EngineFactory, KvEngine};

/// A request distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Uniform over the loaded records.
    Uniform,
    /// YCSB's scrambled zipfian.
    Zipfian,
    /// YCSB's skewed-latest (favours recent inserts).
    Latest,
}

impl Distribution {
    /// Parses `uniform`, `zipfian` or `latest`.
    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "uniform" => Distribution::Uniform,
            "zipfian" => Distribution::Zipfian,
            "latest" => Distribution::Latest,
            o => {
                return Err(Error::invalid(format!(
                    "unknown request distribution {o:?} (uniform, zipfian, latest)"
                )))
            }
        })
    }
}

/// Operation proportions and distribution of a workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workload {
    /// Workload letter (`a`..`f`).
    pub name: char,
    /// Read proportion.
    pub read: f64,
    /// Update proportion.
    pub update: f64,
    /// Insert proportion.
    pub insert: f64,
    /// Scan proportion.
    pub scan: f64,
    /// Read-modify-write proportion.
    pub rmw: f64,
    /// Request distribution.
    pub dist: Distribution,
}

impl Workload {
    /// YCSB's core workload `letter` (a–f).
    pub fn core(letter: char) -> Result<Self> {
        let w = |read, update, insert, scan, rmw, dist| Workload {
            name: letter.to_ascii_lowercase(),
            read,
            update,
            insert,
            scan,
            rmw,
            dist,
        };
        use Distribution::*;
        Ok(match letter.to_ascii_lowercase() {
            'a' => w(0.5, 0.5, 0.0, 0.0, 0.0, Zipfian),
            'b' => w(0.95, 0.05, 0.0, 0.0, 0.0, Zipfian),
            'c' => w(1.0, 0.0, 0.0, 0.0, 0.0, Zipfian),
            'd' => w(0.95, 0.0, 0.05, 0.0, 0.0, Latest),
            'e' => w(0.0, 0.0, 0.05, 0.95, 0.0, Zipfian),
            'f' => w(0.5, 0.0, 0.0, 0.0, 0.5, Zipfian),
            o => {
                return Err(Error::invalid(format!(
                    "unknown workload {o:?} (a, b, c, d, e, f)"
                )))
            }
        })
    }

    /// Chooses the next operation from a uniform draw `u` in [0, 1) (YCSB's
    /// `DiscreteGenerator` over the proportions, in YCSB's order).
    pub fn choose(&self, u: f64) -> Op {
        let table = [
            (self.read, Op::Read),
            (self.update, Op::Update),
            (self.insert, Op::Insert),
            (self.scan, Op::Scan),
            (self.rmw, Op::ReadModifyWrite),
        ];
        let total: f64 = table.iter().map(|t| t.0).sum();
        let mut x = u * total;
        for (p, op) in table {
            if p <= 0.0 {
                continue;
            }
            if x < p {
                return op;
            }
            x -= p;
        }
        table
            .iter()
            .rev()
            .find(|t| t.0 > 0.0)
            .map_or(Op::Read, |t| t.1)
    }
}

/// A YCSB operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Read a whole record.
    Read,
    /// Update one field (or all with `writeallfields`).
    Update,
    /// Insert a new record.
    Insert,
    /// Scan a number of records.
    Scan,
    /// Read, then update.
    ReadModifyWrite,
}

/// Operation kind names, as YCSB prints them, indexed like [`Op`].
pub const OP_NAMES: [&str; 5] = ["READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE"];

impl Op {
    fn index(self) -> usize {
        match self {
            Op::Read => 0,
            Op::Update => 1,
            Op::Insert => 2,
            Op::Scan => 3,
            Op::ReadModifyWrite => 4,
        }
    }
}

/// Which phases to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Phases {
    /// Load only.
    Load,
    /// Run only (on an existing database).
    Run,
    /// Load, then run (the default).
    #[default]
    Both,
}

impl Phases {
    /// Parses `load`, `run` or `both`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "load" => Ok(Phases::Load),
            "run" => Ok(Phases::Run),
            "both" => Ok(Phases::Both),
            o => Err(Error::invalid(format!(
                "unknown phase {o:?} (load, run, both)"
            ))),
        }
    }

    /// The name [`Phases::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Phases::Load => "load",
            Phases::Run => "run",
            Phases::Both => "both",
        }
    }
}

/// Settings of a YCSB run (YCSB's property names). [`YcsbConfig::default`] (workload A) is
/// the one source of the defaults documented on each field.
#[derive(Debug, Clone, PartialEq)]
pub struct YcsbConfig {
    /// The workload (default: core workload A).
    pub workload: Workload,
    /// Records loaded (`recordcount`, default 100,000).
    pub recordcount: u64,
    /// Operations in the run phase (`operationcount`, default 100,000).
    pub operationcount: u64,
    /// Fields per record (`fieldcount`, default 10).
    pub fieldcount: usize,
    /// Bytes per field (`fieldlength`, default 100).
    pub fieldlength: usize,
    /// Longest scan (`maxscanlength`, default 100).
    pub maxscanlength: u64,
    /// Updates write every field without reading (`writeallfields`, default false).
    pub writeallfields: bool,
    /// Client threads (default 1; at least 1).
    pub threads: usize,
    /// Random seed (default 301).
    pub seed: u64,
    /// Phases to run (default both).
    pub phases: Phases,
    /// Time each phase that writes until the engine has no flush or compaction running or
    /// due (`--settle`, default off), so that the compaction a load made necessary is paid
    /// by the load and not by whichever run phase follows it
    /// ([`KvEngine::wait_for_background`]).
    pub settle: bool,
}

impl Default for YcsbConfig {
    fn default() -> Self {
        YcsbConfig {
            workload: Workload {
                name: 'a',
                read: 0.5,
                update: 0.5,
                insert: 0.0,
                scan: 0.0,
                rmw: 0.0,
                dist: Distribution::Zipfian,
            },
            recordcount: 100_000,
            operationcount: 100_000,
            fieldcount: 10,
            fieldlength: 100,
            maxscanlength: 100,
            writeallfields: false,
            threads: 1,
            seed: 301,
            phases: Phases::Both,
            settle: false,
        }
    }
}

impl YcsbConfig {
    /// The defaults with core workload `letter` (a–f).
    pub fn new(letter: char) -> Result<Self> {
        Ok(YcsbConfig {
            workload: Workload::core(letter)?,
            ..YcsbConfig::default()
        })
    }
}

/// Checks the settings before anything runs.
pub fn validate(cfg: &YcsbConfig) -> Result<()> {
    if cfg.recordcount == 0 {
        return Err(Error::invalid("--recordcount must be positive"));
    }
    if cfg.threads == 0 {
        return Err(Error::invalid("--threads must be at least 1"));
    }
    Ok(())
}

/// YCSB's key for record number `keynum` (hashed insert order): `user` + decimal FNV hash.
pub fn key_name(keynum: u64) -> Vec<u8> {
    format!("user{}", fnvhash64(keynum)).into_bytes()
}

/// Encodes a record as (u32 LE name length, name, u32 LE value length, value) per field.
pub fn encode_record(fields: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let len: usize = fields.iter().map(|(k, v)| 8 + k.len() + v.len()).sum();
    let mut out = Vec::with_capacity(len);
    for (k, v) in fields {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k);
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v);
    }
    out
}

/// A YCSB record: its (field name, field value) pairs.
pub type Record = Vec<(Vec<u8>, Vec<u8>)>;

/// Decodes a record made by [`encode_record`]; bad bytes give [`Error::Corrupt`].
pub fn decode_record(mut b: &[u8]) -> Result<Record> {
    let mut out = Vec::new();
    let take = |b: &mut &[u8]| -> Result<Vec<u8>> {
        let l = b
            .get(..4)
            .and_then(|x| <[u8; 4]>::try_from(x).ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| Error::Corrupt("record truncated in a length".into()))?
            as usize;
        let s = b
            .get(4..4 + l)
            .ok_or_else(|| Error::Corrupt("record truncated in a field".into()))?;
        let v = s.to_vec();
        *b = &b[4 + l..];
        Ok(v)
    };
    while !b.is_empty() {
        let k = take(&mut b)?;
        let v = take(&mut b)?;
        out.push((k, v));
    }
    Ok(out)
}

fn field_name(i: usize) -> Vec<u8> {
    format!("field{i}").into_bytes()
}

fn make_record(cfg: &YcsbConfig, values: &mut ValueGen) -> Vec<u8> {
    let fields: Vec<(Vec<u8>, Vec<u8>)> = (0..cfg.fieldcount)
        .map(|i| (field_name(i), values.next(cfg.fieldlength).to_vec()))
        .collect();
    encode_record(&fields)
}

/// Key choosers of a run phase, shared by the client threads.
struct Choosers {
    dist: Distribution,
    insertstart: u64,
    insertcount: u64,
    zipf: Option<ScrambledZipfian>,
    latest: Option<SkewedLatest>,
    inserts: AckCounter,
}

impl Choosers {
    fn new(cfg: &YcsbConfig) -> Self {
        let insertstart = 0;
        let insertcount = cfg.recordcount;
        let inserts = AckCounter::new(insertstart + insertcount);
        let expected_new = (cfg.operationcount as f64 * cfg.workload.insert * 2.0) as u64;
        let zipf = (cfg.workload.dist == Distribution::Zipfian)
            .then(|| ScrambledZipfian::new(insertstart, insertstart + insertcount + expected_new));
        let latest =
            (cfg.workload.dist == Distribution::Latest).then(|| SkewedLatest::new(&inserts));
        Choosers {
            dist: cfg.workload.dist,
            insertstart,
            insertcount,
            zipf,
            latest,
            inserts,
        }
    }

    /// YCSB's `nextKeynum`: never a record that is not acknowledged yet.
    fn next_keynum(&self, rng: &mut SmallRng) -> u64 {
        let last = self.inserts.last_value();
        match (self.dist, &self.zipf, &self.latest) {
            (Distribution::Latest, _, Some(l)) => l.next(rng, &self.inserts),
            (Distribution::Zipfian, Some(z), _) => loop {
                let k = z.next(rng);
                if k <= last {
                    break k;
                }
            },
            _ => rng.gen_range(self.insertstart..self.insertstart + self.insertcount.max(1)),
        }
    }
}

/// Runs the configured phases on engines from `factory`, reporting progress and every result
/// to `obs`.
pub fn run(
    factory: &EngineFactory,
    cfg: &YcsbConfig,
    obs: &dyn Observer,
) -> Result<Vec<BenchResult>> {
    validate(cfg)?;
    let engine = factory.open(cfg.phases != Phases::Run)?;
    let mut out = Vec::new();
    let writes_in_run = cfg.workload.update + cfg.workload.insert + cfg.workload.rmw > 0.0;
    for (phase, writes) in [(Phases::Load, true), (Phases::Run, writes_in_run)] {
        let skipped = match phase {
            Phases::Load => cfg.phases == Phases::Run,
            _ => cfg.phases == Phases::Load,
        };
        if skipped {
            continue;
        }
        if obs.should_stop() {
            engine.close()?;
            return Err(Error::Interrupted);
        }
        let r = if phase == Phases::Load {
            load(engine.as_ref(), cfg, obs)
        } else {
            run_ops(engine.as_ref(), cfg, obs)
        };
        if matches!(r, Err(Error::Interrupted)) {
            engine.close()?;
            return Err(Error::Interrupted);
        }
        let mut r = r?;
        if cfg.settle && writes {
            let s = Instant::now();
            engine.wait_for_background()?;
            r.add_wall_seconds(s.elapsed().as_secs_f64());
        }
        // YCSB's writes are never synced: a device time ends with some of them not durable.
        if writes && r.device_seconds.is_some() {
            r.device_time_durable = Some(false);
        }
        report_result(
            factory,
            engine.as_ref(),
            SyncPolicy::Never,
            r,
            obs,
            &mut out,
        );
    }
    engine.close()?;
    Ok(out)
}

fn thread_seed(cfg: &YcsbConfig, t: usize, salt: u64) -> u64 {
    cfg.seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(salt)
        .wrapping_add(t as u64 + 1)
}

/// The load phase: inserts `recordcount` records.
pub fn load(engine: &dyn KvEngine, cfg: &YcsbConfig, obs: &dyn Observer) -> Result<BenchResult> {
    let next = AtomicU64::new(0);
    let phase = Phase {
        engine,
        name: format!("ycsb-{}-load", cfg.workload.name),
        threads: cfg.threads.max(1),
        expected_ops: cfg.recordcount,
        kinds: vec!["INSERT"],
        observer: obs,
        counts_found: false,
        key_size: key_name(0).len(),
        value_size: cfg.fieldcount * (cfg.fieldlength + 14),
    };
    run_phase(&phase, |t, ctx| {
        let mut values = ValueGen::new(thread_seed(cfg, t, 0x10ad), cfg.fieldlength);
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            if k >= cfg.recordcount {
                return Ok(());
            }
            let key = key_name(k);
            let rec = make_record(cfg, &mut values);
            let s = Instant::now();
            engine.put(&key, &rec)?;
            ctx.record(0, s, (key.len() + rec.len()) as u64)?;
        }
    })
}

/// Reads a record and checks that it decodes.
fn read_record(engine: &dyn KvEngine, key: &[u8]) -> Result<Option<Record>> {
    match engine.get(key)? {
        Some(v) => Ok(Some(decode_record(&v).map_err(|e| {
            Error::Corrupt(format!(
                "record {} is malformed: {e}",
                String::from_utf8_lossy(key)
            ))
        })?)),
        None => Ok(None),
    }
}

fn record_bytes(fields: &[(Vec<u8>, Vec<u8>)]) -> u64 {
    fields.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum()
}

/// The run phase: `operationcount` operations of the workload's mix.
pub fn run_ops(engine: &dyn KvEngine, cfg: &YcsbConfig, obs: &dyn Observer) -> Result<BenchResult> {
    let choosers = Choosers::new(cfg);
    let phase = Phase {
        engine,
        name: format!("ycsb-{}-run", cfg.workload.name),
        threads: cfg.threads.max(1),
        expected_ops: cfg.operationcount,
        kinds: OP_NAMES.to_vec(),
        observer: obs,
        counts_found: true,
        key_size: key_name(0).len(),
        value_size: cfg.fieldcount * (cfg.fieldlength + 14),
    };
    let threads = phase.threads;
    run_phase(&phase, |t, ctx| {
        let mut rng = SmallRng::seed_from_u64(thread_seed(cfg, t, 0x7e57));
        let mut values = ValueGen::new(thread_seed(cfg, t, 0xda7a), cfg.fieldlength);
        let n = cfg.operationcount * (t as u64 + 1) / threads as u64
            - cfg.operationcount * t as u64 / threads as u64;
        for _ in 0..n {
            let op = cfg.workload.choose(rng.gen::<f64>());
            one_op(engine, cfg, &choosers, op, &mut rng, &mut values, ctx)?;
        }
        Ok(())
    })
}

fn update(
    engine: &dyn KvEngine,
    cfg: &YcsbConfig,
    key: &[u8],
    rng: &mut SmallRng,
    values: &mut ValueGen,
) -> Result<u64> {
    let rec = if cfg.writeallfields {
        make_record(cfg, values)
    } else {
        let field = rng.gen_range(0..cfg.fieldcount.max(1));
        let mut fields = read_record(engine, key)?.unwrap_or_default();
        let name = field_name(field);
        let v = values.next(cfg.fieldlength).to_vec();
        match fields.iter_mut().find(|(k, _)| *k == name) {
            Some(f) => f.1 = v,
            None => fields.push((name, v)),
        }
        encode_record(&fields)
    };
    engine.put(key, &rec)?;
    Ok((key.len() + rec.len()) as u64)
}

fn one_op(
    engine: &dyn KvEngine,
    cfg: &YcsbConfig,
    ch: &Choosers,
    op: Op,
    rng: &mut SmallRng,
    values: &mut ValueGen,
    ctx: &mut ThreadCtx<'_>,
) -> Result<()> {
    match op {
        Op::Read => {
            let key = key_name(ch.next_keynum(rng));
            let s = Instant::now();
            let r = read_record(engine, &key)?;
            let bytes = key.len() as u64 + r.as_deref().map_or(0, record_bytes);
            ctx.record(op.index(), s, bytes)?;
            ctx.lookup(r.is_some());
        }
        Op::Update => {
            let key = key_name(ch.next_keynum(rng));
            let s = Instant::now();
            let bytes = update(engine, cfg, &key, rng, values)?;
            ctx.record(op.index(), s, bytes)?;
        }
        Op::Insert => {
            let k = ch.inserts.next_value();
            let key = key_name(k);
            let rec = make_record(cfg, values);
            let s = Instant::now();
            engine.put(&key, &rec)?;
            ctx.record(op.index(), s, (key.len() + rec.len()) as u64)?;
            ch.inserts.acknowledge(k);
        }
        Op::Scan => {
            let key = key_name(ch.next_keynum(rng));
            let len = rng.gen_range(1..=cfg.maxscanlength.max(1)) as usize;
            let s = Instant::now();
            let mut bytes = 0u64;
            let mut bad = None;
            let n = engine.scan(&key, len, &mut |k, v| {
                match decode_record(v) {
                    Ok(f) => bytes += k.len() as u64 + record_bytes(&f),
                    Err(e) => {
                        bad = Some(e);
                        return false;
                    }
                }
                true
            })?;
            if let Some(e) = bad {
                return Err(Error::Corrupt(format!(
                    "a scanned record is malformed: {e}"
                )));
            }
            ctx.record(op.index(), s, bytes)?;
            ctx.lookup(n > 0);
        }
        Op::ReadModifyWrite => {
            let key = key_name(ch.next_keynum(rng));
            let s = Instant::now();
            let r = read_record(engine, &key)?;
            ctx.record_part(Op::Read.index(), s);
            let su = Instant::now();
            let bytes = update(engine, cfg, &key, rng, values)?;
            ctx.record_part(Op::Update.index(), su);
            ctx.record(
                op.index(),
                s,
                bytes + key.len() as u64 + r.as_deref().map_or(0, record_bytes),
            )?;
            ctx.lookup(r.is_some());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_mixes_match_the_core_workloads() {
        let mut rng = SmallRng::seed_from_u64(5);
        for letter in ['a', 'b', 'c', 'd', 'e', 'f'] {
            let w = Workload::core(letter).expect("workload");
            let n = 100_000;
            let mut counts = [0u64; 5];
            for _ in 0..n {
                counts[w.choose(rng.gen::<f64>()).index()] += 1;
            }
            let want = [w.read, w.update, w.insert, w.scan, w.rmw];
            for (i, (&c, &p)) in counts.iter().zip(want.iter()).enumerate() {
                let got = c as f64 / n as f64;
                assert!(
                    (got - p).abs() < 0.01,
                    "workload {letter}: {} {got} vs {p}",
                    OP_NAMES[i]
                );
            }
        }
        assert!(Workload::core('g').is_err());
    }

    #[test]
    fn the_default_is_workload_a_with_the_shared_threads_and_seed() {
        let d = YcsbConfig::default();
        assert_eq!(d.workload, Workload::core('a').expect("a"));
        assert_eq!(YcsbConfig::new('a').expect("a"), d);
        // The command line takes --threads and --seed of both db and ycsb from one default.
        let db = crate::dbbench::DbBenchConfig::default();
        assert_eq!((d.threads, d.seed), (db.threads, db.seed));
        assert!(validate(&YcsbConfig { threads: 0, ..d }).is_err());
        assert_eq!(
            Phases::parse(Phases::Both.name()).expect("both"),
            Phases::Both
        );
        assert!(Phases::parse("all").is_err());
    }

    #[test]
    fn records_round_trip_and_bad_bytes_are_errors() {
        let f = vec![
            (b"field0".to_vec(), vec![1u8; 100]),
            (b"field1".to_vec(), vec![]),
        ];
        let e = encode_record(&f);
        assert_eq!(decode_record(&e).expect("decode"), f);
        assert!(decode_record(&e[..e.len() - 1]).is_err());
        assert!(decode_record(&[1, 2]).is_err());
        assert!(decode_record(&[255, 255, 255, 255]).is_err());
    }

    #[test]
    fn keys_are_ycsb_style_hashed_names() {
        assert_eq!(key_name(0), format!("user{}", fnvhash64(0)).into_bytes());
        assert_ne!(key_name(1), key_name(2));
    }

    #[test]
    fn zipfian_choosers_never_pick_unloaded_records() {
        let cfg = YcsbConfig {
            recordcount: 500,
            operationcount: 10_000,
            ..YcsbConfig::new('e').expect("cfg")
        };
        let ch = Choosers::new(&cfg);
        let mut rng = SmallRng::seed_from_u64(1);
        for _ in 0..20_000 {
            assert!(ch.next_keynum(&mut rng) < 500);
        }
    }
}
