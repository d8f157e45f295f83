//! One module per subcommand: its arguments and its `run`.

pub mod analyze;
pub mod bench;
pub mod counters;
pub mod demo;
pub mod doctor;
pub mod explore;
pub mod history;
pub mod hosts;
pub mod machine;
pub mod merge;
pub mod mix;
pub mod model;
pub mod profile;
pub mod project;
pub mod record;
pub mod regress;
pub mod roofline;
pub mod schema;
pub mod trace;
pub mod validate;
