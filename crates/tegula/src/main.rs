//! `tegula`: the command line of the tegula storage stack.
//!
//! One subcommand family per component (`tegula disk …` for the emulated drives; the engines,
//! file systems, prober and benchmarks add theirs in [`cmd::Command`]) plus `tegula demo`.
//! Errors are reported as one line on stderr (`error: …`) with a non-zero exit code.

mod cmd;
mod device;
mod interrupt;
mod output;
mod signature;

use clap::Parser;
use std::process::ExitCode;

/// tegula: a storage stack for shingled (SMR) disks, on emulated or real drives.
#[derive(Debug, Parser)]
#[command(name = "tegula", version, propagate_version = true)]
struct Cli {
    /// More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,

    /// How long to wait for an image another tegula process holds (it is locked while a
    /// process writes it: a mount, a server, a `db put`), in seconds; then fail naming the
    /// holder.
    #[arg(long, global = true, value_name = "SECONDS", default_value_t = 10.0)]
    lock_wait: f64,

    #[command(subcommand)]
    command: cmd::Command,
}

fn init_logging(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    // fuser's session tries to unmount once more when it is dropped, after `fusermount3 -u`
    // or tegula itself already unmounted it, and logs the EINVAL it gets as an error ("Unmount
    // failed: Invalid argument"): tegula unmounts explicitly (crates/fs/src/mount.rs), so
    // that message is noise; RUST_LOG still shows it.
    // The file system's summary at unmount (requests served, the largest write) is an info
    // line that belongs in a mount's log at every verbosity.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        let fs = if verbose == 0 { "info" } else { default };
        EnvFilter::new(format!(
            "{default},fuser::mnt::fuse_pure=off,tegula_fs::fuse={fs}"
        ))
    });
    use std::io::IsTerminal;
    // A second initialisation (never expected) is harmless: ignore its error.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        // Colour codes only on a terminal, not in a mount process's log file.
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// Restores the default SIGPIPE action so that `tegula … | head` ends quietly, as `cat` does,
/// instead of failing on the closed pipe.
fn default_sigpipe() {
    // SAFETY: setting a signal disposition to SIG_DFL at start-up, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    default_sigpipe();
    let cli = Cli::parse();
    init_logging(cli.verbose);
    if !(cli.lock_wait.is_finite() && cli.lock_wait >= 0.0) {
        eprintln!("error: --lock-wait must be a number of seconds >= 0");
        return ExitCode::FAILURE;
    }
    tegula_device::lock::set_default_wait(std::time::Duration::from_secs_f64(cli.lock_wait));
    match cli.command.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<output::CheckExit>().is_some() => {
            let code = e.downcast_ref::<output::CheckExit>().map_or(4, |c| c.code);
            eprintln!("{}{}", if code >= 4 { "error: " } else { "" }, e);
            ExitCode::from(code)
        }
        Err(e) if e.downcast_ref::<interrupt::Interrupted>().is_some() => {
            eprintln!("{}", output::error_line(&e));
            ExitCode::from(interrupt::EXIT_CODE)
        }
        Err(e) => {
            eprintln!("error: {}", output::error_line(&e));
            ExitCode::FAILURE
        }
    }
}
