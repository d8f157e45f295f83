//! Scaling laws fitted to measured runs at several thread or rank counts.
//!
//! Each law predicts the run time as `T(p) = T1 g(p; theta)` where `g` follows from its
//! speedup `S(p)`: in strong scaling (fixed problem) `g = 1/S`; in weak scaling (work
//! proportional to `p`) `g = p/S`.
//!
//! * Amdahl: `S = 1 / ((1 - f) + f/p)`, `0 <= f <= 1`.
//! * Gustafson: `S = (1 - f) + f p`, `0 <= f <= 1`.
//! * Universal Scalability Law (Gunther): `S = p / (1 + sigma (p - 1) + kappa p (p - 1))`,
//!   `sigma, kappa >= 0`.
//! * Extra-P's performance model normal form with one term (Calotoiu et al. 2013):
//!   `T(p) = c0 + c1 p^i log2^j p` over the default exponent set plus negative exponents for
//!   strong scaling, the hypothesis chosen by leave-one-out cross-validation (SMAPE).
//!
//! Fits minimise squared log errors (relative errors), so short and long runs weigh the same.
//! Laws are compared by leave-one-out cross-validation: the RMS of the relative error of each
//! run predicted from the others; among laws within 10 % (or 1e-6) of the best score the one with the
//! fewest parameters wins. Predictions carry a band of `exp(+-2 s)`, `s` the cross-validated
//! RMS log error.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::{ModelError, Result};
use crate::optim::{Bounds, nelder_mead};

/// A scaling law.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Law {
    /// Amdahl's law.
    Amdahl,
    /// Gustafson's law.
    Gustafson,
    /// The Universal Scalability Law.
    Usl,
    /// Extra-P-style `c0 + c1 p^i log2^j p`.
    Pmnf,
}

impl Law {
    /// All laws, in tie-breaking order.
    pub const ALL: [Law; 4] = [Law::Amdahl, Law::Gustafson, Law::Usl, Law::Pmnf];

    /// Parses a law name (`amdahl`, `gustafson`, `usl`, `pmnf`/`extrap`).
    pub fn parse(s: &str) -> Result<Law> {
        match s.to_ascii_lowercase().as_str() {
            "amdahl" => Ok(Law::Amdahl),
            "gustafson" => Ok(Law::Gustafson),
            "usl" => Ok(Law::Usl),
            "pmnf" | "extrap" | "extra-p" => Ok(Law::Pmnf),
            _ => Err(ModelError::Unknown {
                what: "scaling law",
                name: s.to_string(),
                known: "amdahl, gustafson, usl, pmnf".into(),
            }),
        }
    }

    fn n_params(self) -> usize {
        match self {
            Law::Amdahl | Law::Gustafson => 2,
            Law::Usl => 3,
            Law::Pmnf => 4,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Law::Amdahl => "amdahl",
            Law::Gustafson => "gustafson",
            Law::Usl => "usl",
            Law::Pmnf => "pmnf",
        }
    }
}

/// Whether the problem size is fixed (strong) or grows with `p` (weak).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Fixed problem size.
    #[default]
    Strong,
    /// Work proportional to `p`.
    Weak,
}

/// One measured run.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Run {
    /// Threads or ranks.
    pub p: f64,
    /// Run time, s.
    pub time_s: f64,
}

/// A fitted law.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LawFit {
    /// The law.
    pub law: Law,
    /// Formula with the fitted values.
    pub formula: String,
    /// Fitted parameters by name (`t1_s`, `f`, `sigma`, `kappa`, `c0`, `c1`, `i`, `j`).
    pub params: BTreeMap<String, f64>,
    /// RMS log error of the fit on all runs.
    pub rms_log_error: f64,
    /// Leave-one-out RMS relative error (the selection score).
    pub cv_rms_rel_error: f64,
    /// Number of parameters (for the parsimony rule).
    pub n_params: usize,
    mode: Mode,
}

/// A prediction with its band.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LawPrediction {
    /// Threads or ranks.
    pub p: f64,
    /// Predicted time, s.
    pub time_s: f64,
    /// Lower end of the band, s.
    pub low_s: f64,
    /// Upper end of the band, s.
    pub high_s: f64,
    /// Predicted speedup over one process, `T(1)/T(p)` (strong) or `p T(1)/T(p)` (weak).
    pub speedup: f64,
}

