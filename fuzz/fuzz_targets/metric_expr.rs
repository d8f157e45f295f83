//! The metric expression language: never a panic or a stack overflow; an expression that
//! parses evaluates to a number or an error, and parses again from its own text.
#![no_main]
use std::collections::HashMap;

use hpcscope_counters::expr::{Env, EvalError, Expr};
use libfuzzer_sys::fuzz_target;

struct Fixed(HashMap<String, f64>);

impl Env for Fixed {
    fn ident(&mut self, name: &str, _column: usize) -> Result<f64, EvalError> {
        Ok(*self.0.entry(name.to_string()).or_insert(2.0))
    }
    fn constant(&mut self, _name: &str, _column: usize) -> Result<f64, EvalError> {
        Ok(64.0)
    }
    fn has(&mut self, name: &str) -> bool {
        name.len() % 2 == 0
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(e) = Expr::parse(text) {
        let again = Expr::parse(e.source()).expect("an expression parses from its own source");
        assert_eq!(e.identifiers(), again.identifiers());
        let _ = e.eval(&mut Fixed(HashMap::new()));
    }
});
