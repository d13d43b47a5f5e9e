//! The `tegula bench` command line on its own, for running the harness without the `tegula`
//! binary: `cargo run --release -p tegula-bench --features compare --example bench -- db …`.

use clap::Parser;

/// tegula's key-value benchmarks.
#[derive(Debug, Parser)]
#[command(name = "tegula-bench")]
struct Cli {
    #[command(subcommand)]
    cmd: tegula_bench::cli::BenchCommand,
}

fn main() -> anyhow::Result<()> {
    tegula_bench::cli::run(Cli::parse().cmd)
}
