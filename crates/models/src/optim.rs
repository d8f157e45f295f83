//! Small deterministic optimisers: a seeded RNG, bounded Nelder-Mead, basin-hopping
//! (Wales and Doye 1997, as SciPy's `basinhopping`), and non-negative least squares.
//!
//! Seed 003 fitted its CPIs with basin-hopping because the `max` of the port model makes the
//! objective non-differentiable; the same global search drives the scaling-law fits here.

/// SplitMix64: a tiny, portable, seeded generator; the same seed gives the same fit everywhere.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(1e-300);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// Box bounds `lo[i] <= x[i] <= hi[i]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Bounds {
    /// Lower bounds.
    pub lo: Vec<f64>,
    /// Upper bounds.
    pub hi: Vec<f64>,
}

impl Bounds {
    /// Projects `x` into the box.
    pub fn clamp(&self, x: &mut [f64]) {
        for (i, v) in x.iter_mut().enumerate() {
            *v = v.clamp(self.lo[i], self.hi[i]);
        }
    }
}

/// Result of a minimisation.
#[derive(Debug, Clone, PartialEq)]
pub struct Minimum {
    /// The minimiser.
    pub x: Vec<f64>,
    /// The objective there.
    pub f: f64,
    /// Objective evaluations used.
    pub evaluations: usize,
}

/// Bounded Nelder-Mead: the simplex is projected into the box after every move, and the
/// search restarts from its best point while restarts still improve (a simplex collapsed on a
/// bound recovers). Stops when the objective spread is below `ftol` or after `max_evals`.
pub fn nelder_mead(
    f: &mut dyn FnMut(&[f64]) -> f64,
    x0: &[f64],
    bounds: &Bounds,
    step: f64,
    ftol: f64,
    max_evals: usize,
) -> Minimum {
    let mut m = nelder_mead_once(f, x0, bounds, step, ftol, max_evals);
    for _ in 0..4 {
        if m.evaluations >= max_evals {
            break;
        }
        let r = nelder_mead_once(f, &m.x, bounds, step, ftol, max_evals - m.evaluations);
        let evals = m.evaluations + r.evaluations;
        let improved = r.f < m.f - ftol.max(1e-15 * m.f.abs());
        if r.f < m.f {
            m = Minimum {
                evaluations: evals,
                ..r
            };
        } else {
            m.evaluations = evals;
        }
        if !improved {
            break;
        }
    }
    m
}

fn nelder_mead_once(
    f: &mut dyn FnMut(&[f64]) -> f64,
    x0: &[f64],
    bounds: &Bounds,
    step: f64,
    ftol: f64,
    max_evals: usize,
) -> Minimum {
    let n = x0.len();
    let mut evals = 0;
    let mut eval = |x: &[f64], evals: &mut usize| {
        *evals += 1;
        f(x)
    };
    let mut simplex: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
    let mut x = x0.to_vec();
    bounds.clamp(&mut x);
    simplex.push(x.clone());
    for i in 0..n {
        let mut y = x.clone();
        let s = if y[i] + step <= bounds.hi[i] {
            step
        } else {
            -step
        };
        y[i] += s;
        bounds.clamp(&mut y);
        simplex.push(y);
    }
    let mut fs: Vec<f64> = simplex.iter().map(|p| eval(p, &mut evals)).collect();
    while evals < max_evals {
        let mut idx: Vec<usize> = (0..=n).collect();
        idx.sort_by(|&a, &b| fs[a].total_cmp(&fs[b]));
        simplex = idx.iter().map(|&i| simplex[i].clone()).collect();
        fs = idx.iter().map(|&i| fs[i]).collect();
        if (fs[n] - fs[0]).abs() <= ftol {
            break;
        }
        let mut c = vec![0.0; n];
        for p in &simplex[..n] {
            for (ci, pi) in c.iter_mut().zip(p) {
                *ci += pi / n as f64;
            }
        }
        let along = |t: f64| {
            let mut y: Vec<f64> = (0..n).map(|i| c[i] + t * (simplex[n][i] - c[i])).collect();
            bounds.clamp(&mut y);
            y
        };
        let xr = along(-1.0);
        let fr = eval(&xr, &mut evals);
        if fr < fs[0] {
            let xe = along(-2.0);
            let fe = eval(&xe, &mut evals);
            if fe < fr {
                simplex[n] = xe;
                fs[n] = fe;
            } else {
                simplex[n] = xr;
                fs[n] = fr;
            }
        } else if fr < fs[n - 1] {
            simplex[n] = xr;
            fs[n] = fr;
        } else {
            let (xc, fc) = if fr < fs[n] {
                let y = along(-0.5);
                let fy = eval(&y, &mut evals);
                (y, fy)
            } else {
                let y = along(0.5);
                let fy = eval(&y, &mut evals);
                (y, fy)
            };
            if fc < fs[n].min(fr) {
                simplex[n] = xc;
                fs[n] = fc;
            } else {
                for i in 1..=n {
                    let mut y: Vec<f64> = (0..n)
                        .map(|j| simplex[0][j] + 0.5 * (simplex[i][j] - simplex[0][j]))
                        .collect();
                    bounds.clamp(&mut y);
                    fs[i] = eval(&y, &mut evals);
                    simplex[i] = y;
                }
            }
        }
    }
    let best = (0..=n)
        .min_by(|&a, &b| fs[a].total_cmp(&fs[b]))
        .unwrap_or(0);
    Minimum {
        x: simplex[best].clone(),
        f: fs[best],
        evaluations: evals,
    }
}

