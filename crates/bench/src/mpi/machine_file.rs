//! The machine file's `[[network]]` link: written alone (`bench mpi --format toml`) or
//! added to a machine file in place (`bench mpi --update`), keeping everything else in the
//! file, comments and layout included.

use std::path::Path;

use hpcscope_core::Machine;
use hpcscope_core::machine::NetworkLink;

use crate::error::BenchError;

/// Reads and validates the machine file of `--update` before anything is measured, so a bad
/// file fails in a second: its text and the machine.
pub fn read_machine(p: &Path) -> Result<(String, Machine), BenchError> {
    let src = hpcscope_core::load::read_text_bytes(p)
        .map_err(|e| {
            let fix = match e {
                hpcscope_core::load::ReadError::Io(_) => {
                    "give an existing machine file; write one first with `hpcscope bench --quick -o FILE` or copy one (`hpcscope machine show ID --format toml`)"
                }
                _ => "give a machine file (TOML)",
            };
            BenchError::bad_input("--update", format!("cannot read '{}': {e}", p.display()), fix)
        })
        .and_then(|b| {
            hpcscope_core::load::text(b).map_err(|m| {
                BenchError::bad_input(
                    "--update",
                    format!("'{}': {m}", p.display()),
                    "give a machine file (TOML)",
                )
            })
        })?;
    let m = Machine::from_toml_str(&src, &p.display().to_string()).map_err(|e| {
        BenchError::bad_input(
            "--update",
            e.to_string(),
            "fix the machine file first (`hpcscope machine validate FILE`)",
        )
    })?;
    Ok((src, m))
}

/// The link as a `[[network]]` table (the fit inline, so the table stays one block).
pub fn link_table(link: &NetworkLink) -> Result<toml_edit::Table, BenchError> {
    #[derive(serde::Serialize)]
    struct Wrap<'a> {
        network: [&'a NetworkLink; 1],
    }
    let frag = toml::to_string(&Wrap { network: [link] })
        .map_err(|e| BenchError::Internal(format!("TOML: {e}")))?;
    let doc: toml_edit::DocumentMut = frag
        .parse()
        .map_err(|e| BenchError::Internal(format!("TOML: {e}")))?;
    let mut t = doc["network"]
        .as_array_of_tables()
        .and_then(|a| a.get(0))
        .cloned()
        .ok_or_else(|| BenchError::Internal("serialized link has no [[network]]".into()))?;
    if let Some(fit) = t.get("fit").and_then(|f| f.as_table()).cloned() {
        let mut inline = fit.into_inline_table();
        inline.fmt();
        t.insert(
            "fit",
            toml_edit::Item::Value(toml_edit::Value::InlineTable(inline)),
        );
    }
    t.set_position(None);
    t.decor_mut().clear();
    Ok(t)
}

/// The `--format toml` output: the link alone, with a header saying what to do with it.
pub fn link_toml(link: &NetworkLink) -> Result<String, BenchError> {
    let mut doc = toml_edit::DocumentMut::new();
    let mut aot = toml_edit::ArrayOfTables::new();
    aot.push(link_table(link)?);
    doc.insert("network", toml_edit::Item::ArrayOfTables(aot));
    Ok(format!(
        "# A [[network]] link for a machine file (docs/machine-format.md), from `hpcscope bench mpi`.\n# Add it with `hpcscope bench mpi --update MACHINE.toml`, or append this text to the file.\n{doc}"
    ))
}

