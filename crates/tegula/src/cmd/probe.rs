//! `tegula probe`: Skylight's TESTs 1-14 on a drive — an emulated drive (a built-in dm-smr
//! profile name, a TOML configuration or a disk image; virtual time), an NBD export (wall
//! time) or a real file or block device with `O_DIRECT` (wall time, `--destroys-data` only) —
//! and the Table III report, with JSON and plots. An image that holds data needs
//! `--destroys-data` too (the probe writes all over the drive); a fresh one does not. See
//! `docs/guides/probe.md`.

mod image_data;

use crate::device::{self, Access, Opened, PathKind, Spec};
use crate::interrupt;
use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tegula_device::{BlockDevice, Disk};
use tegula_skylight::{
    probe, BlockTarget, BoxError, DirectTarget, Fresh, NbdTarget, Observer, PowerControl,
    ProbeOptions, Target,
};
use tegula_stl::{DmConfig, DmDrive};

/// Probe a drive with Skylight's microbenchmarks and infer its internals from latencies.
#[derive(Debug, Clone, Args)]
pub struct ProbeArgs {
    /// What to probe: a built-in drive-managed profile (`seagate-5tb`, `emulated-smr-1`, …;
    /// `tegula disk profiles`), a TOML drive configuration, a disk image (its contents change:
    /// one that holds data needs `--destroys-data`), `nbd://HOST[:PORT]` or
    /// `nbd+unix:///?socket=PATH`, or a plain file or block device (with `--destroys-data`).
    pub target: String,
    /// Write the report as JSON to this file (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the plots (SVG) into this directory.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Tests to run: numbers 1-14 and 4.9 (section 4.9), ranges allowed (`1-3,11`); default
    /// all. Tests whose findings a selected test needs run too.
    #[arg(long, value_name = "LIST")]
    pub tests: Option<String>,
    /// Allow probing a plain file or block device, or an image that holds data: the probe
    /// overwrites its contents.
    #[arg(long)]
    pub destroys_data: bool,
    /// With `--destroys-data`: create the file with this size if it does not exist.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub size: Option<u64>,
    /// Seed of the random offsets.
    #[arg(long, default_value_t = ProbeOptions::default().seed)]
    pub seed: u64,
}

fn parse_size(s: &str) -> std::result::Result<u64, String> {
    tegula_device::parse_size(s).map_err(|e| e.to_string())
}

/// Power control of an emulated drive-managed drive: its fault injection.
struct DmPower(Arc<DmDrive>);

impl PowerControl for DmPower {
    fn arm_cut(&self, after: u64, seed: u64) {
        self.0.arm_power_cut(after, seed);
    }
    fn cut_now(&self) {
        self.0.power_cut();
    }
    fn power_on(&self) -> std::result::Result<(), BoxError> {
        self.0.power_on()?;
        Ok(())
    }
    fn is_powered(&self) -> bool {
        self.0.is_powered()
    }
}

/// Power control of an emulated conventional or zoned drive.
struct DiskPower(Arc<Disk>);

impl PowerControl for DiskPower {
    fn arm_cut(&self, after: u64, seed: u64) {
        self.0.arm_power_cut(after, seed);
    }
    fn cut_now(&self) {
        self.0.power_cut();
    }
    fn power_on(&self) -> std::result::Result<(), BoxError> {
        self.0.power_on();
        Ok(())
    }
    fn is_powered(&self) -> bool {
        self.0.with_media(|m| m.is_powered())
    }
}

/// A drive built from a configuration, with its power control (or why it could not be built).
type Built = std::result::Result<(Arc<dyn BlockDevice>, Option<Arc<dyn PowerControl>>), BoxError>;

/// A drive-managed drive built from `text`, with its power control.
fn dm_from(text: &str) -> Built {
    let d = Arc::new(DmDrive::from_toml(text)?);
    let p: Arc<dyn PowerControl> = Arc::new(DmPower(d.clone()));
    Ok((d, Some(p)))
}

/// A disk built from `text`, with its power control.
fn disk_from(text: &str) -> Built {
    let cfg = tegula_device::DiskConfig::from_toml(text)?;
    let d = Arc::new(Disk::in_memory(cfg)?);
    let p: Arc<dyn PowerControl> = Arc::new(DiskPower(d.clone()));
    Ok((d, Some(p)))
}