/// Exponents of Extra-P's default building blocks, plus negative ones for strong scaling.
const EXPONENTS: [f64; 26] = [
    -2.0,
    -1.0,
    -0.75,
    -2.0 / 3.0,
    -0.5,
    -1.0 / 3.0,
    -0.25,
    0.0,
    0.25,
    1.0 / 3.0,
    0.5,
    2.0 / 3.0,
    0.75,
    1.0,
    1.25,
    4.0 / 3.0,
    1.5,
    5.0 / 3.0,
    1.75,
    2.0,
    2.25,
    7.0 / 3.0,
    2.5,
    8.0 / 3.0,
    2.75,
    3.0,
];

fn speedup_of(law: Law, p: f64, th: &[f64]) -> f64 {
    match law {
        Law::Amdahl => 1.0 / ((1.0 - th[0]) + th[0] / p),
        Law::Gustafson => (1.0 - th[0]) + th[0] * p,
        Law::Usl => p / (1.0 + th[0] * (p - 1.0) + th[1] * p * (p - 1.0)),
        Law::Pmnf => f64::NAN,
    }
}

fn g_of(law: Law, mode: Mode, p: f64, th: &[f64]) -> f64 {
    let s = speedup_of(law, p, th);
    match mode {
        Mode::Strong => 1.0 / s,
        Mode::Weak => p / s,
    }
}

fn pmnf_term(p: f64, i: f64, j: f64) -> f64 {
    p.powf(i) * p.log2().max(0.0).powf(j)
}

/// Up to this many runs, the cross-validation leaves out one run at a time; beyond, the runs
/// are split into this many folds (every `FOLDS`-th run of the sorted runs in one fold), so
/// that a fit costs time linear in the number of runs.
pub const FOLDS: usize = 24;

/// The held-out groups of the cross-validation: single runs up to [`FOLDS`] runs, else
/// [`FOLDS`] interleaved folds.
fn folds(n: usize) -> Vec<Vec<usize>> {
    if n <= FOLDS {
        (0..n).map(|k| vec![k]).collect()
    } else {
        (0..FOLDS)
            .map(|f| (f..n).step_by(FOLDS).collect())
            .collect()
    }
}

/// Fits one law to runs.
pub fn fit_law(law: Law, runs: &[Run], mode: Mode) -> Result<LawFit> {
    check_runs(runs, law.n_params().min(3))?;
    let (params, pred, theta) = fit_params(law, runs, mode, None)?;
    let rms_log_error = rms(runs.iter().map(|r| (pred(r.p) / r.time_s).ln()));
    // Cross-validation: predict held-out runs from the others (leave-one-out up to FOLDS
    // runs; beyond, FOLDS folds, each refit started from the whole fit).
    let mut errs = Vec::new();
    if runs.len() > law.n_params().min(3) {
        let many = runs.len() > FOLDS;
        let mut order: Vec<usize> = (0..runs.len()).collect();
        if many {
            order.sort_by(|&a, &b| runs[a].p.total_cmp(&runs[b].p));
        }
        for fold in folds(runs.len()) {
            let held: Vec<usize> = fold.iter().map(|&i| order[i]).collect();
            let rest: Vec<Run> = runs
                .iter()
                .enumerate()
                .filter(|(i, _)| !held.contains(i))
                .map(|(_, r)| *r)
                .collect();
            let start = if many { Some(theta.as_slice()) } else { None };
            match fit_params(law, &rest, mode, start) {
                Ok((_, pr, _)) => {
                    for &k in &held {
                        errs.push(pr(runs[k].p) / runs[k].time_s - 1.0);
                    }
                }
                Err(_) => errs.extend(held.iter().map(|_| f64::INFINITY)),
            }
        }
    }
    let cv = if errs.is_empty() {
        f64::INFINITY
    } else {
        rms(errs.into_iter())
    };
    Ok(LawFit {
        law,
        formula: formula(law, &params),
        params,
        rms_log_error,
        cv_rms_rel_error: cv,
        n_params: law.n_params(),
        mode,
    })
}

