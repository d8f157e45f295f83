//! `model kernel`: a function's innermost loops counted by class, the main loop chosen
//! statically, by CPU-clock sampling (`--hottest`) or by measured instructions per iteration
//! (the thesis's criterion, section 5.3), with the spills of the difference model.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use hpcscope_models::classes::ClassTable;
use hpcscope_models::kernel::{Selector, extract};
use hpcscope_models::output::KernelOutput;
use hpcscope_models::view::{self, KernelPicks, Report, Sampled};

use super::read;

/// `model kernel`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KernelOptions {
    /// ELF binary (x86-64, or aarch64 with NEON/SVE).
    pub binary: PathBuf,
    /// Function symbol.
    pub function: Option<String>,
    /// Address range `START:END` (hex with 0x, or decimal) instead of a function.
    pub range: Option<String>,
    /// Run the binary natively with these arguments under CPU-clock sampling at this
    /// frequency (Hz), and analyse the hottest function's hottest innermost loop.
    pub hottest: Option<(Vec<String>, u64)>,
    /// Class table TOML (default: the built-in table of the binary's instruction set).
    pub classes: Option<PathBuf>,
    /// Show every loop, not only the innermost ones.
    pub all: bool,
    /// Print the disassembly of each loop.
    pub listing: bool,
    /// Measured instructions per loop iteration: choose the innermost loop whose
    /// instruction count is closest.
    pub ins_per_iter: Option<f64>,
    /// Minimum loads per iteration the loop's data needs (beyond it: spills).
    pub min_loads: Option<f64>,
    /// Minimum stores per iteration.
    pub min_stores: Option<f64>,
}

/// An address of `--range`: hex with 0x, or decimal.
fn address(s: &str) -> Result<u64> {
    let s = s.trim();
    Ok(match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16)?,
        None => s.parse()?,
    })
}

/// Runs `model kernel`.
pub fn kernel(o: &KernelOptions) -> Result<Report<KernelOutput>> {
    let binary = &o.binary;
    let table = match &o.classes {
        Some(p) => ClassTable::from_toml(&read(p)?, &p.display().to_string())?,
        None => ClassTable::builtin(hpcscope_models::kernel::binary_isa(binary)?)?,
    };
    let hot = match &o.hottest {
        Some((args, hz)) => {
            let h = hpcscope_mix::sample::hottest(binary, args, *hz)?;
            if !h.success {
                eprintln!(
                    "warning: the program did not exit with status 0; its samples are used as they are"
                );
            }
            Some(h)
        }
        None => None,
    };
    let sel = match (&hot, &o.function, &o.range) {
        (Some(h), ..) => Selector::Function(h.functions[0].0.clone()),
        (None, Some(f), _) => Selector::Function(f.clone()),
        (None, None, Some(r)) => {
            let (a, b) = r.split_once(':').context("--range must be START:END")?;
            Selector::Range(
                address(a).context("bad START in --range")?,
                address(b).context("bad END in --range")?,
            )
        }
        (None, None, None) => bail!("give --function NAME or --range START:END"),
    };
    let rep = extract(binary, &sel, &table)?;
    let samples_in = |a: u64, b: u64| -> u64 {
        hot.as_ref()
            .map_or(0, |h| h.ips.range(a..b).map(|(_, n)| n).sum())
    };
    // The hottest innermost loop (start, end, samples), if any sample fell in one.
    let hottest_loop = hot.as_ref().and_then(|_| {
        rep.innermost()
            .map(|l| (l.start, l.end, samples_in(l.start, l.end)))
            .max_by_key(|x| x.2)
            .filter(|x| x.2 > 0)
    });
    let main = match hottest_loop {
        Some((start, ..)) => Some(start),
        None => rep.main_loop().map(|l| l.start),
    };
    let h_main = main;
    // The thesis's criterion: the loop whose instructions match the measured count.
    let by_ins = match o.ins_per_iter {
        Some(n) => Some(rep.select_by_instructions(n)?),
        None => None,
    };
    let main = by_ins.as_ref().map(|b| b.start).or(main);
    let spill = match (o.min_loads, o.min_stores) {
        (None, None) => None,
        (l, s) => {
            let lp = rep
                .loops
                .iter()
                .find(|l| Some(l.start) == main)
                .context("no main loop to count spills in")?;
            let sp =
                hpcscope_models::kernel::spills(&lp.counts, l.unwrap_or(0.0), s.unwrap_or(0.0))?;
            Some((lp.start, sp))
        }
    };
    let text = view::kernel(
        &rep,
        &KernelPicks {
            sampled: hot.as_ref().map(|h| Sampled {
                total: h.total,
                functions: &h.functions,
                hottest_loop,
            }),
            hottest_main: h_main,
            by_instructions: by_ins.as_ref(),
            main,
            spills: spill.as_ref().map(|(a, sp)| (*a, sp)),
            all: o.all,
            listing: o.listing,
        },
    );
    Ok(match hot {
        // JSON keeps the sampling evidence beside the kernel.
        Some(h) => Report::sorted(
            KernelOutput::Hottest {
                by_instructions: by_ins,
                functions: h.functions,
                hottest_loop: h_main,
                kernel: rep,
                main_loop: main,
                samples: h.total,
                spills: spill.map(|x| x.1),
            },
            text,
        ),
        None if by_ins.is_some() || spill.is_some() => Report::sorted(
            KernelOutput::Picked {
                by_instructions: by_ins,
                kernel: rep,
                main_loop: main,
                spills: spill.map(|x| x.1),
            },
            text,
        ),
        None => Report::plain(KernelOutput::Plain(rep), text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_addresses_are_hex_or_decimal() {
        assert_eq!(address(" 0x10 ").unwrap(), 16);
        assert_eq!(address("16").unwrap(), 16);
        assert!(address("0xzz").is_err());
        assert!(address("x").is_err());
    }

    #[test]
    fn a_kernel_needs_a_function_or_a_range() {
        let e = kernel(&KernelOptions {
            binary: std::env::current_exe().unwrap(),
            ..KernelOptions::default()
        })
        .unwrap_err()
        .to_string();
        assert_eq!(e, "give --function NAME or --range START:END");
        let e = kernel(&KernelOptions {
            binary: std::env::current_exe().unwrap(),
            range: Some("10".into()),
            ..KernelOptions::default()
        })
        .unwrap_err()
        .to_string();
        assert_eq!(e, "--range must be START:END");
    }
}