/// Options of [`basin_hopping`].
#[derive(Debug, Clone, PartialEq)]
pub struct HopOptions {
    /// Random hops after the first local minimisation.
    pub hops: usize,
    /// Half-width of the uniform perturbation of each coordinate.
    pub step: f64,
    /// RNG seed.
    pub seed: u64,
    /// Metropolis temperature as a fraction of the current objective (plus a tiny floor).
    pub temperature: f64,
}

/// Basin-hopping: perturb, minimise locally, accept by the Metropolis rule, keep the best.
/// `local` maps a start point to a local minimum.
#[allow(clippy::type_complexity)] // a local minimiser taking the objective: clearer spelled out
pub fn basin_hopping(
    f: &mut dyn FnMut(&[f64]) -> f64,
    local: &mut dyn FnMut(&mut dyn FnMut(&[f64]) -> f64, &[f64]) -> Minimum,
    x0: &[f64],
    bounds: &Bounds,
    opts: &HopOptions,
) -> Minimum {
    let mut rng = Rng::new(opts.seed);
    let mut cur = local(f, x0);
    let mut best = cur.clone();
    let mut evals = cur.evaluations;
    for _ in 0..opts.hops {
        let mut x = cur.x.clone();
        for v in x.iter_mut() {
            *v += rng.range(-opts.step, opts.step);
        }
        bounds.clamp(&mut x);
        let m = local(f, &x);
        evals += m.evaluations;
        let t = opts.temperature * cur.f.abs() + 1e-300;
        let accept = m.f <= cur.f || rng.uniform() < (-(m.f - cur.f) / t).exp();
        if m.f < best.f {
            best = m.clone();
        }
        if accept {
            cur = m;
        }
    }
    best.evaluations = evals;
    best
}

/// Solves the square system `a x = b` by Gaussian elimination with partial pivoting;
/// `None` when singular.
pub fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let piv = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[piv][col].abs() < 1e-14 {
            return None;
        }
        a.swap(col, piv);
        b.swap(col, piv);
        let (top, rest) = a.split_at_mut(col + 1);
        let pivot_row = &top[col];
        for (k, row) in rest.iter_mut().enumerate() {
            let m = row[col] / pivot_row[col];
            for (x, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                *x -= m * p;
            }
            b[col + 1 + k] -= m * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|c| a[r][c] * x[c]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    Some(x)
}

