//! The frame of a figure: size, title, axis titles, the note under the title, the legend.

use crate::*;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The frame of a figure: size, title and axis titles.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Size in pixels.
    pub size: (u32, u32),
    /// Title.
    pub title: String,
    /// Title font size in pixels.
    pub title_size: u32,
    /// x axis title, with its unit.
    pub x_label: String,
    /// y axis title, with its unit.
    pub y_label: String,
    /// Width of the y tick label area in pixels.
    pub y_label_area: u32,
    /// Vertical grid lines (off for bar charts).
    pub x_grid: bool,
}

pub(crate) const MARGIN: u32 = 14;
pub(crate) const X_LABEL_AREA: u32 = 48;
pub(crate) const NOTE_FONT: u32 = 13;

impl Frame {
    /// A frame of `size` pixels.
    pub fn new(size: (u32, u32), title: &str, x_label: &str, y_label: &str) -> Self {
        Frame {
            size,
            title: title.to_string(),
            title_size: 20,
            x_label: x_label.to_string(),
            y_label: y_label.to_string(),
            y_label_area: 80,
            x_grid: true,
        }
    }

    /// The plot area's size in pixels, without a legend or note above it.
    fn plot_area(&self) -> (u32, u32) {
        let top = self.title_size + 12;
        (
            self.size.0.saturating_sub(2 * MARGIN + self.y_label_area),
            self.size.1.saturating_sub(2 * MARGIN + X_LABEL_AREA + top),
        )
    }

    /// Draws the figure on `root`: title, a note on clipped values, the axes `x` and `y`,
    /// what `body` draws, and the legend of `entries` where `occupied` shows no data.
    pub fn draw<DB, F>(
        &self,
        root: &DrawingArea<DB, Shift>,
        x: &Axis,
        y: &Axis,
        entries: &[Entry],
        occupied: &Occupied,
        body: F,
    ) -> Result<(), DrawError>
    where
        DB: DrawingBackend,
        DB::ErrorType: 'static,
        F: FnOnce(&mut Chart<'_, DB>) -> Result<(), DrawError>,
    {
        root.fill(&WHITE)?;
        let mut area = root.titled(&self.title, ("sans-serif", self.title_size))?;
        let notes: Vec<String> = [x.note(), y.note()].into_iter().flatten().collect();
        for n in &notes {
            let style = ("sans-serif", NOTE_FONT)
                .into_font()
                .style(FontStyle::Italic)
                .color(&RGBColor(90, 90, 90));
            area = area.titled(n, style)?;
        }
        let (pw, ph) = self.plot_area();
        let ph = ph.saturating_sub(notes.len() as u32 * (NOTE_FONT + 8));
        let place = if entries.is_empty() {
            Place::Above
        } else {
            place_legend(entries, occupied, (pw, ph))
        };
        if place == Place::Above && !entries.is_empty() {
            let (x0, _) = area.get_pixel_range();
            let width = pw as i32;
            let rows = legend_rows(entries, width);
            let h = ROW * rows.len() as i32 + 6;
            let (top, rest) = area.split_vertically(h);
            let (xr, yr) = top.get_pixel_range();
            let left_of_plot = x0.start + (MARGIN + self.y_label_area) as i32;
            for (i, row) in rows.iter().enumerate() {
                let used: i32 = row.iter().map(|e| entry_width(e)).sum();
                let mut px = left_of_plot + (width - used).max(0) / 2;
                let py = yr.start + ROW * i as i32 + ROW / 2 + 2;
                for e in row {
                    legend_entry(root, e, (px.min(xr.end), py))?;
                    px += entry_width(e);
                }
            }
            area = rest;
        }
        let mut chart = ChartBuilder::on(&area)
            .margin(MARGIN)
            .margin_right(2 * MARGIN)
            .x_label_area_size(X_LABEL_AREA)
            .y_label_area_size(self.y_label_area)
            .build_cartesian_2d(x.clone(), y.clone())?;
        let x_fmt = |v: &f64| x.label(*v);
        let y_fmt = |v: &f64| y.label(*v);
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .axis_desc_style(("sans-serif", 15))
            .label_style(("sans-serif", 13))
            .bold_line_style(RGBColor(200, 200, 200).stroke_width(1))
            .light_line_style(RGBColor(236, 236, 236).stroke_width(1));
        if !self.x_grid {
            mesh.disable_x_mesh();
        }
        mesh.draw()?;
        body(&mut chart)?;
        if let Place::Inside { right, top } = place {
            let (xr, yr) = chart.plotting_area().get_pixel_range();
            let (bw, bh) = legend_box(entries);
            let x0 = if right {
                xr.end - INSET - bw
            } else {
                xr.start + INSET
            };
            let below_top = ((1.0 - top) * f64::from(yr.end - yr.start)).round() as i32;
            let y0 = (yr.start + below_top + INSET).min(yr.end - INSET - bh);
            root.draw(&Rectangle::new(
                [(x0, y0), (x0 + bw, y0 + bh)],
                WHITE.mix(0.9).filled(),
            ))?;
            root.draw(&Rectangle::new(
                [(x0, y0), (x0 + bw, y0 + bh)],
                RGBColor(120, 120, 120).stroke_width(1),
            ))?;
            for (i, e) in entries.iter().enumerate() {
                legend_entry(root, e, (x0 + 8, y0 + 4 + ROW * i as i32 + ROW / 2))?;
            }
        }
        Ok(())
    }
}

/// Draws one legend entry: its mark from pixel `(x, y)` on, then its text.
pub(crate) fn legend_entry<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    e: &Entry,
    (x, y): (i32, i32),
) -> Result<(), DrawError>
where
    DB::ErrorType: 'static,
{
    let c = e.color;
    match e.mark {
        Mark::Bar => {
            root.draw(&Rectangle::new(
                [(x + 2, y - 6), (x + 22, y + 6)],
                c.filled(),
            ))?;
        }
        Mark::Line(m) => {
            root.draw(&PathElement::new(
                vec![(x, y), (x + 24, y)],
                c.stroke_width(2),
            ))?;
            if let Some(m) = m {
                root.draw(&marker(m, (x + 12, y), 3, c))?;
            }
        }
        Mark::Dots(m) => root.draw(&marker(m, (x + 12, y), 3, c))?,
    }
    let style = ("sans-serif", LEGEND_FONT)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    root.draw(&Text::new(e.name.clone(), (x + 32, y), style))?;
    Ok(())
}