type Predictor = Box<dyn Fn(f64) -> f64>;

/// Fits `law`; `start` (the parameters of a fit on more runs) replaces the grid of starting
/// points with one refinement from there. Returns the parameters, the predictor and the
/// law's own parameters (theta).
fn fit_params(
    law: Law,
    runs: &[Run],
    mode: Mode,
    start: Option<&[f64]>,
) -> Result<(BTreeMap<String, f64>, Predictor, Vec<f64>)> {
    let mut params = BTreeMap::new();
    if law == Law::Pmnf {
        let (c0, c1, i, j) = fit_pmnf(runs)?;
        params.insert("c0".into(), c0);
        params.insert("c1".into(), c1);
        params.insert("i".into(), i);
        params.insert("j".into(), j);
        return Ok((
            params,
            Box::new(move |p| c0 + c1 * pmnf_term(p, i, j)),
            vec![c0, c1, i, j],
        ));
    }
    let (lo, hi, names): (Vec<f64>, Vec<f64>, Vec<&str>) = match law {
        Law::Amdahl | Law::Gustafson => (vec![0.0], vec![1.0], vec!["f"]),
        _ => (vec![0.0, 0.0], vec![1.0, 1.0], vec!["sigma", "kappa"]),
    };
    let logt: Vec<f64> = runs.iter().map(|r| r.time_s.ln()).collect();
    // For given theta, log T1 is the mean of log T - log g.
    let t1_of = |th: &[f64]| -> f64 {
        runs.iter()
            .zip(&logt)
            .map(|(r, lt)| lt - g_of(law, mode, r.p, th).ln())
            .sum::<f64>()
            / runs.len() as f64
    };
    let mut obj = |th: &[f64]| -> f64 {
        let lt1 = t1_of(th);
        runs.iter()
            .zip(&logt)
            .map(|(r, lt)| {
                let v = lt1 + g_of(law, mode, r.p, th).ln() - lt;
                if v.is_finite() { v * v } else { 1e300 }
            })
            .sum()
    };
    let bounds = Bounds {
        lo: lo.clone(),
        hi: hi.clone(),
    };
    // A coarse grid of starts, then bounded Nelder-Mead from the best few: deterministic.
    let grid: Vec<f64> = vec![
        0.0, 1e-4, 1e-3, 0.01, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1.0,
    ];
    let mut starts: Vec<Vec<f64>> = Vec::new();
    match start {
        Some(th) if th.len() == names.len() => starts.push(th.to_vec()),
        _ if names.len() == 1 => starts.extend(grid.iter().map(|&g| vec![g])),
        _ => {
            for &a in &grid {
                for &b in &grid[..8] {
                    starts.push(vec![a, b]);
                }
            }
        }
    }
    let mut scored: Vec<(f64, Vec<f64>)> = starts.into_iter().map(|s| (obj(&s), s)).collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut best = (f64::INFINITY, vec![]);
    for (_, s) in scored.into_iter().take(4) {
        let step: Vec<f64> = s.iter().map(|v| (v * 0.5).max(1e-3)).collect();
        let m = nelder_mead(&mut obj, &s, &bounds, step[0], 1e-16, 2000);
        if m.f < best.0 {
            best = (m.f, m.x);
        }
    }
    let th = best.1;
    let t1 = t1_of(&th).exp();
    params.insert("t1_s".into(), t1);
    for (n, v) in names.iter().zip(&th) {
        params.insert((*n).into(), *v);
    }
    let theta = th.clone();
    Ok((
        params,
        Box::new(move |p| t1 * g_of(law, mode, p, &th)),
        theta,
    ))
}