/// Ordinary least squares `min |X b - y|^2` via the normal equations; rows of `x` are
/// observations. `None` when the columns are linearly dependent.
pub fn least_squares(x: &[Vec<f64>], y: &[f64]) -> Option<Vec<f64>> {
    let k = x.first()?.len();
    let mut a = vec![vec![0.0; k]; k];
    let mut b = vec![0.0; k];
    for (row, &yi) in x.iter().zip(y) {
        for i in 0..k {
            b[i] += row[i] * yi;
            for j in 0..k {
                a[i][j] += row[i] * row[j];
            }
        }
    }
    solve(a, b)
}

/// Non-negative least squares `min |X b - y|^2, b >= 0`, exactly, by trying every support set
/// (fine for the handful of columns of a time decomposition; at most 16 columns).
pub fn nnls(x: &[Vec<f64>], y: &[f64]) -> Option<Vec<f64>> {
    let k = x.first()?.len();
    if k > 16 {
        return None;
    }
    let mut best: Option<(f64, Vec<f64>)> = None;
    for mask in 0u32..(1 << k) {
        let cols: Vec<usize> = (0..k).filter(|i| mask & (1 << i) != 0).collect();
        let mut b = vec![0.0; k];
        if !cols.is_empty() {
            let sub: Vec<Vec<f64>> = x
                .iter()
                .map(|r| cols.iter().map(|&c| r[c]).collect())
                .collect();
            let Some(s) = least_squares(&sub, y) else {
                continue;
            };
            if s.iter().any(|v| *v < -1e-12) {
                continue;
            }
            for (i, &c) in cols.iter().enumerate() {
                b[c] = s[i].max(0.0);
            }
        }
        let rss: f64 = x
            .iter()
            .zip(y)
            .map(|(r, yi)| (r.iter().zip(&b).map(|(a, c)| a * c).sum::<f64>() - yi).powi(2))
            .sum();
        if best.as_ref().is_none_or(|(f, _)| rss < *f - 1e-15) {
            best = Some((rss, b));
        }
    }
    best.map(|(_, b)| b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nelder_mead_finds_a_bounded_minimum() {
        let b = Bounds {
            lo: vec![1.0, -5.0],
            hi: vec![5.0, 5.0],
        };
        let mut f = |x: &[f64]| (x[0] - 0.0).powi(2) + (x[1] - 2.0).powi(2);
        let m = nelder_mead(&mut f, &[3.0, 0.0], &b, 0.5, 1e-14, 5000);
        assert!(
            (m.x[0] - 1.0).abs() < 1e-5 && (m.x[1] - 2.0).abs() < 1e-5,
            "{:?}",
            m.x
        );
    }

    #[test]
    fn basin_hopping_escapes_a_local_minimum() {
        // Two wells: a shallow one at x = -2 and the global one at x = 3.
        let mut f = |x: &[f64]| ((x[0] + 2.0).powi(2) + 0.5).min((x[0] - 3.0).powi(2));
        let b = Bounds {
            lo: vec![-10.0],
            hi: vec![10.0],
        };
        let mut local =
            |f: &mut dyn FnMut(&[f64]) -> f64, x: &[f64]| nelder_mead(f, x, &b, 0.3, 1e-14, 400);
        let o = HopOptions {
            hops: 30,
            step: 4.0,
            seed: 7,
            temperature: 1.0,
        };
        let m = basin_hopping(&mut f, &mut local, &[-2.0], &b, &o);
        assert!((m.x[0] - 3.0).abs() < 1e-4, "{:?}", m.x);
    }

    #[test]
    fn nnls_clips_negative_coefficients() {
        let x = vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![1.0, 1.0]];
        let y = vec![1.0, -1.0, 0.0];
        let b = nnls(&x, &y).unwrap();
        assert!(b[1] == 0.0 && (b[0] - 0.5).abs() < 1e-12, "{b:?}");
    }

    #[test]
    fn rng_is_deterministic() {
        let a: Vec<u64> = (0..3)
            .map({
                let mut r = Rng::new(1);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..3)
            .map({
                let mut r = Rng::new(1);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
    }
}
