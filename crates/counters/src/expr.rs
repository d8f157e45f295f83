//! Metric formula expressions: a small language shared by the shipped recipes and by the
//! metric expressions of Linux perf's `pmu-events` JSON files.
//!
//! Grammar (loosest binding first):
//!
//! ```text
//! expr   := or ("if" or "else" expr)?          conditional, Python style: A if C else B
//! or     := and ("||" and)*                     logical (extension)
//! and    := bor ("&&" bor)*                     logical (extension)
//! bor    := bxor ("|" bxor)*                    perf: true when either side is non-zero
//! bxor   := band ("^" band)*                    perf: true when exactly one side is non-zero
//! band   := eq ("&" eq)*                        perf: true when both sides are non-zero
//! eq     := cmp (("==" | "!=") cmp)*
//! cmp    := sum (("<" | ">" | "<=" | ">=") sum)*
//! sum    := prod (("+" | "-") prod)*
//! prod   := unary (("*" | "/" | "%") unary)*
//! unary  := ("-" | "+" | "!") unary | atom
//! atom   := number | identifier | "#"name | name "(" args ")" | "(" expr ")"
//! ```
//!
//! Identifiers are counter (event) names, other metrics' names or inputs such as `time`;
//! they may contain `. : @ ?` and backslash escapes (`topdown\-fe\-bound`, `cpu@x\,cmask\=1@`),
//! as perf's `expr.l` allows. `#name` is a constant (`#line_size`, `#smt_on`). Functions:
//! `min`, `max` (one or more arguments), `d_ratio(a, b)` (a / b, 0 when b is 0), `abs`,
//! `sqrt`, `has_event(e)`, `source_count(e)` and `strcmp_cpuid_str(s)` (always 0 here).
//!
//! Errors name the column (1-based, in characters) and show the expression with a caret.

use std::fmt;

/// A byte range of the source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// A syntax error in an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The expression text.
    pub source: String,
    /// Column of the error, 1-based, in characters.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at column {}\n    {}\n    {}^",
            self.message,
            self.column,
            self.source,
            " ".repeat(self.column.saturating_sub(1))
        )
    }
}

impl std::error::Error for ParseError {}

/// Why an expression has no value.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    /// An identifier that is neither a counter, an input nor a metric.
    Unknown {
        /// The identifier.
        name: String,
        /// Column in the expression where it appears.
        column: usize,
    },
    /// A constant (`#name`) nobody defined.
    UnknownConstant {
        /// The constant, without `#`.
        name: String,
        /// Column in the expression.
        column: usize,
    },
    /// A counter or input that was not measured: the value is not available (NA).
    Missing {
        /// The counter or input.
        name: String,
        /// Why (`<not supported>`, not in the import, no PMU, ...).
        reason: String,
    },
    /// A division whose divisor evaluated to 0.
    DivisionByZero {
        /// The divisor's text.
        divisor: String,
        /// Column of the `/` or `%`.
        column: usize,
    },
    /// Metrics that refer to each other in a circle.
    Cycle {
        /// The metrics in the circle, the first repeated at the end.
        path: Vec<String>,
    },
    /// Metrics that refer to metrics more than [`MAX_REFERENCES`] deep.
    TooDeep {
        /// The chain of metrics, outermost first.
        path: Vec<String>,
    },
}

/// How deep metrics may refer to other metrics (each reference is a recursive evaluation).
pub const MAX_REFERENCES: usize = 32;

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::Unknown { name, column } => {
                write!(f, "unknown identifier '{name}' at column {column}")
            }
            EvalError::UnknownConstant { name, column } => {
                write!(f, "unknown constant '#{name}' at column {column}")
            }
            EvalError::Missing { name, reason } => write!(f, "'{name}' not available: {reason}"),
            EvalError::DivisionByZero { divisor, column } => {
                write!(f, "division by zero at column {column}: '{divisor}' is 0")
            }
            EvalError::Cycle { path } => {
                write!(
                    f,
                    "metrics refer to each other in a cycle: {}",
                    path.join(" -> ")
                )
            }
            EvalError::TooDeep { path } => {
                write!(
                    f,
                    "metrics refer to metrics more than {MAX_REFERENCES} deep: {} -> ...",
                    path.iter()
                        .take(5)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" -> ")
                )
            }
        }
    }
}