fn fit_pmnf(runs: &[Run]) -> Result<(f64, f64, f64, f64)> {
    let mut best: Option<(f64, (f64, f64, f64, f64))> = None;
    for &i in &EXPONENTS {
        for j in [0.0, 1.0, 2.0] {
            if i == 0.0 && j == 0.0 {
                continue;
            }
            // Rows of the weighted problem: (1/t, term/t) . (c0, c1) = 1.
            let rows: Vec<[f64; 2]> = runs
                .iter()
                .map(|r| [1.0 / r.time_s, pmnf_term(r.p, i, j) / r.time_s])
                .collect();
            // Normal equations of all runs; leaving run k out subtracts its own terms, so
            // the leave-one-out SMAPE costs time linear in the runs (it was quadratic, and
            // cubic inside the outer cross-validation).
            let mut a = [[0.0f64; 2]; 2];
            let mut b = [0.0f64; 2];
            for x in &rows {
                for u in 0..2 {
                    b[u] += x[u];
                    for v in 0..2 {
                        a[u][v] += x[u] * x[v];
                    }
                }
            }
            let solve2 = |a: [[f64; 2]; 2], b: [f64; 2]| -> Option<(f64, f64)> {
                crate::optim::solve(vec![a[0].to_vec(), a[1].to_vec()], b.to_vec())
                    .map(|s| (s[0], s[1]))
            };
            let mut smape = 0.0;
            let mut ok = true;
            for (held, x) in runs.iter().zip(&rows) {
                let mut ak = a;
                let mut bk = b;
                for u in 0..2 {
                    bk[u] -= x[u];
                    for v in 0..2 {
                        ak[u][v] -= x[u] * x[v];
                    }
                }
                match solve2(ak, bk) {
                    Some((c0, c1)) => {
                        let pr = c0 + c1 * pmnf_term(held.p, i, j);
                        smape += 2.0 * (pr - held.time_s).abs() / (pr.abs() + held.time_s);
                    }
                    None => ok = false,
                }
            }
            if !ok || !smape.is_finite() {
                continue;
            }
            let Some((c0, c1)) = solve2(a, b) else {
                continue;
            };
            if best.as_ref().is_none_or(|b| smape < b.0 - 1e-12) {
                best = Some((smape, (c0, c1, i, j)));
            }
        }
    }
    best.map(|b| b.1).ok_or_else(|| {
        ModelError::Invalid(
            "no p^i log^j hypothesis could be fitted; give runs at distinct p".into(),
        )
    })
}

fn formula(law: Law, p: &BTreeMap<String, f64>) -> String {
    let g = |k: &str| p.get(k).copied().unwrap_or(f64::NAN);
    match law {
        Law::Amdahl => format!(
            "S(p) = 1/((1 - {:.4}) + {:.4}/p), T1 = {:.4e} s",
            g("f"),
            g("f"),
            g("t1_s")
        ),
        Law::Gustafson => format!(
            "S(p) = (1 - {:.4}) + {:.4} p, T1 = {:.4e} s",
            g("f"),
            g("f"),
            g("t1_s")
        ),
        Law::Usl => format!(
            "S(p) = p/(1 + {:.4e} (p-1) + {:.4e} p (p-1)), T1 = {:.4e} s",
            g("sigma"),
            g("kappa"),
            g("t1_s")
        ),
        Law::Pmnf => format!(
            "T(p) = {:.4e} + {:.4e} p^{:.4} log2^{} p",
            g("c0"),
            g("c1"),
            g("i"),
            g("j")
        ),
    }
}

impl LawFit {
    /// The fitted time at `p`, s.
    pub fn time_s(&self, p: f64) -> f64 {
        let g = |k: &str| self.params.get(k).copied().unwrap_or(f64::NAN);
        match self.law {
            Law::Pmnf => g("c0") + g("c1") * pmnf_term(p, g("i"), g("j")),
            Law::Amdahl | Law::Gustafson => g("t1_s") * g_of(self.law, self.mode, p, &[g("f")]),
            Law::Usl => g("t1_s") * g_of(self.law, self.mode, p, &[g("sigma"), g("kappa")]),
        }
    }

    /// A prediction at `p` with a band of `exp(+-2 s)`, `s` the cross-validated RMS error
    /// (the in-sample RMS log error when there are too few runs for cross-validation).
    pub fn predict(&self, p: f64) -> LawPrediction {
        let t = self.time_s(p);
        let s = if self.cv_rms_rel_error.is_finite() {
            (1.0 + self.cv_rms_rel_error).ln().max(self.rms_log_error)
        } else {
            self.rms_log_error
        };
        let t1 = self.time_s(1.0);
        LawPrediction {
            p,
            time_s: t,
            low_s: t * (-2.0 * s).exp(),
            high_s: t * (2.0 * s).exp(),
            speedup: match self.mode {
                Mode::Strong => t1 / t,
                Mode::Weak => p * t1 / t,
            },
        }
    }
}

