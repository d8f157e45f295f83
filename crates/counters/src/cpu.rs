//! CPU identification from `/proc/cpuinfo` text: x86 vendor, family and model, or the Arm
//! MIDR implementer and part; matched against recipes' `[[recipe.cpus]]`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What identifies a CPU model.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuId {
    /// `GenuineIntel`, `AuthenticAMD`, `arm`, or empty.
    pub vendor: String,
    /// x86 family.
    pub family: Option<u32>,
    /// x86 model.
    pub model: Option<u32>,
    /// x86 stepping.
    pub stepping: Option<u32>,
    /// Arm implementer.
    pub implementer: Option<u32>,
    /// Arm part.
    pub part: Option<u32>,
    /// Marketing name when given.
    pub model_name: String,
    /// Whether the kernel reports running under a hypervisor.
    pub hypervisor: bool,
    /// The feature flags (`flags` on x86, `Features` on Arm), as the kernel spells them.
    pub flags: Vec<String>,
}

fn num(v: &str) -> Option<u32> {
    let v = v.trim();
    if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()
    } else {
        v.parse().ok()
    }
}

/// Which CPUs a recipe is for.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuMatch {
    /// `GenuineIntel`, `AuthenticAMD`, or `arm` (any Arm implementer).
    pub vendor: String,
    /// x86 family.
    #[serde(default)]
    pub family: Option<u32>,
    /// x86 models.
    #[serde(default)]
    pub models: Vec<u32>,
    /// Arm MIDR implementer.
    #[serde(default)]
    pub implementer: Option<u32>,
    /// Arm MIDR part numbers.
    #[serde(default)]
    pub parts: Vec<u32>,
}

impl CpuId {
    /// Reads `/proc/cpuinfo` of this machine (or the file `HPCSCOPE_CPUINFO` names: see
    /// [`hpcscope_host::facts::cpuinfo`]).
    pub fn detect() -> CpuId {
        CpuId::from_cpuinfo(&hpcscope_host::facts::cpuinfo())
    }

    /// Parses `/proc/cpuinfo` text (the first processor's block).
    pub fn from_cpuinfo(text: &str) -> CpuId {
        let mut c = CpuId::default();
        for line in text.lines() {
            if line.trim().is_empty() && (c.family.is_some() || c.part.is_some()) {
                break;
            }
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let (k, v) = (k.trim(), v.trim());
            match k {
                "vendor_id" => c.vendor = v.to_string(),
                "cpu family" => c.family = num(v),
                "model" => c.model = num(v),
                "stepping" => c.stepping = num(v),
                "model name" => c.model_name = v.to_string(),
                "CPU implementer" => {
                    c.implementer = num(v);
                    c.vendor = "arm".into();
                }
                "CPU part" => c.part = num(v),
                "flags" | "Features" if c.flags.is_empty() => {
                    c.flags = v.split_whitespace().map(str::to_string).collect();
                    c.hypervisor = c.has("hypervisor");
                }
                _ => {}
            }
        }
        c
    }

    /// Whether the CPU reports a feature flag (`avx512f`, `amx_tile`, `sve2`).
    pub fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    /// Whether a recipe's CPU entry matches.
    pub fn matches(&self, m: &CpuMatch) -> bool {
        if m.vendor == "arm" {
            return self.vendor == "arm"
                && m.implementer.is_some()
                && m.implementer == self.implementer
                && (m.parts.is_empty() || self.part.is_some_and(|p| m.parts.contains(&p)));
        }
        m.vendor == self.vendor
            && (m.family.is_none() || m.family == self.family)
            && (m.models.is_empty() || self.model.is_some_and(|x| m.models.contains(&x)))
    }
}

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.vendor == "arm" {
            write!(
                f,
                "Arm implementer {:#04x}, part {:#05x}",
                self.implementer.unwrap_or(0),
                self.part.unwrap_or(0)
            )?;
        } else if self.vendor.is_empty() {
            f.write_str("unknown CPU")?;
        } else {
            write!(
                f,
                "{} family {} model {:#04x}",
                self.vendor,
                self.family.unwrap_or(0),
                self.model.unwrap_or(0)
            )?;
        }
        if !self.model_name.is_empty() {
            write!(f, " \"{}\"", self.model_name)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_and_arm() {
        let x = CpuId::from_cpuinfo(
            "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R) Platinum 8260 CPU @ 2.40GHz\nstepping\t: 7\nflags\t\t: fpu avx512f hypervisor\n\nprocessor\t: 1\n",
        );
        assert_eq!(
            (x.family, x.model, x.stepping),
            (Some(6), Some(85), Some(7))
        );
        assert!(x.hypervisor);
        assert!(x.has("avx512f") && x.has("fpu") && !x.has("amx_tile"));
        assert!(x.to_string().contains("model 0x55"));
        let a = CpuId::from_cpuinfo(
            "processor\t: 0\nBogoMIPS\t: 200.00\nFeatures\t: fp asimd sve\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd40\nCPU revision\t: 1\n",
        );
        assert_eq!((a.implementer, a.part), (Some(0x41), Some(0xd40)));
        let m = CpuMatch {
            vendor: "arm".into(),
            family: None,
            models: vec![],
            implementer: Some(0x41),
            parts: vec![0xd40],
        };
        assert!(a.matches(&m));
        assert!(!x.matches(&m));
    }
}
