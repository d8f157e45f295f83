//! hpcscope-report: self-contained SVG charts and HTML reports built from the results of
//! `hpcscope-core`.
//!
//! Every chart is a standalone SVG string: no script, no external resource, no web font, no
//! `id` (so several charts can be inlined in one page), presentation attributes only, and
//! stable number formatting (the same input gives the same bytes). Each chart has a title,
//! axis labels with units, a legend and a caption that says how to read it; colours come
//! from the Okabe-Ito colour-blind safe palette.
//!
//! * [`roofline_svg`]: an application on a machine's cache-aware rooflines;
//! * [`projection_svg`]: source and target rooflines with the projected points and interval;
//! * [`explore_svg`]: projected intervals across a design-space sweep;
//! * [`validation_svg`]: projected intervals against measurements;
//! * [`line_chart_svg`]: a generic line chart (bandwidth sweeps, history);
//! * [`bar_chart_svg`]: stacked bars per category (time per MPI rank: the imbalance chart);
//! * [`html_page`], [`html_table`]: a report page holding them;
//! * [`table`]: the text, CSV, Markdown and JSON forms of every command's result;
//! * [`fmt`]: number formatting, one home for every table and chart.
//!
//! ```
//! use hpcscope_report::{ChartOptions, Section, Series, html_page, line_chart_svg};
//!
//! let svg = line_chart_svg(
//!     &[Series { name: "triad".into(), points: vec![(1e3, 36.0), (1e6, 29.0), (1e9, 25.0)], dashed: false }],
//!     &ChartOptions {
//!         title: "Bandwidth vs working-set size".into(),
//!         x_label: "Working set (bytes)".into(),
//!         y_label: "Bandwidth (GB/s)".into(),
//!         log_x: true,
//!         ..ChartOptions::default()
//!     },
//! );
//! assert!(svg.starts_with("<svg"));
//! let page = html_page("Machine", &[Section { title: "Bandwidth".into(), svgs: vec![svg], ..Section::default() }]);
//! assert!(!page.contains("<script"));
//! ```
#![deny(missing_docs)]

pub mod axis;
mod bars;
pub mod chart;
pub mod fmt;
mod html;
mod line;
pub mod roofs;
pub mod svg;
pub mod table;
pub mod text;

pub use bars::{BarOptions, BarSeries, bar_chart_svg};
pub use html::{Section, html_page, html_table};
pub use line::{ChartOptions, Series, line_chart_svg};
pub use svg::escape;
pub use table::{Format, Table, render};
