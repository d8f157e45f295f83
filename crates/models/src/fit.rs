//! CPI fitting (seed 003, section 5.3): the cycles per instruction of each class are unknowns
//! fitted to measured variants (cycles per iteration and class counts per iteration) so that
//! the port model (eqs. 5.8/5.9) reproduces the measurements.
//!
//! Objective: the sum of squared errors `sum_v (C_model(v; c) - C_meas(v))^2`; constraint:
//! `cpi_min <= c_k <= cpi_max` (the thesis uses `c_k >= 1`: a port accepts at most one
//! instruction per cycle). Global search: seeded basin-hopping; local steps: bounded
//! Nelder-Mead followed by a projected Gauss-Newton polish, which is exact inside one linear
//! piece of the model. Classes that bind no port for any variant are not identifiable: they
//! are reset to `cpi_min` and reported, as the author's code does.

use serde::{Deserialize, Serialize};

use crate::error::{ModelError, Result};
use crate::optim::{Bounds, HopOptions, Minimum, basin_hopping, nelder_mead, solve};
use crate::ports::{ClassCounts, Cpis, PortModel, Scheduler};

/// One measured variant: instruction counts per iteration and measured cycles per iteration.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    /// Name (kernel, ISA, compiler).
    pub name: String,
    /// Class counts per loop iteration.
    pub counts: ClassCounts,
    /// Measured cycles per loop iteration.
    pub cycles_per_iter: f64,
}

/// Options of [`fit_cpis`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitOptions {
    /// RNG seed of basin-hopping (the thesis's code used 65432).
    pub seed: u64,
    /// Number of random hops.
    pub hops: usize,
    /// Half-width of a hop's perturbation, in CPI units (the thesis's code used 4.0).
    pub step: f64,
    /// Lower bound of every CPI.
    pub cpi_min: f64,
    /// Upper bound of every CPI.
    pub cpi_max: f64,
    /// Placement rule of the port model.
    pub scheduler: Scheduler,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            seed: 65432,
            hops: 40,
            step: 4.0,
            cpi_min: 1.0,
            cpi_max: 100.0,
            scheduler: Scheduler::Waterfill,
        }
    }
}

/// How well one variant is reproduced.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Residual {
    /// Variant name.
    pub name: String,
    /// Measured cycles per iteration.
    pub measured: f64,
    /// Modelled cycles per iteration (eq. 5.8).
    pub modelled: f64,
    /// Signed error in percent.
    pub error_pct: f64,
    /// The busiest port.
    pub binding_port: String,
}

/// A CPI fit and its quality.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpiFit {
    /// Port model used.
    pub port_model: String,
    /// Fitted CPIs by class.
    pub cpi: Cpis,
    /// Classes fitted (non-zero counts in some variant).
    pub fitted: Vec<String>,
    /// Classes that bind no port for any variant: reset to `cpi_min`, not identifiable.
    pub non_contributing: Vec<String>,
    /// Classes with zero counts everywhere: set to `cpi_min`.
    pub absent: Vec<String>,
    /// Sum of squared errors, cycles^2.
    pub sse: f64,
    /// Root mean squared error, cycles.
    pub rmse: f64,
    /// Coefficient of determination of the measured cycles.
    pub r2: f64,
    /// Mean absolute percentage error.
    pub mean_abs_pct: f64,
    /// Maximum absolute percentage error.
    pub max_abs_pct: f64,
    /// Per-variant residuals.
    pub residuals: Vec<Residual>,
    /// Options used (seed, hops, bounds).
    pub options: FitOptions,
    /// Objective evaluations.
    pub evaluations: usize,
}

/// The least number of variants for `unknowns` CPIs: one equation per unknown.
pub fn variants_needed(unknowns: usize) -> usize {
    unknowns.max(1)
}