impl std::error::Error for EvalError {}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
    /// `<`
    Lt,
    /// `>`
    Gt,
    /// `<=`
    Le,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `&` and `&&`
    And,
    /// `|` and `||`
    Or,
    /// `^`
    Xor,
}

/// Built-in functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// Smallest argument.
    Min,
    /// Largest argument.
    Max,
    /// Safe ratio: 0 when the divisor is 0.
    DRatio,
    /// Absolute value.
    Abs,
    /// Square root.
    Sqrt,
    /// 1 when the event was measured, else 0.
    HasEvent,
    /// Number of sources of an event (1 when measured, else 0).
    SourceCount,
    /// CPUID string comparison (always 0: no CPUID matching here).
    StrcmpCpuid,
}

const FUNCS: &[(&str, Func)] = &[
    ("min", Func::Min),
    ("max", Func::Max),
    ("d_ratio", Func::DRatio),
    ("abs", Func::Abs),
    ("sqrt", Func::Sqrt),
    ("has_event", Func::HasEvent),
    ("source_count", Func::SourceCount),
    ("strcmp_cpuid_str", Func::StrcmpCpuid),
];

/// A node of the syntax tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A literal number.
    Num(f64, Span),
    /// A counter, input or metric name (escapes resolved, `@` kept).
    Ident(String, Span),
    /// A constant, without `#`.
    Const(String, Span),
    /// Negation.
    Neg(Box<Node>),
    /// Logical not.
    Not(Box<Node>),
    /// Binary operation; the span is the operator's.
    Bin(BinOp, Box<Node>, Box<Node>, Span),
    /// `then if cond else otherwise`.
    If(Box<Node>, Box<Node>, Box<Node>),
    /// Function call; the span is the function name's.
    Call(Func, Vec<Node>, Span),
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    src: String,
    root: Node,
}

/// Where an expression finds the values of its names.
pub trait Env {
    /// Value of an identifier (counter, input or metric).
    fn ident(&mut self, name: &str, column: usize) -> Result<f64, EvalError>;
    /// Value of a constant (`#name`, given without `#`).
    fn constant(&mut self, name: &str, column: usize) -> Result<f64, EvalError>;
    /// Whether an event was measured (`has_event`).
    fn has(&mut self, name: &str) -> bool;
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Ident(String),
    Hash(String),
    Op(&'static str),
    LParen,
    RParen,
    Comma,
    End,
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '@' || c == '\\'
}

fn is_ident_cont(c: char) -> bool {
    // `?` is perf's runtime parameter inside event names (`hv_24x7@PM_PB_CYC\,chip\=?@`).
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '@' | '\\' | '?')
}

impl<'a> Lexer<'a> {
    fn col(&self, byte: usize) -> usize {
        self.src[..byte.min(self.src.len())].chars().count() + 1
    }

    fn err(&self, byte: usize, msg: impl Into<String>) -> ParseError {
        ParseError {
            source: self.src.to_string(),
            column: self.col(byte),
            message: msg.into(),
        }
    }

