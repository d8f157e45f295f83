//! Generating the JSON Schemas of `hpcscope schema` (draft 2020-12, by schemars from the
//! types themselves), shared by the crates that register schemas (`analysis`, `job`).

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};

/// The schema of `T` titled `hpcscope NAME` with description `about`: as `T` is read
/// (`output` false: fields with a default are optional) or as it is written (`output`
/// true).
pub fn make<T: JsonSchema>(name: &str, about: &str, output: bool) -> Schema {
    let settings = SchemaSettings::draft2020_12();
    let settings = if output {
        settings.for_serialize()
    } else {
        settings
    };
    let mut s = settings.into_generator().into_root_schema_for::<T>();
    s.insert("title".into(), format!("hpcscope {name}").into());
    s.insert("description".into(), about.into());
    s
}

/// `schema` as the pretty-printed JSON `hpcscope schema` prints and docs/schemas keeps.
pub fn text(schema: &Schema) -> String {
    serde_json::to_string_pretty(schema).expect("a schema serializes") + "\n"
}

/// The name of the file docs/schemas keeps schema `name` in.
pub fn file_name(name: &str) -> String {
    format!("{name}.schema.json")
}
