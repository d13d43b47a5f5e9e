//! `tegula fs stats`: the cleaning estimate at the observed write rate, or at one given with
//! `--write-rate` (the observed rate averages since mkfs, idle time included).

mod common;

use common::*;

#[test]
fn fs_stats_estimates_cleaning_at_a_given_write_rate() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "fs.img", "hm-smr", "1GiB", &[]);
    ok(&["fs", "mkfs", &img]);

    let observed = ok_json(&["fs", "stats", &img, "--json"]);
    let g = &observed["gc_estimate"];
    assert_eq!(g["write_rate_source"], "observed");
    assert!(g["write_rate"].is_null(), "nothing written yet: {g}");

    let given = ok_json(&["fs", "stats", &img, "--json", "--write-rate", "40MiB/s"]);
    let g = &given["gc_estimate"];
    assert_eq!(g["write_rate_source"], "given");
    assert_eq!(g["write_rate"].as_f64(), Some(40.0 * 1048576.0));
    assert!(g["observed_write_rate"].is_null());
    let capacity = g["capacity"].as_f64().unwrap();
    let fill = g["fill"].as_f64().unwrap();
    let t = g["time_to_fill_secs"].as_f64().unwrap();
    assert!(
        (t - fill * capacity / (40.0 * 1048576.0)).abs() < 1e-6,
        "{g}"
    );
    // No dead data: nothing to reclaim at any rate.
    assert_eq!(g["clean_rate"].as_f64(), Some(0.0));

    let text = ok_out(&["fs", "stats", &img, "--write-rate", "40MiB"]);
    assert!(text.contains("at the given write rate of 40"), "{text}");

    for bad in ["0", "fast", "-1"] {
        let e = fails(&["fs", "stats", &img, &format!("--write-rate={bad}")]);
        assert!(e.contains("--write-rate"), "{bad}: {e}");
    }
}