    fn peek_char(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    /// Next token and its span.
    fn next(&mut self) -> Result<(Tok, Span), ParseError> {
        while let Some(c) = self.peek_char() {
            if c.is_whitespace() {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
        let start = self.pos;
        let Some(c) = self.peek_char() else {
            return Ok((Tok::End, Span { start, end: start }));
        };
        let rest = &self.src[self.pos..];
        let tok = if c.is_ascii_digit()
            || (c == '.' && rest[1..].starts_with(|d: char| d.is_ascii_digit()))
        {
            self.number()?
        } else if c == '#' {
            self.pos += 1;
            let name = self.ident_text();
            if name.is_empty() {
                return Err(self.err(start, "'#' must be followed by a constant name"));
            }
            Tok::Hash(name)
        } else if is_ident_start(c) {
            Tok::Ident(self.ident_text())
        } else {
            let two = rest.get(..2).unwrap_or("");
            let op2 = ["<=", ">=", "==", "!=", "&&", "||"]
                .into_iter()
                .find(|o| *o == two);
            if let Some(o) = op2 {
                self.pos += 2;
                Tok::Op(o)
            } else {
                self.pos += c.len_utf8();
                match c {
                    '(' => Tok::LParen,
                    ')' => Tok::RParen,
                    ',' => Tok::Comma,
                    '+' => Tok::Op("+"),
                    '-' => Tok::Op("-"),
                    '*' => Tok::Op("*"),
                    '/' => Tok::Op("/"),
                    '%' => Tok::Op("%"),
                    '<' => Tok::Op("<"),
                    '>' => Tok::Op(">"),
                    '&' => Tok::Op("&"),
                    '|' => Tok::Op("|"),
                    '^' => Tok::Op("^"),
                    '!' => Tok::Op("!"),
                    '?' => {
                        return Err(self.err(
                            start,
                            "unexpected '?': write conditionals as 'A if COND else B'",
                        ));
                    }
                    _ => return Err(self.err(start, format!("unexpected character '{c}'"))),
                }
            }
        };
        Ok((
            tok,
            Span {
                start,
                end: self.pos,
            },
        ))
    }

    fn number(&mut self) -> Result<Tok, ParseError> {
        let start = self.pos;
        let b = self.src.as_bytes();
        if self.src[start..].starts_with("0x") || self.src[start..].starts_with("0X") {
            let mut e = start + 2;
            while e < b.len() && b[e].is_ascii_hexdigit() {
                e += 1;
            }
            let v = u64::from_str_radix(&self.src[start + 2..e], 16)
                .map_err(|_| self.err(start, "malformed hexadecimal number"))?;
            self.pos = e;
            return Ok(Tok::Num(v as f64));
        }
        let mut e = start;
        while e < b.len() && (b[e].is_ascii_digit() || b[e] == b'.') {
            e += 1;
        }
        if e < b.len() && (b[e] == b'e' || b[e] == b'E') {
            let mut k = e + 1;
            if k < b.len() && (b[k] == b'-' || b[k] == b'+') {
                k += 1;
            }
            if k < b.len() && b[k].is_ascii_digit() {
                while k < b.len() && b[k].is_ascii_digit() {
                    k += 1;
                }
                e = k;
            }
        }
        let text = &self.src[start..e];
        let v: f64 = text
            .parse()
            .map_err(|_| self.err(start, format!("malformed number '{text}'")))?;
        self.pos = e;
        if let Some(c) = self.peek_char()
            && (c.is_ascii_alphabetic() || c == '_')
        {
            return Err(self.err(
                self.pos,
                format!("number '{text}' is followed by '{c}': an operator is missing"),
            ));
        }
        Ok(Tok::Num(v))
    }

    fn ident_text(&mut self) -> String {
        let mut out = String::new();
        while let Some(c) = self.peek_char() {
            if c == '\\' {
                self.pos += 1;
                if let Some(n) = self.peek_char() {
                    out.push(n);
                    self.pos += n.len_utf8();
                }
            } else if is_ident_cont(c) {
                out.push(c);
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
        out
    }
}

struct Parser<'a> {
    lex: Lexer<'a>,
    tok: Tok,
    span: Span,
    /// Nesting of `expr` calls now.
    nest: usize,
    /// Depth of the tree the last `expr` or `prefix` built.
    depth: usize,
}

/// The deepest expression tree accepted: evaluation and dropping walk the tree recursively,
/// so a hostile `1+1+...+1` must not reach the stack's end. Real metric formulas are a few
/// dozen operations deep at most.
pub const MAX_DEPTH: usize = 200;

/// The deepest nesting of parentheses, function calls, signs and conditionals accepted (the
/// parser recurses at each; Linux's pmu-events formulas nest 3 deep).
pub const MAX_NESTING: usize = 48;

fn binop(op: &str) -> Option<(BinOp, u8)> {
    Some(match op {
        "||" => (BinOp::Or, 2),
        "&&" => (BinOp::And, 3),
        "|" => (BinOp::Or, 4),
        "^" => (BinOp::Xor, 5),
        "&" => (BinOp::And, 6),
        "==" => (BinOp::Eq, 7),
        "!=" => (BinOp::Ne, 7),
        "<" => (BinOp::Lt, 8),
        ">" => (BinOp::Gt, 8),
        "<=" => (BinOp::Le, 8),
        ">=" => (BinOp::Ge, 8),
        "+" => (BinOp::Add, 9),
        "-" => (BinOp::Sub, 9),
        "*" => (BinOp::Mul, 10),
        "/" => (BinOp::Div, 10),
        "%" => (BinOp::Rem, 10),
        _ => return None,
    })
}

const UNARY_BP: u8 = 11;

impl<'a> Parser<'a> {
    fn bump(&mut self) -> Result<(), ParseError> {
        let (t, s) = self.lex.next()?;
        self.tok = t;
        self.span = s;
        Ok(())
    }

    fn err_here(&self, msg: impl Into<String>) -> ParseError {
        self.lex.err(self.span.start, msg)
    }

    fn describe(&self) -> String {
        match &self.tok {
            Tok::Num(_) | Tok::Ident(_) | Tok::Hash(_) | Tok::Op(_) => {
                format!("'{}'", &self.lex.src[self.span.start..self.span.end])
            }
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::Comma => "','".into(),
            Tok::End => "end of expression".into(),
        }
    }

    fn expr(&mut self, min_bp: u8) -> Result<Node, ParseError> {
        self.nest += 1;
        if self.nest > MAX_NESTING {
            self.nest -= 1;
            return Err(self.err_here(format!(
                "the expression nests more than {MAX_NESTING} levels deep"
            )));
        }
        let r = self.expr_inner(min_bp);
        self.nest -= 1;
        r
    }

    /// Records that a node of depth `d` was built.
    fn built(&mut self, d: usize) -> Result<(), ParseError> {
        self.depth = d;
        if d > MAX_DEPTH {
            return Err(self.err_here(format!(
                "the expression is more than {MAX_DEPTH} operations deep: split it into named metrics"
            )));
        }
        Ok(())
    }

    fn expr_inner(&mut self, min_bp: u8) -> Result<Node, ParseError> {
        let mut lhs = self.prefix()?;
        let mut d = self.depth;
        loop {
            match &self.tok {
                Tok::Ident(k) if k == "if" => {
                    if min_bp > 1 {
                        break;
                    }
                    self.bump()?;
                    let cond = self.expr(2)?;
                    let dc = self.depth;
                    match &self.tok {
                        Tok::Ident(k) if k == "else" => self.bump()?,
                        _ => {
                            return Err(self.err_here(format!(
                                "expected 'else' after 'A if COND', found {}",
                                self.describe()
                            )));
                        }
                    }
                    let els = self.expr(1)?;
                    d = 1 + d.max(dc).max(self.depth);
                    self.built(d)?;
                    lhs = Node::If(Box::new(lhs), Box::new(cond), Box::new(els));
                }
                Tok::Op(o) => {
                    let Some((op, bp)) = binop(o) else {
                        return Err(self.err_here(format!("'{o}' cannot follow a value")));
                    };
                    if bp < min_bp {
                        break;
                    }
                    let span = self.span;
                    self.bump()?;
                    let rhs = self.expr(bp + 1)?;
                    d = 1 + d.max(self.depth);
                    self.built(d)?;
                    lhs = Node::Bin(op, Box::new(lhs), Box::new(rhs), span);
                }
                Tok::End | Tok::RParen | Tok::Comma => break,
                Tok::Ident(k) if k == "else" => break,
                _ => {
                    return Err(
                        self.err_here(format!("expected an operator, found {}", self.describe()))
                    );
                }
            }
        }
        self.depth = d;
        Ok(lhs)
    }

    fn prefix(&mut self) -> Result<Node, ParseError> {
        let span = self.span;
        match self.tok.clone() {
            Tok::Num(v) => {
                self.bump()?;
                self.depth = 1;
                Ok(Node::Num(v, span))
            }
            Tok::Hash(n) => {
                self.bump()?;
                self.depth = 1;
                Ok(Node::Const(n, span))
            }
            Tok::Ident(n) if n == "if" || n == "else" => Err(self.err_here(format!(
                "'{n}' where a value was expected (conditionals are 'A if COND else B')"
            ))),
            Tok::Ident(n) => {
                self.bump()?;
                if self.tok == Tok::LParen {
                    let Some(&(_, f)) = FUNCS.iter().find(|(k, _)| *k == n) else {
                        let known: Vec<&str> = FUNCS.iter().map(|(k, _)| *k).collect();
                        return Err(self.lex.err(
                            span.start,
                            format!("unknown function '{n}' (known: {})", known.join(", ")),
                        ));
                    };
                    self.bump()?;
                    let mut args = Vec::new();
                    let mut da = 0;
                    if self.tok != Tok::RParen {
                        loop {
                            args.push(self.expr(0)?);
                            da = da.max(self.depth);
                            match self.tok {
                                Tok::Comma => self.bump()?,
                                Tok::RParen => break,
                                _ => {
                                    return Err(self.err_here(format!(
                                        "expected ',' or ')' in the arguments of {n}(), found {}",
                                        self.describe()
                                    )));
                                }
                            }
                        }
                    }
                    self.bump()?;
                    let arity_ok = match f {
                        Func::Min | Func::Max => !args.is_empty(),
                        Func::DRatio => args.len() == 2,
                        _ => args.len() == 1,
                    };
                    if !arity_ok {
                        let want = match f {
                            Func::Min | Func::Max => "at least 1 argument",
                            Func::DRatio => "2 arguments",
                            _ => "1 argument",
                        };
                        return Err(self.lex.err(
                            span.start,
                            format!("{n}() takes {want}, {} given", args.len()),
                        ));
                    }
                    if matches!(f, Func::HasEvent | Func::SourceCount | Func::StrcmpCpuid)
                        && !matches!(args[0], Node::Ident(..))
                    {
                        return Err(self
                            .lex
                            .err(span.start, format!("{n}() takes an event name")));
                    }
                    self.built(da + 1)?;
                    Ok(Node::Call(f, args, span))
                } else {
                    self.depth = 1;
                    Ok(Node::Ident(n, span))
                }
            }
            Tok::LParen => {
                self.bump()?;
                let e = self.expr(0)?;
                if self.tok != Tok::RParen {
                    return Err(self.err_here(format!(
                        "expected ')' to close the '(' at column {}, found {}",
                        self.lex.col(span.start),
                        self.describe()
                    )));
                }
                self.bump()?;
                Ok(e)
            }
            Tok::Op("-") => {
                self.bump()?;
                let x = self.expr(UNARY_BP)?;
                self.built(self.depth + 1)?;
                Ok(Node::Neg(Box::new(x)))
            }
            Tok::Op("+") => {
                self.bump()?;
                self.expr(UNARY_BP)
            }
            Tok::Op("!") => {
                self.bump()?;
                let x = self.expr(UNARY_BP)?;
                self.built(self.depth + 1)?;
                Ok(Node::Not(Box::new(x)))
            }
            Tok::End => Err(self.err_here("expression ends where a value was expected")),
            _ => Err(self.err_here(format!(
                "expected a number, a name or '(', found {}",
                self.describe()
            ))),
        }
    }
}

fn truth(v: f64) -> bool {
    v != 0.0 && !v.is_nan()
}

fn b(v: bool) -> f64 {
    if v { 1.0 } else { 0.0 }
}

impl Expr {
    /// Parses an expression.
    pub fn parse(src: &str) -> Result<Expr, ParseError> {
        let mut p = Parser {
            lex: Lexer { src, pos: 0 },
            tok: Tok::End,
            span: Span { start: 0, end: 0 },
            nest: 0,
            depth: 0,
        };
        p.bump()?;
        if p.tok == Tok::End {
            return Err(p.err_here("empty expression"));
        }
        let root = p.expr(0)?;
        if p.tok != Tok::End {
            let msg = match p.tok {
                Tok::RParen => "unbalanced ')'".to_string(),
                _ => format!("unexpected {}", p.describe()),
            };
            return Err(p.err_here(msg));
        }
        Ok(Expr {
            src: src.to_string(),
            root,
        })
    }

    /// The text the expression was parsed from.
    pub fn source(&self) -> &str {
        &self.src
    }

    /// The syntax tree.
    pub fn root(&self) -> &Node {
        &self.root
    }

    fn col(&self, byte: usize) -> usize {
        self.src[..byte.min(self.src.len())].chars().count() + 1
    }

    /// Identifiers the expression reads, in order of first appearance, each once (names
    /// inside `has_event()` and `source_count()` included).
    pub fn identifiers(&self) -> Vec<String> {
        let mut out = Vec::new();
        walk(&self.root, &mut |n| {
            if let Node::Ident(s, _) = n
                && !out.contains(s)
            {
                out.push(s.clone());
            }
        });
        out
    }

    /// Identifiers with the column of their first appearance.
    pub fn identifier_columns(&self) -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = Vec::new();
        walk(&self.root, &mut |n| {
            if let Node::Ident(s, sp) = n
                && !out.iter().any(|(x, _)| x == s)
            {
                out.push((s.clone(), sp.start));
            }
        });
        out.into_iter().map(|(s, b)| (s, self.col(b))).collect()
    }

    /// Constants (`#name`, without `#`) the expression reads.
    pub fn constants(&self) -> Vec<String> {
        let mut out = Vec::new();
        walk(&self.root, &mut |n| {
            if let Node::Const(s, _) = n
                && !out.contains(s)
            {
                out.push(s.clone());
            }
        });
        out
    }

    /// Evaluates the expression. Conditionals evaluate only the branch taken, so a missing
    /// counter in the other branch does no harm.
    pub fn eval(&self, env: &mut dyn Env) -> Result<f64, EvalError> {
        self.node(&self.root, env)
    }

    fn node(&self, n: &Node, env: &mut dyn Env) -> Result<f64, EvalError> {
        Ok(match n {
            Node::Num(v, _) => *v,
            Node::Ident(s, sp) => env.ident(s, self.col(sp.start))?,
            Node::Const(s, sp) => env.constant(s, self.col(sp.start))?,
            Node::Neg(x) => -self.node(x, env)?,
            Node::Not(x) => b(!truth(self.node(x, env)?)),
            Node::If(then, cond, els) => {
                if truth(self.node(cond, env)?) {
                    self.node(then, env)?
                } else {
                    self.node(els, env)?
                }
            }
            Node::Bin(op, l, r, sp) => {
                let a = self.node(l, env)?;
                let c = self.node(r, env)?;
                match op {
                    BinOp::Add => a + c,
                    BinOp::Sub => a - c,
                    BinOp::Mul => a * c,
                    BinOp::Div | BinOp::Rem => {
                        if c == 0.0 {
                            return Err(EvalError::DivisionByZero {
                                divisor: self.text_of(r),
                                column: self.col(sp.start),
                            });
                        }
                        if *op == BinOp::Div { a / c } else { a % c }
                    }
                    BinOp::Lt => b(a < c),
                    BinOp::Gt => b(a > c),
                    BinOp::Le => b(a <= c),
                    BinOp::Ge => b(a >= c),
                    BinOp::Eq => b(a == c),
                    BinOp::Ne => b(a != c),
                    BinOp::And => b(truth(a) && truth(c)),
                    BinOp::Or => b(truth(a) || truth(c)),
                    BinOp::Xor => b(truth(a) != truth(c)),
                }
            }
            Node::Call(f, args, _) => match f {
                Func::Min | Func::Max => {
                    let mut acc: Option<f64> = None;
                    for a in args {
                        let v = self.node(a, env)?;
                        acc = Some(match acc {
                            None => v,
                            Some(x) if *f == Func::Min => x.min(v),
                            Some(x) => x.max(v),
                        });
                    }
                    acc.unwrap_or(f64::NAN)
                }
                Func::DRatio => {
                    let a = self.node(&args[0], env)?;
                    let c = self.node(&args[1], env)?;
                    if c == 0.0 { 0.0 } else { a / c }
                }
                Func::Abs => self.node(&args[0], env)?.abs(),
                Func::Sqrt => self.node(&args[0], env)?.sqrt(),
                Func::HasEvent | Func::SourceCount => match &args[0] {
                    Node::Ident(s, _) => b(env.has(s)),
                    _ => 0.0,
                },
                Func::StrcmpCpuid => 0.0,
            },
        })
    }

    /// The source text of a node (best effort: reconstructed from spans).
    fn text_of(&self, n: &Node) -> String {
        let mut lo = usize::MAX;
        let mut hi = 0;
        walk(n, &mut |m| {
            let sp = match m {
                Node::Num(_, s)
                | Node::Ident(_, s)
                | Node::Const(_, s)
                | Node::Bin(_, _, _, s)
                | Node::Call(_, _, s) => Some(*s),
                _ => None,
            };
            if let Some(s) = sp {
                lo = lo.min(s.start);
                hi = hi.max(s.end);
            }
        });
        match n {
            Node::Call(..) => {
                // Extend to the closing parenthesis.
                let mut depth = 0i32;
                let bytes = self.src.as_bytes();
                let mut e = lo;
                while e < bytes.len() {
                    match bytes[e] {
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                e += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    e += 1;
                }
                self.src[lo..e.min(self.src.len())].to_string()
            }
            _ if lo <= hi && hi <= self.src.len() => self.src[lo..hi].trim().to_string(),
            _ => "expression".to_string(),
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.src)
    }
}

fn walk<'n>(n: &'n Node, f: &mut dyn FnMut(&'n Node)) {
    f(n);
    match n {
        Node::Neg(x) | Node::Not(x) => walk(x, f),
        Node::Bin(_, l, r, _) => {
            walk(l, f);
            walk(r, f);
        }
        Node::If(a, c, e) => {
            walk(a, f);
            walk(c, f);
            walk(e, f);
        }
        Node::Call(_, args, _) => {
            for a in args {
                walk(a, f);
            }
        }
        _ => {}
    }
}

/// An environment from closures, handy for tests and one-off evaluations.
pub struct MapEnv<'a> {
    /// Identifier values.
    pub vars: &'a std::collections::HashMap<String, f64>,
    /// Constant values (without `#`).
    pub consts: &'a std::collections::HashMap<String, f64>,
}

impl Env for MapEnv<'_> {
    fn ident(&mut self, name: &str, column: usize) -> Result<f64, EvalError> {
        self.vars.get(name).copied().ok_or(EvalError::Unknown {
            name: name.to_string(),
            column,
        })
    }
    fn constant(&mut self, name: &str, column: usize) -> Result<f64, EvalError> {
        self.consts
            .get(name)
            .or_else(|| self.consts.get(&name.to_ascii_lowercase()))
            .copied()
            .ok_or(EvalError::UnknownConstant {
                name: name.to_string(),
                column,
            })
    }
    fn has(&mut self, name: &str) -> bool {
        self.vars.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn ev(src: &str, vars: &[(&str, f64)]) -> Result<f64, EvalError> {
        let vars: HashMap<String, f64> = vars.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let consts: HashMap<String, f64> =
            [("line_size".to_string(), 64.0), ("smt_on".to_string(), 1.0)]
                .into_iter()
                .collect();
        Expr::parse(src)
            .unwrap_or_else(|e| panic!("{e}"))
            .eval(&mut MapEnv {
                vars: &vars,
                consts: &consts,
            })
    }

    fn val(src: &str) -> f64 {
        ev(src, &[("a", 2.0), ("b", 3.0), ("z", 0.0)]).unwrap()
    }

    fn perr(src: &str) -> ParseError {
        Expr::parse(src).expect_err(src)
    }

    #[test]
    fn hostile_nesting_is_an_error_not_a_stack_overflow() {
        // On the stack of an ordinary thread (2 MiB): each of these overflowed it before.
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                for src in [
                    format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000)),
                    format!("1{}", "+1".repeat(100_000)),
                    format!("{}1", "-".repeat(100_000)),
                    format!("{}1", "!".repeat(100_000)),
                    format!("1{}", " if 1 else 1".repeat(100_000)),
                    format!("{}1{}", "max(".repeat(100_000), ")".repeat(100_000)),
                ] {
                    let e = Expr::parse(&src).expect_err("too deep");
                    assert!(e.to_string().contains("deep"), "{e}");
                }
                // Real formulas are far from the limit.
                let ok = format!("1{}", "+1".repeat(150));
                assert_eq!(val(&ok), 151.0);
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(val("1 + 2 * 3"), 7.0);
        assert_eq!(val("(1 + 2) * 3"), 9.0);
        assert_eq!(val("10 - 4 - 3"), 3.0);
        assert_eq!(val("64 / 4 / 2"), 8.0);
        assert_eq!(val("-a * b"), -6.0);
        assert_eq!(val("- - a"), 2.0);
        assert_eq!(val("2 * -3"), -6.0);
        assert_eq!(val("7 % 4 + 1"), 4.0);
        assert_eq!(val("1 + 2 < 4"), 1.0);
        assert_eq!(val("a < b & b < a"), 0.0);
        assert_eq!(val("a < b | b < a"), 1.0);
        assert_eq!(val("1 ^ 1"), 0.0);
        assert_eq!(val("a == 2 && b != 2"), 1.0);
        assert_eq!(val("!z"), 1.0);
        assert_eq!(val("1e3 * 2.5e-3"), 2.5);
        assert_eq!(val(".5 + 0x10"), 16.5);
    }

    #[test]
    fn conditionals_are_python_style_and_lazy() {
        assert_eq!(val("a if a > b else b"), 3.0);
        assert_eq!(val("1 + 1 if z else 5 + 5"), 10.0);
        assert_eq!(val("1 if z else 2 if z else 3"), 3.0);
        // Only the branch taken is evaluated: no error for the unknown name.
        assert_eq!(val("a if 1 else unknown_event"), 2.0);
        assert_eq!(val("(8 if z else 4) * 2"), 8.0);
    }

    #[test]
    fn functions() {
        assert_eq!(val("min(a, b, 1)"), 1.0);
        assert_eq!(val("max(a, b)"), 3.0);
        assert_eq!(val("d_ratio(a, z)"), 0.0);
        assert_eq!(val("d_ratio(b, a)"), 1.5);
        assert_eq!(val("abs(a - b)"), 1.0);
        assert_eq!(val("has_event(a) + has_event(nope)"), 1.0);
        assert_eq!(val("source_count(a)"), 1.0);
    }

    #[test]
    fn constants_and_perf_identifiers() {
        assert_eq!(ev("#line_size * x", &[("x", 2.0)]).unwrap(), 128.0);
        assert_eq!(ev("#SMT_on", &[]).unwrap(), 1.0);
        let e = Expr::parse(
            r"cpu@topdown\-fe\-bound@ / slots + fp_arith_inst_retired.scalar_double + PAPI:L1",
        )
        .unwrap();
        assert_eq!(
            e.identifiers(),
            vec![
                "cpu@topdown-fe-bound@",
                "slots",
                "fp_arith_inst_retired.scalar_double",
                "PAPI:L1"
            ]
        );
        let e = Expr::parse(r"cpu@event\=0x3c\,umask\=0x1@ / duration_time").unwrap();
        assert_eq!(e.identifiers()[0], "cpu@event=0x3c,umask=0x1@");
    }

    #[test]
    fn division_by_zero_names_the_divisor_and_column() {
        let e = ev("a / (b - 3)", &[("a", 1.0), ("b", 3.0)]).unwrap_err();
        assert_eq!(
            e,
            EvalError::DivisionByZero {
                divisor: "b - 3".into(),
                column: 3
            }
        );
        let e = ev("x % y", &[("x", 1.0), ("y", 0.0)]).unwrap_err();
        assert!(
            matches!(e, EvalError::DivisionByZero { column: 3, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("'y' is 0"), "{e}");
    }

    #[test]
    fn unknown_identifier_has_column() {
        let e = ev("a + bogus * 2", &[("a", 1.0)]).unwrap_err();
        assert_eq!(
            e,
            EvalError::Unknown {
                name: "bogus".into(),
                column: 5
            }
        );
        let e = ev("1 + #nope", &[]).unwrap_err();
        assert!(matches!(e, EvalError::UnknownConstant { column: 5, .. }));
    }

    #[test]
    fn syntax_errors_have_columns() {
        let cases: &[(&str, usize, &str)] = &[
            ("a +", 4, "ends where a value"),
            ("(a + b", 7, "expected ')'"),
            ("a + b)", 6, "unbalanced ')'"),
            ("a b", 3, "expected an operator"),
            ("a + $", 5, "unexpected character '$'"),
            ("foo(a)", 1, "unknown function 'foo'"),
            ("d_ratio(a)", 1, "takes 2 arguments"),
            ("min()", 1, "at least 1"),
            ("a if b", 7, "expected 'else'"),
            ("a ? b : c", 3, "A if COND else B"),
            ("", 1, "empty expression"),
            ("2x", 2, "operator is missing"),
            ("* a", 1, "expected a number"),
            ("max(a b)", 7, "expected an operator"),
            ("max(a,)", 7, "expected a number"),
            ("#", 1, "constant name"),
        ];
        for (src, col, msg) in cases {
            let e = perr(src);
            assert_eq!(e.column, *col, "{src}: {e}");
            assert!(e.message.contains(msg), "{src}: {e}");
        }
        let shown = perr("flops / (ls_bytes").to_string();
        assert!(shown.contains("flops / (ls_bytes\n"), "{shown}");
        assert!(shown.ends_with("                 ^"), "{shown:?}");
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let e = perr("µ + $");
        assert_eq!(e.column, 1, "{e}");
        let e = perr("a + é");
        assert_eq!(e.column, 5);
    }

    #[test]
    fn identifiers_and_constants_listed_once() {
        let e = Expr::parse("a + b * a + #k + has_event(c) + #k").unwrap();
        assert_eq!(e.identifiers(), vec!["a", "b", "c"]);
        assert_eq!(e.constants(), vec!["k"]);
        assert_eq!(e.identifier_columns()[1], ("b".to_string(), 5));
    }
}
