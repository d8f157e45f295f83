//! Prints the classified loops of `kernel_<name>` functions: `kernel_dump BINARY FUNCTION...`.

use hpcscope_models::classes::ClassTable;
use hpcscope_models::kernel::{Selector, binary_isa, extract};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bin = std::path::Path::new(&args[0]);
    let table = ClassTable::builtin(binary_isa(bin)?)?;
    for f in &args[1..] {
        let r = extract(bin, &Selector::Function(f.clone()), &table)?;
        for l in &r.loops {
            println!(
                "{f} {:#x}..{:#x} inner={} n={} flops={} bits={} sve={} cp={:.2} {:?} other={:?}",
                l.start,
                l.end,
                l.innermost,
                l.instructions,
                l.flops_per_iter,
                l.vector_bits,
                l.scalable,
                l.critical_path_cycles,
                l.counts,
                l.other
            );
        }
    }
    Ok(())
}
