//! The loop-carried dependency chain the engines count for one loop body, for
//! `bench/mix/chains_mca.sh` (beside llvm-mca's simulation of the same body).
//!
//!     loop_chain HEAD BRANCH HEXBYTES
//!
//! HEAD and BRANCH: the addresses (hex) of the loop's first instruction and of its backward
//! branch; HEXBYTES: the code from HEAD to the branch's end. Prints `body N`, `other N` and
//! one `fp OP ELEMENT_BITS WIDTH COUNT` line per FP step (WIDTH `scalar` or bits), or
//! `none` when the body does not decode or carries no chain.

use hpcscope_x86_lanes::chain::{decode_body, loop_chain};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [head, branch, hex] = args.as_slice() else {
        eprintln!("usage: loop_chain HEAD BRANCH HEXBYTES (addresses in hex)");
        std::process::exit(2);
    };
    let addr = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16);
    let (Ok(head), Ok(branch)) = (addr(head), addr(branch)) else {
        eprintln!("loop_chain: HEAD and BRANCH are hex addresses");
        std::process::exit(2);
    };
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|b| u8::from_str_radix(b, 16).ok())
        })
        .collect();
    let Some(bytes) = bytes else {
        eprintln!("loop_chain: HEXBYTES is not an even number of hex digits");
        std::process::exit(2);
    };
    let Some(body) = decode_body(&bytes, head, branch) else {
        println!("none");
        return;
    };
    println!("body {}", body.len());
    match loop_chain(&body) {
        Some(c) => {
            println!("other {}", c.other);
            for (s, n) in &c.fp {
                let w = s
                    .vector_bits
                    .map_or("scalar".to_string(), |b| b.to_string());
                println!("fp {} {} {w} {n}", s.op.name(), s.element_bits);
            }
        }
        None => println!("none"),
    }
}
