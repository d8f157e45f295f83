//! What the results of this crate look like: charts and tables of machines, rooflines,
//! projections and sweeps, built with the generic pieces of `hpcscope-report`.

pub mod explore;
pub mod machine;
pub mod project;
pub mod roofline;

pub use explore::{
    SpeedupRow, ValidationRow, explore_svg, points_table, ridge_table, speedup_svg, validation_svg,
};
pub use roofline::{projection_svg, roofline_svg};
