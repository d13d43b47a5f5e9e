//! The command line of `tegula bench`: db_bench's and YCSB's flag names and their dashed
//! spellings, db_bench's boolean syntax, and the paper subcommands' flags.

use super::paper::PaperCommand;
use super::BenchCommand;
use clap::Parser;
use tegula_bench::paper::smrdb::Scale;

#[derive(Debug, Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: BenchCommand,
}

fn parse(args: &[&str]) -> Result<BenchCommand, clap::Error> {
    Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).map(|c| c.cmd)
}

fn db(args: &[&str]) -> super::db::DbArgs {
    match parse(&[&["db"], args].concat()).expect("parse") {
        BenchCommand::Db(a) => a,
        other => panic!("not db: {other:?}"),
    }
}

#[test]
fn db_bench_flag_names_parse() {
    let a = db(&[
        "--engine",
        "rocksdb,leveldb",
        "--benchmarks",
        "fillseq,readrandom",
        "--num",
        "1000",
        "--value_size",
        "4096",
        "--key-size",
        "20",
        "--sync_every",
        "10",
        "--json",
        "out.json",
        "--capacity",
        "16GiB",
    ]);
    assert_eq!(a.num, 1000);
    assert_eq!(a.value_size, 4096);
    assert_eq!(a.key_size, 20);
    assert_eq!(a.sync_every, 10);
    assert_eq!(a.engine.capacity.map(|c| c.0), Some(16 << 30));
    assert_eq!(a.engine.cache_size.0, 8 << 20);
    let cfg = a.config();
    assert_eq!(cfg.benchmarks, ["fillseq", "readrandom"]);
    assert_eq!(cfg.threads, 1);
}

#[test]
fn the_defaults_are_the_librarys() {
    let a = db(&[]);
    assert_eq!(a.config(), tegula_bench::DbBenchConfig::default());
    let s = a.engine.setup().expect("setup");
    assert_eq!(s, tegula_bench::EngineSetup::default());
    let BenchCommand::Ycsb(y) = parse(&["ycsb"]).expect("parse") else {
        panic!("not ycsb")
    };
    assert_eq!(
        y.config().expect("config"),
        tegula_bench::YcsbConfig::default()
    );
    let Ok(BenchCommand::Paper(PaperCommand::Smrdb(p))) = parse(&["paper", "smrdb"]) else {
        panic!("not paper smrdb")
    };
    assert_eq!(
        p.options(),
        tegula_bench::paper::smrdb::SmrdbOptions::default()
    );
}

#[test]
fn boolean_flags_take_db_bench_values() {
    let a = db(&[
        "--use_existing_db=1",
        "--statistics=0",
        "--sync=true",
        "--flush",
    ]);
    assert!(a.use_existing_db && a.sync && a.flush);
    assert!(!a.engine.statistics);
    let a = db(&["--use-existing-db=0", "--statistics", "--no_progress=yes"]);
    assert!(!a.use_existing_db && a.engine.statistics && a.engine.no_progress);
    // Without `=` the next word is the next flag, not a value.
    let a = db(&["--disable_wal", "--num", "7"]);
    assert!(a.engine.disable_wal);
    assert_eq!(a.num, 7);
    assert!(parse(&["db", "--sync=maybe"]).is_err());
    let BenchCommand::Ycsb(y) = parse(&["ycsb", "--writeallfields=1"]).expect("parse") else {
        panic!("not ycsb")
    };
    assert!(y.writeallfields);
}

#[test]
fn disable_wal_parses_and_refuses_synced_writes() {
    let a = db(&[
        "--engine",
        "memory",
        "--disable_wal",
        "--sync_every",
        "10",
        "--no_progress",
    ]);
    assert!(a.engine.disable_wal);
    let e = super::db::run(&a).expect_err("sync needs the log");
    assert!(e.to_string().contains("--disable_wal"), "{e}");
    let BenchCommand::Ycsb(y) =
        parse(&["ycsb", "--engine", "leveldb", "--disable-wal"]).expect("parse")
    else {
        panic!("not ycsb")
    };
    let e = y
        .engine
        .setup()
        .and_then(|s| Ok(s.factories()?))
        .expect_err("leveldb has no disableWAL");
    assert!(e.to_string().contains("LevelDB"), "{e}");
}