/// An in-memory drive from a configuration: a factory-fresh copy is its secure erase.
fn config_target(name: &str, text: String) -> Result<BlockTarget> {
    let dm = DmConfig::is_dm_smr_toml(&text);
    let build = move || if dm { dm_from(&text) } else { disk_from(&text) };
    let (dev, power) = build().map_err(|e| anyhow::anyhow!(e))?;
    let fresh: Fresh = Box::new(build);
    let mut t = BlockTarget::new(name, dev).with_fresh(fresh);
    if let Some(p) = power {
        t = t.with_power(p);
    }
    Ok(t)
}

/// A built-in device profile (`tegula disk profiles`' first table) as a probe target: a
/// conventional drive is probed in memory (the prober should find it is not SMR); the
/// host-managed kinds have nothing for it to infer.
fn device_profile_target(t: &str, cfg: tegula_device::DiskConfig) -> Result<Subject> {
    use tegula_device::DriveKind;
    match cfg.kind {
        DriveKind::Cmr => {
            let d = Arc::new(Disk::in_memory(cfg).with_context(|| format!("emulating {t}"))?);
            let p: Arc<dyn PowerControl> = Arc::new(DiskPower(d.clone()));
            let dev: Arc<dyn BlockDevice> = d;
            Ok(Subject::Plain(Box::new(
                BlockTarget::new(t, dev).with_power(p),
            )))
        }
        kind => bail!(
            "{t} is a built-in {} profile: its zones or tracks are managed by the host, so              there is no translation layer to infer; the prober takes a drive-managed profile              (the second table of `tegula disk profiles`, e.g. seagate-5tb) or cmr-7200",
            kind.name()
        ),
    }
}

/// What is being probed, and what to do with it afterwards.
enum Subject {
    /// Anything without a file to close.
    Plain(Box<dyn Target>),
    /// A drive image, closed (its state persisted) after the probe.
    Image(Box<dyn Target>, Closer),
}

/// Persists an image's state after the probe.
enum Closer {
    Dm(Arc<DmDrive>),
    Disk(Arc<Disk>),
}

impl Closer {
    fn close(self) -> Result<()> {
        match self {
            Closer::Dm(d) => d.save_state()?,
            Closer::Disk(d) => {
                d.flush()?;
            }
        }
        Ok(())
    }
}

fn open(args: &ProbeArgs) -> Result<Subject> {
    let t = args.target.as_str();
    if t.starts_with("nbd://") || t.starts_with("nbd+unix://") {
        let n = NbdTarget::connect(t).with_context(|| format!("connecting to {t}"))?;
        return Ok(Subject::Plain(Box::new(n)));
    }
    let path = Path::new(t);
    if !path.exists() {
        if let Some(text) = tegula_stl::profiles::dm_profile_toml(t) {
            return Ok(Subject::Plain(Box::new(config_target(
                t,
                text.to_string(),
            )?)));
        }
        if let Ok(cfg) = tegula_device::profile(t) {
            return device_profile_target(t, cfg);
        }
    }
    match device::kind_of(path) {
        PathKind::Config => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            Ok(Subject::Plain(Box::new(config_target(t, text)?)))
        }
        PathKind::DmImage | PathKind::ZonedImage => {
            if !args.destroys_data {
                refuse_image_with_data(path, t)?;
            }
            match device::open(&Spec::new(path, Access::ReadWrite))? {
                Opened::Dm(d) => {
                    let d = Arc::new(d);
                    let p: Arc<dyn PowerControl> = Arc::new(DmPower(d.clone()));
                    let dev: Arc<dyn BlockDevice> = d.clone();
                    let target = BlockTarget::new(t, dev).with_power(p);
                    Ok(Subject::Image(Box::new(target), Closer::Dm(d)))
                }
                Opened::Disk(d) => {
                    let d = Arc::new(d);
                    let p: Arc<dyn PowerControl> = Arc::new(DiskPower(d.clone()));
                    let dev: Arc<dyn BlockDevice> = d.clone();
                    let target = BlockTarget::new(t, dev).with_power(p);
                    Ok(Subject::Image(Box::new(target), Closer::Disk(d)))
                }
                Opened::Banded(_) | Opened::ZoneFiles(_) => {
                    bail!("{t}: a banded file is probed as a plain file")
                }
                Opened::Zbd(_) => bail!("{t} is a zoned block device"),
                Opened::DmImr(_) => bail!(
                    "{t} is a drive-managed IMR drive: the prober infers the internals of \
                     drive-managed SMR drives (Skylight), not of IMR translation"
                ),
                Opened::Kvimr(_) => bail!(
                    "{t} holds a KVIMR store (`tegula db create` on an imr image): the \
                     prober infers the internals of drive-managed drives, not of a host's store"
                ),
            }
        }
        PathKind::ZonedBlock => bail!(
            "{t} is a host-managed or host-aware zoned block device: the prober infers the \
             internals of drive-managed drives through random writes, which sequential zones \
             refuse; probe a drive-managed view of it instead (e.g. a dm-zoned device made by \
             `dmzadm --format {t}`, with --destroys-data)"
        ),
        PathKind::ZoneFiles => bail!(
            "{t} is a zone-files directory (host-managed zones of plain files, nothing to \
             infer); probe drive profiles, images or a drive"
        ),
        PathKind::Plain => {
            if !args.destroys_data {
                bail!(
                    "{t} is not a built-in profile, configuration or tegula image; probing a plain \
                     file or block device overwrites its contents: add --destroys-data"
                );
            }
            if !path.exists() {
                match args.size {
                    Some(size) => {
                        let f = std::fs::File::create_new(path)
                            .with_context(|| format!("creating {t}"))?;
                        f.set_len(size).with_context(|| format!("sizing {t}"))?;
                    }
                    None => bail!("{t} does not exist (give --size to create a file)"),
                }
            }
            let d = DirectTarget::open(path).with_context(|| format!("opening {t}"))?;
            Ok(Subject::Plain(Box::new(d)))
        }
    }
}

