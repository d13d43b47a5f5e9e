//! A side-by-side run: the same db_bench benchmarks or YCSB workload on several engines, one
//! after the other in this process, with the same settings and seed.

use crate::dbbench::{self, DbBenchConfig};
use crate::error::{Error, Result};
use crate::observer::Observer;
use crate::report::BenchResult;
use crate::setup::EngineSetup;
use crate::ycsb::{self, YcsbConfig};
use tegula_kv::{EngineFactory, EngineKind};

/// The engines of a run, checked and ready to open.
#[derive(Debug)]
pub struct Lineup {
    factories: Vec<EngineFactory>,
}

impl Lineup {
    /// Checks the db_bench settings against the setup and prepares every engine; nothing
    /// runs yet, so a mistake is reported before any output.
    pub fn for_db(setup: &EngineSetup, cfg: &DbBenchConfig) -> Result<Self> {
        dbbench::validate(cfg)?;
        if setup.disable_wal
            && (cfg.sync || cfg.sync_every > 0 || cfg.benchmarks.iter().any(|b| b == "fillsync"))
        {
            return Err(Error::invalid(
                "--disable_wal cannot be combined with synced writes (--sync, --sync_every, \
                 fillsync): a synced write needs the log",
            ));
        }
        Ok(Lineup::of(setup.factories()?))
    }

    /// Checks the YCSB settings and prepares every engine.
    pub fn for_ycsb(setup: &EngineSetup, cfg: &YcsbConfig) -> Result<Self> {
        ycsb::validate(cfg)?;
        Ok(Lineup::of(setup.factories()?))
    }

    fn of(mut factories: Vec<EngineFactory>) -> Self {
        if let [only] = factories.as_mut_slice() {
            only.mark_alone_in_process();
            crate::runner::start_anon_rss_sampler();
        }
        Lineup { factories }
    }

    /// Keeps only the engine at position `index` of the lineup (the others' places in the
    /// run directory stay as they were): a process that runs one engine of a lineup, so that
    /// its peak RSS is that engine's.
    pub fn only(mut self, index: usize) -> Result<Self> {
        if index >= self.factories.len() {
            return Err(Error::invalid(format!(
                "engine {index} of a lineup of {}",
                self.factories.len()
            )));
        }
        let mut f = self.factories.swap_remove(index);
        f.mark_alone_in_process();
        crate::runner::start_anon_rss_sampler();
        Ok(Lineup { factories: vec![f] })
    }

    /// The factories, in run order.
    pub fn factories(&self) -> &[EngineFactory] {
        &self.factories
    }

    /// The engines, in run order.
    pub fn engines(&self) -> Vec<EngineKind> {
        self.factories.iter().map(|f| f.kind()).collect()
    }

    /// Runs the db_bench benchmarks on every engine; each result goes to `obs` as soon as it
    /// is known. Returns every result.
    pub fn run_db(&self, cfg: &DbBenchConfig, obs: &dyn Observer) -> Result<Vec<BenchResult>> {
        self.run_each(obs, |f| dbbench::run(f, cfg, obs))
    }

    /// Runs the YCSB phases on every engine; like [`Lineup::run_db`].
    pub fn run_ycsb(&self, cfg: &YcsbConfig, obs: &dyn Observer) -> Result<Vec<BenchResult>> {
        self.run_each(obs, |f| ycsb::run(f, cfg, obs))
    }

    /// Runs `run` on every engine in order, telling `obs` when each starts and stopping when
    /// it asks to; an error names the engine it came from.
    fn run_each(
        &self,
        obs: &dyn Observer,
        run: impl Fn(&EngineFactory) -> Result<Vec<BenchResult>>,
    ) -> Result<Vec<BenchResult>> {
        let mut all = Vec::new();
        for f in &self.factories {
            let name = f.kind().name();
            if obs.should_stop() {
                return Err(Error::Interrupted);
            }
            obs.engine_started(name);
            all.extend(run(f).map_err(|e| e.in_engine(name))?);
        }
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disable_wal_refuses_synced_writes_before_anything_runs() {
        let setup = EngineSetup {
            engines: vec![EngineKind::Memory],
            disable_wal: true,
            ..EngineSetup::default()
        };
        let cfg = DbBenchConfig {
            sync_every: 10,
            ..DbBenchConfig::default()
        };
        let e = Lineup::for_db(&setup, &cfg).expect_err("sync needs the log");
        assert!(e.to_string().contains("--disable_wal"), "{e}");
        assert!(e.is_invalid_argument());
        let setup = EngineSetup {
            engines: vec![EngineKind::Leveldb],
            disable_wal: true,
            ..EngineSetup::default()
        };
        let e = Lineup::for_ycsb(&setup, &YcsbConfig::default()).expect_err("no disableWAL");
        assert!(e.to_string().contains("LevelDB"), "{e}");
    }

    #[test]
    fn zero_threads_are_refused() {
        let setup = EngineSetup {
            engines: vec![EngineKind::Memory],
            ..EngineSetup::default()
        };
        let cfg = DbBenchConfig {
            threads: 0,
            ..DbBenchConfig::default()
        };
        let e = Lineup::for_db(&setup, &cfg).expect_err("threads 0");
        assert!(e.to_string().contains("--threads"), "{e}");
        let cfg = YcsbConfig {
            threads: 0,
            ..YcsbConfig::default()
        };
        assert!(Lineup::for_ycsb(&setup, &cfg).is_err());
    }
}
