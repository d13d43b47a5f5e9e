//! Tests of the shared look: tick labels, fitted axes, legend placement.

use crate::*;

fn labels(a: &Axis) -> Vec<&str> {
    a.ticks.iter().map(|t| t.1.as_str()).collect()
}

#[test]
fn integer_ticks_have_no_decimals() {
    let a = Axis::linear(&[0.0, 130.0, 480.0, 960.0], Fit::X);
    assert_eq!(
        labels(&a),
        ["0", "100", "200", "300", "400", "500", "600", "700", "800", "900"]
    );
    assert_eq!(a.hi, 960.0);
    assert!(labels(&a).contains(&"500"));
    // An x axis ends where the data does; a y axis at the tick above, with room.
    let x = Axis::linear(&[0.0, 3070.0], Fit::X);
    assert_eq!((x.lo, x.hi), (0.0, 3070.0));
    assert_eq!(labels(&x).last(), Some(&"3000"));
    let y = Axis::linear(&[0.0, 3070.0], Fit::Y);
    assert_eq!((y.lo, y.hi), (0.0, 3500.0));
    // A y axis starts at 0 however far above the data lies; an x axis only when near.
    assert_eq!(Axis::linear(&[2480.0, 3840.0], Fit::Y).lo, 0.0);
    assert_eq!(Axis::linear(&[2480.0, 3840.0], Fit::X).lo, 2480.0);
    assert_eq!(Axis::linear(&[0.05, 0.05], Fit::X).lo, 0.0);
    assert_eq!(
        format_ticks(&[0.0, 500.0, 1000.0], 500.0),
        ["0", "500", "1000"]
    );
}

#[test]
fn fractional_ticks_are_exact_decimals() {
    assert_eq!(
        format_ticks(&[0.1, 0.2, 0.30000000000000004], 0.1),
        ["0.1", "0.2", "0.3"]
    );
    let a = Axis::linear(&[0.0, 0.3], Fit::Y);
    for (v, l) in &a.ticks {
        assert!(l.len() <= 4, "{v} -> {l}");
    }
    assert!(labels(&a).contains(&"0.30"), "{:?}", labels(&a));
    assert_eq!(format_value(0.30000000000000004), "0.3");
    assert_eq!(format_value(0.05), "0.05");
    assert_eq!(format_value(300.0), "300");
}

#[test]
fn large_ticks_are_abbreviated() {
    assert_eq!(
        format_ticks(&[0.0, 50_000.0, 100_000.0], 50_000.0),
        ["0", "50k", "100k"]
    );
    assert_eq!(
        format_ticks(&[0.0, 500_000.0, 1_000_000.0, 1_500_000.0], 500_000.0),
        ["0", "0.5M", "1.0M", "1.5M"]
    );
    assert_eq!(format_value(20_000.0), "20k");
    assert_eq!(format_value(2_500.0), "2500");
}

#[test]
fn a_linear_axis_with_outliers_covers_the_bulk() {
    // 990 values between 20 and 40, ten spikes at 5000.
    let mut v: Vec<f64> = (0..990).map(|i| 20.0 + (i % 21) as f64).collect();
    v.extend([5000.0; 10]);
    let a = Axis::linear(&v, Fit::Y);
    assert!(a.hi < 100.0, "top {}", a.hi);
    assert!(a.hi >= 40.0);
    assert_eq!(a.above, 10);
    let note = a.note().expect("a note on the clipped values");
    assert!(
        note.contains("10 of 1000") && note.contains("5000"),
        "{note}"
    );
    // The bulk spans most of the axis.
    assert!(a.frac(40.0) > 0.6, "{}", a.frac(40.0));
    // Without outliers, everything shows and there is no note.
    let b = Axis::linear(&v[..990], Fit::Y);
    assert!(b.hi >= 40.0 && b.note().is_none());
    // Few points are never clipped.
    let c = Axis::linear(&[1.0, 2.0, 100.0], Fit::Y);
    assert!(c.hi >= 100.0 && c.above == 0);
}