/// Fails when the image at `path` holds data, which the probe would overwrite: before, a CMR
/// image had 840 KB of its data rewritten without a word (issue 33). Nothing is written to
/// the image.
fn refuse_image_with_data(path: &Path, t: &str) -> Result<()> {
    let Some(data) = image_data::first_written(path)? else {
        return Ok(());
    };
    bail!(
        "{t} holds data ({data}); the probe writes all over the drive and would destroy it: add \
         --destroys-data to probe it anyway, or probe a copy, a fresh image or a profile"
    )
}

/// One progress bar per test.
struct Bars {
    multi: MultiProgress,
    bar: Option<ProgressBar>,
    show: bool,
}

impl Observer for Bars {
    fn begin(&mut self, id: u8, name: &str, total: u64) {
        if !self.show {
            return;
        }
        let pb = self.multi.add(ProgressBar::new(total.max(1)));
        if let Ok(st) =
            ProgressStyle::with_template("{prefix:>9} {msg:40!} [{bar:30}] {pos}/{len} {elapsed}")
        {
            pb.set_style(st.progress_chars("=> "));
        }
        pb.set_prefix(format!("TEST {}", tegula_skylight::report::test_label(id)));
        pb.set_message(name.to_string());
        self.bar = Some(pb);
    }
    fn progress(&mut self, done: u64) {
        if let Some(b) = &self.bar {
            if done > b.length().unwrap_or(0) {
                b.set_length(done);
            }
            b.set_position(done);
        }
    }
    fn finish(&mut self, _id: u8, verdict: &str) {
        if let Some(b) = self.bar.take() {
            b.set_length(b.position().max(1));
            b.finish_with_message(verdict.chars().take(60).collect::<String>());
        }
    }
    fn keep_going(&mut self) -> bool {
        !interrupt::requested()
    }
}

/// Runs `tegula probe`.
pub fn run(args: ProbeArgs) -> Result<()> {
    interrupt::install()?;
    let tests = match &args.tests {
        Some(t) => tegula_skylight::parse_tests(t)?,
        None => Vec::new(),
    };
    let opts = ProbeOptions {
        tests,
        seed: args.seed,
    };
    let opened = open(&args)?;
    let mut obs = Bars {
        multi: MultiProgress::new(),
        bar: None,
        show: std::io::stderr().is_terminal(),
    };
    let (result, closer) = match opened {
        Subject::Plain(mut t) => (probe::run(t.as_mut(), &opts, &mut obs), None),
        Subject::Image(mut t, c) => (probe::run(t.as_mut(), &opts, &mut obs), Some(c)),
    };
    if let Some(c) = closer {
        c.close()?;
    }
    let done = match result {
        Err(e @ tegula_skylight::ProbeError::Stopped { .. }) => {
            return Err(interrupt::Interrupted(format!(": {e}")).into())
        }
        other => other?,
    };
    if let Some(dir) = &args.plots {
        let files = tegula_skylight::plot::write_all(&done.plots, dir)?;
        eprintln!("{} plots in {}", files.len(), dir.display());
    }
    match args.json.as_deref() {
        Some(p) if p == Path::new("-") => crate::output::print_json(&done.report)?,
        Some(p) => {
            let text = serde_json::to_string_pretty(&done.report)?;
            std::fs::write(p, text + "\n").with_context(|| format!("writing {}", p.display()))?;
            print!("{}", done.report.table());
        }
        None => print!("{}", done.report.table()),
    }
    Ok(())
}
