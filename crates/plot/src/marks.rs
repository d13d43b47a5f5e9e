//! Series markers: shapes told apart in print, drawn on the chart.

use crate::*;
use plotters::prelude::*;

/// The outline of marker shape `shape` (filled circle, filled triangle, open circle, cross,
/// open square, and again) of radius about `r` pixels, as pixel offsets, and whether it is
/// filled. Later series' open shapes leave the marks of earlier ones under them visible.
pub(crate) fn marker_shape(shape: usize, r: i32) -> (Vec<(i32, i32)>, bool) {
    let ring = |r: f64| -> Vec<(i32, i32)> {
        (0..=12)
            .map(|i| {
                let a = f64::from(i) * std::f64::consts::PI / 6.0;
                ((r * a.cos()).round() as i32, (r * a.sin()).round() as i32)
            })
            .collect()
    };
    let (rf, q) = (f64::from(r), r + 1);
    match shape % 5 {
        0 => (ring(rf), true),
        1 => (
            vec![(0, -q - 1), (q, q - 1), (-q, q - 1), (0, -q - 1)],
            true,
        ),
        2 => (ring(rf + 1.5), false),
        3 => (vec![(-q, -q), (q, q), (0, 0), (-q, q), (q, -q)], false),
        _ => (vec![(-q, -q), (q, -q), (q, q), (-q, q), (-q, -q)], false),
    }
}

/// A marker at `at` (see [`marker_shape`]): one element type for every shape, in a chart's
/// coordinates or in pixels.
pub(crate) type Marker<C, DB> =
    plotters::element::ComposedElement<C, DB, Polygon<(i32, i32)>, PathElement<(i32, i32)>>;

pub(crate) fn marker<C, DB: DrawingBackend>(
    shape: usize,
    at: C,
    r: i32,
    c: RGBAColor,
) -> Marker<C, DB> {
    let (outline, filled) = marker_shape(shape, r);
    let fill = if filled { c } else { c.mix(0.0) };
    EmptyElement::at(at)
        + Polygon::new(outline.clone(), fill.filled())
        + PathElement::new(outline, c.stroke_width(1))
}

/// The chart type every tegula plot draws on.
pub type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<Axis, Axis>>;

/// Draws markers of shape `shape` (as in [`Mark::Dots`]) of radius `r` pixels at `points`.
pub fn draw_marks<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    points: &[(f64, f64)],
    shape: usize,
    r: i32,
    c: RGBAColor,
) -> Result<(), DrawError>
where
    DB::ErrorType: 'static,
{
    chart.draw_series(points.iter().map(|&p| marker(shape, p, r, c)))?;
    Ok(())
}
