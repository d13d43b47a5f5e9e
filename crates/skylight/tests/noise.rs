//! Host noise: an emulated drive behind a wrapper that behaves like a wall-clock target on a
//! busy host — it says its clock is wall time and, at random, stalls the host before a command
//! reaches the drive (the drive sees more idle time, the host a slower command), delays a
//! completion (the host sees it late, the drive's clock runs on) or oversleeps a pause. The
//! prober must then report the map-merge period and the idle delay right or as unknown (null
//! with a reason), never as a wrong number.
#![allow(clippy::unwrap_used, missing_docs)]

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use tegula_device::{BlockDevice, Nanos, MS};
use tegula_skylight::error::OpResult;
use tegula_skylight::{
    probe, BlockTarget, ClockKind, Op, ProbeOptions, Quiet, Report, Target, TargetError,
};
use tegula_stl::{DmConfig, DmDrive};

/// Noise of a loaded host: how often a command or pause is hit, and by how much.
#[derive(Clone, Copy)]
struct Noise {
    /// Probability that a command or pause is hit by a stall.
    p: f64,
    /// Mean of an ordinary stall, ms (exponential).
    mean_ms: f64,
    /// Probability that a stall is a long one, 100-400 ms (as slow as a map merge).
    long: f64,
}

struct Noisy {
    inner: BlockTarget,
    rng: SmallRng,
    noise: Noise,
    stalls: u64,
}

impl Noisy {
    fn stall(&mut self) -> Nanos {
        if !self.rng.gen_bool(self.noise.p) {
            return 0;
        }
        self.stalls += 1;
        let ms = if self.rng.gen_bool(self.noise.long) {
            self.rng.gen_range(100.0..400.0)
        } else {
            -self.noise.mean_ms * (1.0 - self.rng.gen::<f64>()).ln()
        };
        (ms * MS as f64) as Nanos
    }

    /// Runs a command with host stalls around it: one before it reaches the drive (the drive
    /// idles meanwhile) and one before its completion reaches the host.
    fn around(&mut self, f: impl FnOnce(&mut BlockTarget) -> OpResult) -> OpResult {
        let before = self.stall();
        if before > 0 {
            self.inner.idle(before);
        }
        let l = f(&mut self.inner)?;
        let after = self.stall();
        if after > 0 {
            self.inner.idle(after);
        }
        Ok(before + l + after)
    }
}

impl Target for Noisy {
    fn describe(&self) -> String {
        format!("{} behind host noise", self.inner.describe())
    }
    fn block_size(&self) -> u64 {
        self.inner.block_size()
    }
    fn capacity(&self) -> u64 {
        self.inner.capacity()
    }
    fn clock(&self) -> ClockKind {
        ClockKind::Wall
    }
    fn read(&mut self, offset: u64, len: u64) -> OpResult {
        self.around(|t| t.read(offset, len))
    }
    fn write(&mut self, offset: u64, len: u64, fua: bool) -> OpResult {
        self.around(|t| t.write(offset, len, fua))
    }
    fn flush(&mut self) -> OpResult {
        self.around(|t| t.flush())
    }
    fn submit(&mut self, ops: &[Op]) -> Vec<OpResult> {
        let before = self.stall();
        if before > 0 {
            self.inner.idle(before);
        }
        let r = self.inner.submit(ops);
        let after = self.stall();
        if after > 0 {
            self.inner.idle(after);
        }
        r.into_iter()
            .map(|x| x.map(|l| before + l + after))
            .collect()
    }
    fn idle(&mut self, d: Nanos) {
        // A sleep on a busy host wakes late.
        let over = self.stall();
        self.inner.idle(d + over);
    }
    fn now(&self) -> Nanos {
        self.inner.now()
    }
    fn secure_erase(&mut self) -> Result<bool, TargetError> {
        // A wall-clock target offers none.
        Ok(false)
    }
}

fn probe_noisy(cfg: &DmConfig, noise: Noise, seed: u64) -> (Report, u64) {
    let dev: Arc<dyn BlockDevice> = Arc::new(DmDrive::new(cfg.clone()).unwrap());
    let mut t = Noisy {
        inner: BlockTarget::new("drive", dev),
        rng: SmallRng::seed_from_u64(seed),
        noise,
        stalls: 0,
    };
    let opts = ProbeOptions {
        tests: tegula_skylight::parse_tests("1,3").unwrap(),
        seed,
    };
    let r = probe::run(&mut t, &opts, &mut Quiet).unwrap().report;
    (r, t.stalls)
}

/// Right or null, never wrong: the merge period exact, the idle delay within 5%.
fn check(cfg: &DmConfig, r: &Report, what: &str) -> (bool, bool) {
    let merge = r.property("journal.map_merge_every").unwrap();
    let delay = r.property("cleaning.idle_delay_s").unwrap();
    println!(
        "{what}: map_merge_every {} ({})",
        merge.value, merge.evidence
    );
    println!("{what}: idle_delay_s {} ({})", delay.value, delay.evidence);
    if !merge.value.is_null() {
        assert_eq!(
            merge.value.as_u64(),
            Some(cfg.map_merge_every),
            "{what}: wrong map-merge period: {merge:?}"
        );
    } else {
        assert!(!merge.evidence.is_empty(), "{what}: null without a reason");
    }
    let want = cfg.idle_before_cleaning as f64 / 1e9;
    if let Some(got) = delay.value.as_f64() {
        assert!(
            (got - want).abs() <= 0.05 * want,
            "{what}: wrong idle delay {got} s (configured {want} s): {delay:?}"
        );
    } else {
        assert!(!delay.evidence.is_empty(), "{what}: null without a reason");
    }
    (!merge.value.is_null(), !delay.value.is_null())
}

#[test]
fn host_noise_gives_the_right_value_or_null_never_a_wrong_one() {
    let cfg = tegula_stl::dm_profile("seagate-5tb").unwrap().unwrap();
    let cases = [
        // What the NBD probe met: frequent short stalls (the 59 ms "slow writes").
        (
            "moderate",
            Noise {
                p: 0.03,
                mean_ms: 25.0,
                long: 0.05,
            },
            1,
        ),
        // A heavily loaded host: stalls as slow as a map merge, often.
        (
            "heavy",
            Noise {
                p: 0.10,
                mean_ms: 40.0,
                long: 0.2,
            },
            2,
        ),
    ];
    for (name, noise, seed) in cases {
        let (r, stalls) = probe_noisy(&cfg, noise, seed);
        println!("{name}: {stalls} host stalls");
        assert!(stalls > 0);
        check(&cfg, &r, name);
    }
}
