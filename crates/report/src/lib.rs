//! hpcscope-report: the presentation kit of hpcscope, with no domain type: self-contained
//! SVG charts, HTML pages, tables and number formatting. The crates that own the data build
//! their views with it (`hpcscope_core::view` draws rooflines, projections and sweeps).
//!
//! Every chart is a standalone SVG string: no script, no external resource, no web font, no
//! `id` (so several charts can be inlined in one page), presentation attributes only, and
//! stable number formatting (the same input gives the same bytes). Each chart has a title,
//! axis labels with units, a legend and a caption that says how to read it; colours come
//! from the Okabe-Ito colour-blind safe palette.
//!
//! * [`line_chart_svg`]: a generic line chart (bandwidth sweeps, history);
//! * [`bar_chart_svg`]: stacked bars per category (time per MPI rank: the imbalance chart);
//! * [`html_page`], [`html_table`]: a report page holding them;
//! * [`table`]: the text, CSV, Markdown and JSON forms of every command's result;
//! * [`fmt`]: number formatting, one home for every table and chart;
//! * [`text`]: control characters of text read from files escaped for a terminal;
//! * [`axis`], [`chart`], [`roofs`], [`svg`]: the pieces charts are drawn with (scales and
//!   ticks, frame, legend and caption, roof lines and their labels, the SVG writer).
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
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]

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