/// `src` (a machine file) with `link` added, or replacing the link of the same name;
/// everything else, comments and layout included, is kept. The result is validated.
pub fn upsert_network(src: &str, link: &NetworkLink, origin: &str) -> Result<String, BenchError> {
    let mut doc: toml_edit::DocumentMut = src.parse().map_err(|e| {
        BenchError::bad_input(
            "--update",
            format!("{origin}: {e}"),
            "fix the TOML syntax first",
        )
    })?;
    let mut table = link_table(link)?;
    // After every table already there.
    table.set_position(Some(isize::MAX / 2));
    match doc.get_mut("network") {
        None => {
            let mut aot = toml_edit::ArrayOfTables::new();
            aot.push(table);
            doc.insert("network", toml_edit::Item::ArrayOfTables(aot));
        }
        Some(item) => {
            let aot = item.as_array_of_tables_mut().ok_or_else(|| {
                BenchError::bad_input(
                    "--update",
                    format!("{origin}: `network` is not an array of [[network]] tables"),
                    "write each link as a [[network]] table",
                )
            })?;
            let same = aot
                .iter()
                .position(|t| t.get("name").and_then(|n| n.as_str()) == Some(link.name.as_str()));
            match same {
                Some(i) => {
                    let old = aot.get_mut(i).expect("index from position");
                    table.set_position(old.position());
                    *table.decor_mut() = old.decor().clone();
                    *old = table;
                }
                None => aot.push(table),
            }
        }
    }
    let out = doc.to_string();
    Machine::from_toml_str(&out, origin).map_err(|e| {
        BenchError::Internal(format!("the updated machine file does not validate: {e}"))
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpcscope_core::Classify;
    use hpcscope_core::machine::Placement;

    fn link(name: &str, lat: f64) -> NetworkLink {
        NetworkLink {
            name: name.into(),
            placement: Placement::IntraNode,
            latency_us: lat,
            bandwidth_gbs: 5.0,
            n_half_bytes: Some(1500.0),
            benchmark: Some("pingpong".into()),
            ranks: Some(2),
            launcher: Some("mpirun -np 2".into()),
            mpi_library: Some("Open MPI v4.1.4".into()),
            fit: Some(hpcscope_core::machine::NetworkFit {
                model: "hockney".into(),
                weights: "relative".into(),
                sizes_bytes: vec![0, 1, 2],
                r2: Some(0.99),
                max_rel_error: Some(0.1),
            }),
            provenance: "test".into(),
        }
    }

    /// --update keeps every byte of the file it does not own (comments included), adds the
    /// link, and replaces it in place on the next run.
    #[test]
    fn update_keeps_the_rest_of_the_file() {
        let src = format!(
            "# my node, measured by hand\n{}\n# trailing remark\n",
            hpcscope_core::library::builtin("thunderx2")
                .unwrap()
                .to_toml_string()
        );
        let once = upsert_network(&src, &link("mpi-intra-node", 0.3), "m.toml").unwrap();
        assert!(once.contains("# my node, measured by hand"));
        assert!(once.contains("# trailing remark"));
        let m = Machine::from_toml_str(&once, "m.toml").unwrap();
        let before = Machine::from_toml_str(&src, "m.toml").unwrap();
        assert_eq!(m.levels, before.levels);
        assert_eq!(m.peaks, before.peaks);
        assert_eq!(m.network, vec![link("mpi-intra-node", 0.3)]);
        // Everything before the new table is unchanged.
        let cut = once.find("[[network]]").unwrap();
        assert!(src.starts_with(once[..cut].trim_end()), "{once}");
        // Again: replaced, not duplicated; a second name is added.
        let twice = upsert_network(&once, &link("mpi-intra-node", 0.25), "m.toml").unwrap();
        let thrice = upsert_network(&twice, &link("mpi-inter-node", 1.5), "m.toml").unwrap();
        let m = Machine::from_toml_str(&thrice, "m.toml").unwrap();
        assert_eq!(m.network.len(), 2);
        assert_eq!(m.network_link("mpi-intra-node").unwrap().latency_us, 0.25);
        assert_eq!(thrice.matches("[[network]]").count(), 2);
        // The toml output is the link alone and appends to a machine file as is.
        let frag = link_toml(&link("mpi-intra-node", 0.3)).unwrap();
        let appended = format!("{src}\n{frag}");
        let m = Machine::from_toml_str(&appended, "m.toml").unwrap();
        assert_eq!(m.network.len(), 1);
    }

    #[test]
    fn update_refuses_a_broken_file() {
        let e = upsert_network("format_version = [", &link("x", 1.0), "m.toml").unwrap_err();
        assert_eq!(e.kind().exit_code(), 2);
        let e = upsert_network("network = 3\n", &link("x", 1.0), "m.toml").unwrap_err();
        assert!(e.to_string().contains("[[network]]"), "{e}");
    }
}
