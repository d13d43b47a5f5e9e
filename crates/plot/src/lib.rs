//! How every tegula plot reads: the one look shared by the prober's plots (`tegula-skylight`)
//! and the benchmarks' and paper figures' (`tegula-bench`), drawn with plotters.
//!
//! - Axis ranges and ticks come from the data ([`Axis::linear`], [`Axis::log`]): a linear axis
//!   whose few largest values lie far above the bulk stops just above its 99th percentile and
//!   draws the rest at the top edge (a [`Axis::note`] under the title says so); a log axis
//!   labels 1-2-5 steps in every decade the data covers.
//! - Tick labels read like a paper's: `500`, not `500.0`; `0.3`, never `0.30000000000000004`;
//!   `20k`, `1.5M` above ten thousand ([`format_ticks`]).
//! - The legend goes where there is no data ([`place_legend`]): the first empty corner of the
//!   plot area, else a row above it.
//! - Series differ in colour and in marker shape ([`PALETTE`], [`Mark`]), so a series drawn
//!   under another still shows.

mod axis;
mod frame;
mod legend;
mod marks;
#[cfg(test)]
mod tests;
mod ticks;

pub use axis::{Axis, Fit, Zero};
pub use frame::Frame;
pub use legend::{place_legend, Entry, Mark, Occupied, Place};
pub use marks::{draw_marks, Chart};
pub use ticks::{format_ticks, format_value, quantile};

pub(crate) use legend::*;
pub(crate) use marks::*;
pub(crate) use ticks::*;

use plotters::prelude::*;

/// The error of a drawing.
pub type DrawError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Series colours: dark enough to read on white, told apart in print (Tableau 10).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The colour of series `i`, the same in every chart.
pub fn color(i: usize) -> RGBAColor {
    PALETTE[i % PALETTE.len()].to_rgba()
}

/// The text of every `<text>` element of an SVG file these plots drew (for tests).
pub fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}
