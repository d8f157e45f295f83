//! What identifies the machine a run ran on. Runs on different fingerprints are not compared
//! unless asked: a new CPU, kernel, frequency governor or machine file is not a code change.

use serde::{Deserialize, Serialize};

use crate::facts;
use crate::hash::sha256_hex;

/// The identity of a machine.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Fingerprint {
    /// CPU model name (`/proc/cpuinfo` "model name", or the architecture).
    pub cpu_model: String,
    /// Logical CPUs available.
    pub cpu_count: u32,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// cpufreq scaling governor of CPU 0, when exposed.
    pub governor: Option<String>,
    /// Name of the hpcscope machine file the run was tied to, if any.
    pub machine_file: Option<String>,
    /// SHA-256 of that machine file's contents.
    pub machine_file_sha256: Option<String>,
    /// Host name. Informative only: it is not part of [`Fingerprint::id`], so identical nodes
    /// of a cluster share a fingerprint.
    pub hostname: Option<String>,
}

impl Fingerprint {
    /// Stable identifier: the first 16 hex digits of the SHA-256 of the identifying fields
    /// (CPU model, CPU count, kernel, governor, machine-file hash).
    pub fn id(&self) -> String {
        let key = format!(
            "cpu={}\ncpus={}\nkernel={}\ngovernor={}\nmachine={}\n",
            self.cpu_model,
            self.cpu_count,
            self.kernel,
            self.governor.as_deref().unwrap_or(""),
            self.machine_file_sha256.as_deref().unwrap_or(""),
        );
        sha256_hex(key.as_bytes())[..16].to_string()
    }

    /// The fields that differ between two fingerprints, as `(field, self, other)`.
    pub fn diff(&self, other: &Fingerprint) -> Vec<(String, String, String)> {
        let mut d = Vec::new();
        let mut cmp = |name: &str, a: String, b: String| {
            if a != b {
                d.push((name.to_string(), a, b));
            }
        };
        cmp("cpu_model", self.cpu_model.clone(), other.cpu_model.clone());
        cmp(
            "cpu_count",
            self.cpu_count.to_string(),
            other.cpu_count.to_string(),
        );
        cmp("kernel", self.kernel.clone(), other.kernel.clone());
        let o = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        cmp("governor", o(&self.governor), o(&other.governor));
        cmp(
            "machine_file",
            o(&self.machine_file),
            o(&other.machine_file),
        );
        cmp(
            "machine_file_sha256",
            o(&self.machine_file_sha256),
            o(&other.machine_file_sha256),
        );
        d
    }

    /// Fingerprint of this machine (fields that cannot be read are left empty).
    pub fn current() -> Fingerprint {
        Fingerprint {
            cpu_model: facts::cpu_model(),
            cpu_count: facts::logical_cpus(),
            kernel: facts::kernel_release().unwrap_or_default(),
            governor: facts::governor(),
            machine_file: None,
            machine_file_sha256: None,
            hostname: facts::hostname().or_else(|| std::env::var("HOSTNAME").ok()),
        }
    }

    /// The fingerprint tied to an hpcscope machine description: its file name and the
    /// contents the caller read (with the input limit: a file is never read here).
    pub fn with_machine_file(mut self, name: &str, contents: &[u8]) -> Fingerprint {
        self.machine_file = Some(name.to_string());
        self.machine_file_sha256 = Some(sha256_hex(contents));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_ignores_the_hostname_and_diff_names_fields() {
        let a = Fingerprint {
            cpu_model: "X".into(),
            cpu_count: 4,
            kernel: "6.1".into(),
            hostname: Some("n1".into()),
            ..Fingerprint::default()
        };
        let mut b = a.clone();
        b.hostname = Some("n2".into());
        assert_eq!(a.id(), b.id());
        assert_eq!(a.id().len(), 16);
        b.kernel = "6.2".into();
        assert_ne!(a.id(), b.id());
        assert_eq!(
            a.diff(&b),
            vec![("kernel".to_string(), "6.1".to_string(), "6.2".to_string())]
        );
        let mut c = a.clone();
        c.governor = Some("powersave".into());
        assert_ne!(a.id(), c.id());
        assert_eq!(a.diff(&c)[0].0, "governor");
        let here = Fingerprint::current();
        assert!(here.cpu_count >= 1 && !here.cpu_model.is_empty());
        let tied = here.clone().with_machine_file("m.toml", b"abc");
        assert_eq!(tied.machine_file.as_deref(), Some("m.toml"));
        assert_eq!(
            tied.machine_file_sha256.as_deref(),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert_ne!(tied.id(), here.id());
    }
}