#[test]
fn a_log_axis_labels_where_the_data_is() {
    // Latencies: most between 20 and 30 ms, some at 0.3 ms and 330 ms.
    let mut v: Vec<f64> = (0..1000).map(|i| 20.0 + (i % 10) as f64).collect();
    v.extend([0.3, 330.0]);
    let a = Axis::log(&v, 12);
    let ls = labels(&a);
    assert!(ls.contains(&"20") && ls.contains(&"50"), "{ls:?}");
    assert!(ls.contains(&"0.5") && ls.contains(&"200"), "{ls:?}");
    assert!(a.lo <= 0.3 && a.hi >= 330.0);
    // A narrow range still gets two labels around the data.
    let b = Axis::log(&[23.0, 24.0, 25.0], 12);
    assert!(b.ticks.len() >= 2, "{:?}", b.ticks);
    assert!(b.lo <= 23.0 && b.hi >= 25.0);
    // Wide ranges are labelled per decade, not crowded.
    let c = Axis::log(&[0.001, 1e6], 12);
    assert!(c.ticks.len() <= 13, "{:?}", c.ticks);
    assert!(labels(&c).contains(&"10k"), "{:?}", labels(&c));
    assert!(labels(&c).contains(&"1000"), "{:?}", labels(&c));
}

#[test]
fn sweeps_get_integer_ticks_from_the_data() {
    let a = Axis::linear(&[4.0, 8.0, 12.0, 16.0], Fit::X);
    assert!(a.ticks.iter().all(|t| !t.1.contains('.')), "{:?}", a.ticks);
    let b = Axis::linear(&[2.0, 3.0, 4.0], Fit::X);
    assert!(b.ticks.iter().all(|t| t.0.fract() == 0.0), "{:?}", b.ticks);
}

fn entry(name: &str) -> Entry {
    Entry {
        name: name.into(),
        color: color(0),
        mark: Mark::Dots(0),
    }
}

#[test]
fn the_legend_avoids_the_data() {
    let x = Axis::labelled(0.0, 100.0, Vec::new());
    let y = Axis::labelled(0.0, 100.0, Vec::new());
    let entries = [entry("first 1.00 GiB"), entry("first 4.00 MiB")];
    // Data along the top: the legend goes to a lower corner.
    let mut top = Occupied::new();
    let pts: Vec<(f64, f64)> = (0..=100).map(|i| (i as f64, 95.0)).collect();
    top.line(&x, &y, &pts);
    let place = place_legend(&entries, &top, (900, 450));
    assert!(
        matches!(place, Place::Inside { right: true, top } if top < 0.2),
        "{place:?}"
    );
    // A rising line leaves the upper left free.
    let mut rising = Occupied::new();
    let pts: Vec<(f64, f64)> = (0..=100).map(|i| (i as f64, i as f64)).collect();
    rising.line(&x, &y, &pts);
    let place = place_legend(&entries, &rising, (900, 450));
    assert_eq!(
        place,
        Place::Inside {
            right: false,
            top: 1.0
        }
    );
    // Lines along the top and the bottom: the middle of the right edge.
    let mut both = top.clone();
    let pts: Vec<(f64, f64)> = (0..=100).map(|i| (i as f64, 5.0)).collect();
    both.line(&x, &y, &pts);
    let place = place_legend(&entries, &both, (900, 450));
    assert!(
        matches!(place, Place::Inside { right: true, top } if top > 0.3 && top < 0.95),
        "{place:?}"
    );
    // Data everywhere: above the plot.
    let mut full = Occupied::new();
    let pts: Vec<(f64, f64)> = (0..=100)
        .flat_map(|i| (0..=20).map(move |j| (i as f64, j as f64 * 5.0)))
        .collect();
    full.dots(&x, &y, &pts, 0.01);
    assert_eq!(place_legend(&entries, &full, (900, 450)), Place::Above);
}

#[test]
fn the_axis_maps_values_beyond_its_ends_onto_them() {
    let a = Axis::linear(&[0.0, 10.0], Fit::Y);
    assert_eq!(a.frac(-5.0), 0.0);
    assert_eq!(a.frac(1e9), 1.0);
    let l = Axis::log(&[1.0, 100.0], 12);
    assert_eq!(l.frac(0.0), 0.0);
    assert!((l.frac(10.0) - 0.5).abs() < 0.05);
}