/// All fitted laws and the chosen one.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Selection {
    /// Fits, in the order offered.
    pub fits: Vec<LawFit>,
    /// The chosen law.
    pub chosen: Law,
}

impl Selection {
    /// The chosen fit.
    pub fn best(&self) -> &LawFit {
        self.fits
            .iter()
            .find(|f| f.law == self.chosen)
            .unwrap_or(&self.fits[0])
    }
}

/// Fits every offered law and chooses by cross-validation with the parsimony rule.
pub fn select(runs: &[Run], laws: &[Law], mode: Mode) -> Result<Selection> {
    if laws.is_empty() {
        return Err(ModelError::Invalid("offer at least one law".into()));
    }
    let fits: Vec<LawFit> = laws
        .iter()
        .map(|&l| fit_law(l, runs, mode))
        .collect::<Result<_>>()?;
    let best = fits
        .iter()
        .map(|f| f.cv_rms_rel_error)
        .fold(f64::INFINITY, f64::min);
    let chosen = fits
        .iter()
        .filter(|f| f.cv_rms_rel_error <= best * 1.1 + 1e-6)
        .min_by_key(|f| (f.n_params, f.law))
        .map(|f| f.law)
        .unwrap_or(fits[0].law);
    Ok(Selection { fits, chosen })
}

fn rms(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x * x, n + 1));
    if n == 0 { 0.0 } else { (s / n as f64).sqrt() }
}

fn check_runs(runs: &[Run], params: usize) -> Result<()> {
    let mut ps: Vec<f64> = runs.iter().map(|r| r.p).collect();
    ps.sort_by(f64::total_cmp);
    ps.dedup();
    if ps.len() < params + 1 {
        return Err(ModelError::TooFew {
            what: "distinct process counts",
            got: ps.len(),
            needed: params + 1,
            why: "one more than the law's parameters, so that cross-validation can check it".into(),
        });
    }
    if let Some(r) = runs
        .iter()
        .find(|r| !(r.p >= 1.0 && r.time_s > 0.0 && r.time_s.is_finite()))
    {
        return Err(ModelError::Invalid(format!(
            "a run needs p >= 1 and a positive time, got p = {}, time = {} s",
            r.p, r.time_s
        )));
    }
    Ok(())
}

/// Reads runs from CSV text: a process-count column (`p`, `threads`, `ranks` or `procs`) and
/// a time column (`time_s`, `time` or `runtime_s`); repeated counts are kept as repetitions.
pub fn runs_from_csv(text: &str, origin: &str) -> Result<Vec<Run>> {
    let c = crate::csv::Csv::parse(text, origin)?;
    let pc = ["p", "threads", "ranks", "procs"]
        .iter()
        .find_map(|n| c.column(n))
        .ok_or_else(|| {
            c.error_at(
                0,
                c.headers.len(),
                format!(
                    "no process-count column (p, threads, ranks or procs) in header '{}'",
                    c.headers.join(",")
                ),
            )
        })?;
    let tc = ["time_s", "time", "runtime_s"]
        .iter()
        .find_map(|n| c.column(n))
        .ok_or_else(|| {
            c.error_at(
                0,
                c.headers.len(),
                format!(
                    "no time column (time_s, time or runtime_s) in header '{}'",
                    c.headers.join(",")
                ),
            )
        })?;
    let mut runs = Vec::new();
    for r in 0..c.rows.len() {
        let p = c.number(r, pc)?;
        let t = c.number(r, tc)?;
        if p < 1.0 {
            return Err(c.error_at(r, pc, format!("process count must be >= 1, got {p}")));
        }
        if t <= 0.0 {
            return Err(c.error_at(r, tc, format!("time must be positive, got {t}")));
        }
        runs.push(Run { p, time_s: t });
    }
    Ok(runs)
}

/// The law names accepted by [`Law::parse`].
pub fn law_names() -> Vec<&'static str> {
    Law::ALL.iter().map(|l| l.name()).collect()
}