/// Fits the CPIs of `model`'s classes to `variants` (section 5.3).
#[allow(clippy::too_many_lines)]
pub fn fit_cpis(model: &PortModel, variants: &[Variant], opts: &FitOptions) -> Result<CpiFit> {
    if !(opts.cpi_min > 0.0 && opts.cpi_max > opts.cpi_min) {
        return Err(ModelError::Invalid(format!(
            "CPI bounds must satisfy 0 < min < max, got [{}, {}]",
            opts.cpi_min, opts.cpi_max
        )));
    }
    let k = model.classes.len();
    let mut rows = Vec::with_capacity(variants.len());
    for v in variants {
        if !(v.cycles_per_iter.is_finite() && v.cycles_per_iter > 0.0) {
            return Err(ModelError::Invalid(format!(
                "variant '{}': measured cycles per iteration must be positive, got {}",
                v.name, v.cycles_per_iter
            )));
        }
        rows.push(model.count_vector(&v.counts)?);
    }
    let present: Vec<usize> = (0..k)
        .filter(|&i| rows.iter().any(|r| r[i] != 0.0))
        .collect();
    let needed = variants_needed(present.len());
    // Two variants with the same mix add no information: count the distinct mixes.
    let mut distinct: Vec<&Vec<f64>> = Vec::new();
    for r in &rows {
        if !distinct.contains(&r) {
            distinct.push(r);
        }
    }
    if distinct.len() < needed && variants.len() >= needed {
        return Err(ModelError::TooFew {
            what: "variants with distinct instruction mixes",
            got: distinct.len(),
            needed,
            why: format!(
                "{} of the {} variants repeat another's counts (a duplicated row?): a repeated mix does not tell the CPIs apart",
                variants.len() - distinct.len(),
                variants.len()
            ),
        });
    }
    if variants.len() < needed {
        return Err(ModelError::TooFew {
            what: "variants",
            got: variants.len(),
            needed,
            why: format!(
                "{} classes have non-zero counts ({}), one CPI each; more variants, with different mixes, give a better-conditioned fit",
                present.len(),
                present
                    .iter()
                    .map(|&i| model.classes[i].name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    let y: Vec<f64> = variants.iter().map(|v| v.cycles_per_iter).collect();
    let sched = opts.scheduler;
    let sets = model.port_sets();
    let full = |free: &[f64]| {
        let mut c = vec![opts.cpi_min; k];
        for (j, &i) in present.iter().enumerate() {
            c[i] = free[j];
        }
        c
    };
    let sse_of = |free: &[f64]| {
        let c = full(free);
        rows.iter()
            .zip(&y)
            .map(|(r, yi)| (model.cycles_with(&sets, r, &c, sched) - yi).powi(2))
            .sum::<f64>()
    };
    let n = present.len();
    let bounds = Bounds {
        lo: vec![opts.cpi_min; n],
        hi: vec![opts.cpi_max; n],
    };
    // Start from the thesis code's habit: cheap classes at 1, divides more expensive.
    let x0: Vec<f64> = present
        .iter()
        .map(|&i| match model.classes[i].name.as_str() {
            "DIV" => 4.0,
            "LOAD" => 2.0,
            _ => 1.0,
        })
        .map(|v: f64| v.clamp(opts.cpi_min, opts.cpi_max))
        .collect();
    let residual_rows = |free: &[f64]| -> Vec<f64> {
        let c = full(free);
        rows.iter()
            .zip(&y)
            .map(|(r, yi)| model.cycles_with(&sets, r, &c, sched) - yi)
            .collect()
    };
    let mut evals = 0usize;
    let mut f = |x: &[f64]| sse_of(x);
    let mut local = |f: &mut dyn FnMut(&[f64]) -> f64, x: &[f64]| {
        let m = nelder_mead(f, x, &bounds, 0.5, 1e-12, 60 * (n + 1));
        let p = gauss_newton(&residual_rows, &m.x, &bounds, 30);
        let fp = sse_of(&p.0);
        if fp < m.f {
            Minimum {
                x: p.0,
                f: fp,
                evaluations: m.evaluations + p.1,
            }
        } else {
            m
        }
    };
    let hop = HopOptions {
        hops: opts.hops,
        step: opts.step,
        seed: opts.seed,
        temperature: 0.5,
    };
    let best = if n == 0 {
        Minimum {
            x: vec![],
            f: sse_of(&[]),
            evaluations: 1,
        }
    } else {
        basin_hopping(&mut f, &mut local, &x0, &bounds, &hop)
    };
    evals += best.evaluations;
    let mut c = full(&best.x);
    // Classes whose CPI changes no variant's modelled cycles are not identifiable.
    let mut non_contributing = Vec::new();
    for &i in &present {
        let base: Vec<f64> = rows.iter().map(|r| model.cycles_of(r, &c, sched)).collect();
        let mut up = c.clone();
        up[i] *= 1.0 + 1e-6;
        let moved = rows
            .iter()
            .zip(&base)
            .any(|(r, b)| (model.cycles_of(r, &up, sched) - b).abs() > 1e-9 * b.abs().max(1.0));
        if !moved {
            c[i] = opts.cpi_min;
            non_contributing.push(model.classes[i].name.clone());
        }
    }
    let mut residuals = Vec::with_capacity(variants.len());
    let mut sse = 0.0;
    for (v, r) in variants.iter().zip(&rows) {
        let counts: ClassCounts = v.counts.clone();
        let cpi_named: Cpis = model
            .classes
            .iter()
            .zip(&c)
            .map(|(cl, &x)| (cl.name.clone(), x))
            .collect();
        let a = model.allocate(&counts, &cpi_named, sched)?;
        let m = model.cycles_of(r, &c, sched);
        sse += (m - v.cycles_per_iter).powi(2);
        residuals.push(Residual {
            name: v.name.clone(),
            measured: v.cycles_per_iter,
            modelled: m,
            error_pct: (m - v.cycles_per_iter) / v.cycles_per_iter * 100.0,
            binding_port: a.binding_port,
        });
    }
    let mean_y = y.iter().sum::<f64>() / y.len() as f64;
    let sst: f64 = y.iter().map(|v| (v - mean_y).powi(2)).sum();
    let abs: Vec<f64> = residuals.iter().map(|r| r.error_pct.abs()).collect();
    Ok(CpiFit {
        port_model: model.id.clone(),
        cpi: model
            .classes
            .iter()
            .zip(&c)
            .map(|(cl, &x)| (cl.name.clone(), x))
            .collect(),
        fitted: present
            .iter()
            .map(|&i| model.classes[i].name.clone())
            .collect(),
        non_contributing,
        absent: (0..k)
            .filter(|i| !present.contains(i))
            .map(|i| model.classes[i].name.clone())
            .collect(),
        sse,
        rmse: (sse / y.len() as f64).sqrt(),
        r2: if sst > 0.0 { 1.0 - sse / sst } else { f64::NAN },
        mean_abs_pct: abs.iter().sum::<f64>() / abs.len() as f64,
        max_abs_pct: abs.iter().copied().fold(0.0, f64::max),
        residuals,
        options: opts.clone(),
        evaluations: evals,
    })
}

/// Projected Gauss-Newton on residuals `r(x)`: the Jacobian by forward differences (exact for
/// the piecewise-linear port model away from kinks), variables at a bound whose step points
/// outwards are held fixed. Returns the point and the evaluations used.
fn gauss_newton(
    r: &dyn Fn(&[f64]) -> Vec<f64>,
    x0: &[f64],
    b: &Bounds,
    iters: usize,
) -> (Vec<f64>, usize) {
    let n = x0.len();
    let mut x = x0.to_vec();
    let mut rx = r(&x);
    let mut evals = 1;
    let ss = |v: &[f64]| v.iter().map(|e| e * e).sum::<f64>();
    for _ in 0..iters {
        let f0 = ss(&rx);
        if f0 < 1e-26 {
            break;
        }
        let mut jac = vec![vec![0.0; n]; rx.len()];
        for j in 0..n {
            let h = 1e-7 * x[j].abs().max(1.0);
            let mut xp = x.clone();
            xp[j] += h;
            let rp = r(&xp);
            evals += 1;
            for (row, (a, b0)) in jac.iter_mut().zip(rp.iter().zip(&rx)) {
                row[j] = (a - b0) / h;
            }
        }
        // Gradient of 0.5|r|^2 and the free set.
        let grad: Vec<f64> = (0..n)
            .map(|j| jac.iter().zip(&rx).map(|(row, e)| row[j] * e).sum())
            .collect();
        let free: Vec<usize> = (0..n)
            .filter(|&j| {
                !((x[j] <= b.lo[j] && grad[j] > 0.0) || (x[j] >= b.hi[j] && grad[j] < 0.0))
            })
            .collect();
        if free.is_empty() {
            break;
        }
        let m = free.len();
        let mut a = vec![vec![0.0; m]; m];
        let mut g = vec![0.0; m];
        for (p, &i) in free.iter().enumerate() {
            g[p] = -grad[i];
            for (q, &j) in free.iter().enumerate() {
                a[p][q] = jac.iter().map(|row| row[i] * row[j]).sum::<f64>();
            }
            a[p][p] += 1e-12 * (1.0 + a[p][p]);
        }
        let Some(step) = solve(a, g) else { break };
        let mut t = 1.0;
        let mut improved = false;
        for _ in 0..20 {
            let mut xn = x.clone();
            for (p, &i) in free.iter().enumerate() {
                xn[i] += t * step[p];
            }
            b.clamp(&mut xn);
            let rn = r(&xn);
            evals += 1;
            if ss(&rn) < f0 {
                x = xn;
                rx = rn;
                improved = true;
                break;
            }
            t *= 0.5;
        }
        if !improved {
            break;
        }
    }
    (x, evals)
}

/// A row of a variants CSV: a name, class counts and, when measured, cycles per iteration.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CountsRow {
    /// Variant name.
    pub name: String,
    /// Class counts per iteration.
    pub counts: ClassCounts,
    /// Measured cycles per iteration (empty for a target to predict).
    pub cycles_per_iter: Option<f64>,
}

/// Reads a variants CSV: a `name` (or `variant`) column, an optional `cycles_per_iter` column
/// (empty cells allowed for targets) and one column per class of `model`. Other columns
/// listed in `passthrough` (e.g. `arch`, `isa`, `compiler`) are ignored; any other column is
/// an error naming the model's classes.
pub fn rows_from_csv(text: &str, origin: &str, model: &PortModel) -> Result<Vec<CountsRow>> {
    let passthrough = [
        "config_id",
        "arch",
        "isa",
        "compiler",
        "simd_width",
        "kernel",
        "notes",
    ];
    let c = crate::csv::Csv::parse(text, origin)?;
    let name_col = c
        .column("name")
        .or_else(|| c.column("variant"))
        .ok_or_else(|| {
            c.error_at(
                0,
                c.headers.len(),
                format!(
                    "no 'name' column in header '{}'; add one naming each variant",
                    c.headers.join(",")
                ),
            )
        })?;
    let cyc = c.column("cycles_per_iter");
    let mut class_cols = Vec::new();
    for (j, h) in c.headers.iter().enumerate() {
        if j == name_col || Some(j) == cyc || passthrough.iter().any(|p| h.eq_ignore_ascii_case(p))
        {
            continue;
        }
        let class = h.to_ascii_uppercase();
        if class != crate::ports::OTHER && model.class_index(&class).is_err() {
            return Err(ModelError::Csv {
                origin: origin.to_string(),
                line: 1,
                column: j + 1,
                message: format!(
                    "column '{h}' is neither a class of port model '{}' ({}) nor one of name, cycles_per_iter, {}; rename or remove it",
                    model.id,
                    model.class_names().join(", "),
                    passthrough.join(", ")
                ),
            });
        }
        class_cols.push((j, class));
    }
    if class_cols.is_empty() {
        return Err(c.error_at(
            0,
            c.headers.len(),
            format!(
                "no class columns; add columns named after the classes: {}",
                model.class_names().join(", ")
            ),
        ));
    }
    let mut out = Vec::new();
    let mut names: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for r in 0..c.rows.len() {
        let name = c.text(r, name_col).to_string();
        if let Some(first) = names.insert(name.clone(), r) {
            return Err(c.error_at(
                r,
                name_col,
                format!(
                    "variant '{name}' appears twice (also on line {}): a duplicated row would count as another variant",
                    first + 2
                ),
            ));
        }
        let mut counts = ClassCounts::new();
        for (j, class) in &class_cols {
            let v = if c.text(r, *j).is_empty() {
                0.0
            } else {
                c.number(r, *j)?
            };
            if v < 0.0 {
                return Err(c.error_at(r, *j, format!("count of {class} must be >= 0, got {v}")));
            }
            counts.insert(class.clone(), v);
        }
        let cycles_per_iter = match cyc {
            Some(j) if !c.text(r, j).is_empty() => {
                let v = c.number(r, j)?;
                if v <= 0.0 {
                    return Err(c.error_at(
                        r,
                        j,
                        format!("cycles_per_iter must be positive, got {v}"),
                    ));
                }
                Some(v)
            }
            _ => None,
        };
        out.push(CountsRow {
            name: c.text(r, name_col).to_string(),
            counts,
            cycles_per_iter,
        });
    }
    Ok(out)
}

/// The measured rows of a variants CSV as fitting input.
pub fn measured(rows: &[CountsRow]) -> Vec<Variant> {
    rows.iter()
        .filter_map(|r| {
            r.cycles_per_iter.map(|c| Variant {
                name: r.name.clone(),
                counts: r.counts.clone(),
                cycles_per_iter: c,
            })
        })
        .collect()
}
