//! The CSV files of `hpcscope model`: the first byte chooses the reader (the generic table,
//! scaling runs, POP runs, time decomposition, port-model variants); never a panic; a small
//! set of scaling runs that reads is fitted, and every fitted number is finite.
#![no_main]
use hpcscope_models::laws::{Law, Mode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match which % 5 {
        0 => {
            if let Ok(c) = hpcscope_models::csv::Csv::parse(text, "fuzz.csv") {
                for r in 0..c.rows.len().min(64) {
                    for k in 0..c.headers.len().min(16) {
                        let _ = c.number(r, k);
                    }
                }
            }
        }
        1 => {
            if let Ok(runs) = hpcscope_models::laws::runs_from_csv(text, "fuzz.csv")
                && runs.len() <= 12
                && let Ok(sel) = hpcscope_models::laws::select(&runs, &Law::ALL, Mode::Strong)
            {
                for f in &sel.fits {
                    for (k, v) in &f.params {
                        assert!(v.is_finite(), "{k} = {v}");
                    }
                }
            }
        }
        2 => {
            let _ = hpcscope_models::pop::pop_run_from_csv(text, "fuzz.csv");
        }
        3 => {
            let _ = hpcscope_models::pop::decomposition_from_csv(text, "fuzz.csv");
        }
        _ => {
            let model = hpcscope_models::ports::PortModel::builtin("skylake").expect("port model");
            let _ = hpcscope_models::fit::rows_from_csv(text, "fuzz.csv", &model);
        }
    }
});