#[test]
fn zero_threads_are_an_error() {
    let a = db(&["--engine", "memory", "--threads", "0", "--num", "10"]);
    let e = super::db::run(&a).expect_err("threads 0");
    assert!(e.to_string().contains("--threads"), "{e}");
}

#[test]
fn ycsb_flags_parse() {
    let BenchCommand::Ycsb(a) = parse(&[
        "ycsb",
        "--engine",
        "memory",
        "--workload",
        "e",
        "--recordcount",
        "10",
        "--operationcount",
        "20",
        "--phase",
        "load",
    ])
    .expect("parse") else {
        panic!("not ycsb")
    };
    assert_eq!(a.workload, 'e');
    assert_eq!(a.recordcount, 10);
    let cfg = a.config().expect("config");
    assert_eq!(cfg.phases, tegula_bench::ycsb::Phases::Load);
    assert_eq!(cfg.workload.name, 'e');
}

#[test]
fn engines_missing_from_the_build_are_refused_with_a_reason() {
    let a = db(&["--engine", "nosuch"]);
    assert!(a.engine.setup().is_err());
    if !cfg!(feature = "compare") {
        let a = db(&["--engine", "rocksdb"]);
        let e = a
            .engine
            .setup()
            .and_then(|s| Ok(s.factories()?))
            .expect_err("no compare feature");
        assert!(e.to_string().contains("compare"), "{e}");
    }
}

#[test]
fn the_command_contract_parses() {
    let c = parse(&[
        "db",
        "--engine",
        "tegula,tegula-loc,rocksdb,leveldb",
        "--profile",
        "hm-smr",
        "--capacity",
        "16GiB",
        "--benchmarks",
        "fillseq,fillrandom,readrandom,readseq",
        "--num",
        "1000000",
        "--value_size",
        "100",
        "--json",
        "out.json",
    ])
    .expect("parse");
    assert!(matches!(c, BenchCommand::Db(_)));
    for w in ["a", "b", "c", "d", "e", "f"] {
        let c = parse(&[
            "ycsb",
            "--engine",
            "tegula",
            "--workload",
            w,
            "--recordcount",
            "10",
            "--operationcount",
            "10",
            "--fieldlength",
            "4096",
            "--json",
            "out.json",
        ])
        .expect("parse");
        assert!(matches!(c, BenchCommand::Ycsb(_)));
    }
    let c = parse(&["paper", "smrdb", "--scale", "full", "--out", "d"]).expect("parse");
    let BenchCommand::Paper(PaperCommand::Smrdb(p)) = c else {
        panic!("not paper smrdb")
    };
    assert_eq!(p.options().scale, Scale::Full);
    assert_eq!(p.options().out, std::path::PathBuf::from("d"));
}

#[test]
fn paper_flags_are_checked_before_anything_runs() {
    assert!(parse(&["paper", "nosuch"]).is_err());
    assert!(parse(&["paper", "smrdb", "--scale", "huge"]).is_err());
    assert!(parse(&["paper", "smrdb", "--figures", "seven"]).is_err());
    let Ok(BenchCommand::Paper(PaperCommand::Smrdb(p))) = parse(&[
        "paper",
        "smrdb",
        "--scale",
        "tiny",
        "--figures",
        "7,9",
        "--band",
        "2MiB",
        "--profiles",
        "hm-smr",
        "--smrdb_option",
        "l1_overlap_trigger=8",
        "--no_progress=1",
    ]) else {
        panic!("not paper smrdb")
    };
    let o = p.options();
    assert_eq!(o.scale, Scale::Tiny);
    assert_eq!(o.figures, Some(vec![7, 9]));
    assert_eq!(o.band, Some(2 << 20));
    assert_eq!(o.profiles, ["hm-smr"]);
    assert_eq!(o.smrdb_options.len(), 1);
    assert!(p.no_progress);
}
