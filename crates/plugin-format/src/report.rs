//! The JSON report the plugin writes at exit (`out=`; the format is documented in the
//! plugin's README): its format tag, and the typed report with the keys hpcscope reads.
//!
//! The plugin writes more keys than these types carry (the target, the scopes, the vector
//! length's source, a few counters no command reports); readers ignore them. The plugin's
//! tests read its report back with [`PluginOutput`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Format tag of the report; bumped only on incompatible changes (new keys are not).
pub const FORMAT: &str = "hpcscope-qemu-plugin/1";

/// What the plugin writes at exit (`out=`), the fields mix reads.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PluginOutput {
    /// `hpcscope-qemu-plugin/1`.
    #[serde(default)]
    pub format: String,
    /// SVE vector length used, bits.
    #[serde(default)]
    pub sve_vl_bits: Option<u32>,
    /// How predicated lanes were counted: `full_lanes` (plugin API v1) or `active_lanes`
    /// (API v4, SVE).
    #[serde(default)]
    pub predication: Option<String>,
    /// The plugin API the plugin was built for, and the one QEMU ran (absent from plugins
    /// before these keys).
    #[serde(default)]
    pub plugin_api: Option<u32>,
    /// The plugin API version of the QEMU that ran.
    #[serde(default)]
    pub qemu_plugin_api: Option<u32>,
    /// Load bias of the main binary.
    #[serde(default)]
    pub load_bias: u64,
    /// How executions were counted: `inline` (one guest thread all along) or `per_vcpu`.
    #[serde(default)]
    pub counting: Option<String>,
    /// Totals of the counted regions, all threads.
    pub totals: Totals,
    /// Counts of each guest thread (start order; thread 0 is the main thread).
    #[serde(default)]
    pub threads: Vec<ThreadCounts>,
    /// Counts per region (one per function counted with `--function`, in order), total
    /// and per thread.
    #[serde(default)]
    pub regions: Vec<RegionCounts>,
    /// Executions the plugin could not count (more translation blocks than its counters
    /// hold; 0 normally).
    #[serde(default)]
    pub lost_executions: u64,
    /// Processes the program forked (a shell's commands among them): the plugin left them
    /// out of the counts and the stream, what they ran under QEMU and, after an exec,
    /// what they ran then.
    #[serde(default)]
    pub forked_processes: u64,
    /// Stream statistics.
    #[serde(default)]
    pub mem_stream: Option<StreamStats>,
    /// Per translation block counts (with `tbs=on`).
    #[serde(default)]
    pub tbs: Vec<TbCounts>,
}

/// Counts of one guest thread.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ThreadCounts {
    /// Thread number in start order (0: the main thread).
    pub thread: u32,
    /// QEMU vCPU index it ran on (reused after a thread exits).
    pub vcpu: u32,
    /// Its counts.
    pub totals: Totals,
}

/// Counts of one region (`region=` range of the plugin).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RegionCounts {
    /// Run-time start address.
    pub start: u64,
    /// Run-time end address (exclusive).
    pub end: u64,
    /// All threads.
    #[serde(default)]
    pub totals: Totals,
    /// Per thread.
    #[serde(default)]
    pub threads: Vec<ThreadCounts>,
}

/// Totals of the counted region.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Totals {
    /// Instructions.
    pub instructions: u64,
    /// Instructions that load.
    pub loads: u64,
    /// Instructions that store.
    pub stores: u64,
    /// Bytes loaded.
    pub bytes_loaded: u64,
    /// Bytes stored.
    pub bytes_stored: u64,
    /// Of the bytes loaded and stored, those counted from QEMU's access reports (string
    /// instructions with `rep`, masked stores, gathers, `xsave`).
    #[serde(default)]
    pub bytes_dynamic: u64,
    /// Of the bytes loaded and stored, those of accesses QEMU does not report to plugins
    /// (SVE loads and stores, DC ZVA, in QEMU 7.2): absent from the memory stream.
    #[serde(default)]
    pub bytes_unreported: u64,
    /// FP arithmetic instructions.
    pub fp_instructions: u64,
    /// FLOPs.
    pub flops: u64,
    /// Lane FLOPs left out by the rule for reductions and unused lanes.
    #[serde(default)]
    pub flops_excluded: u64,
    /// Fused multiply-add instructions.
    #[serde(default)]
    pub fma_instructions: u64,
    /// FP instructions and FLOPs per precision and width (`f64_256`...).
    #[serde(default)]
    pub fp_by_width: BTreeMap<String, WidthCounts>,
    /// Loads and stores per access width in bits (`8` ... `2048`, `other`), from each
    /// instruction's memory operands. Only bytes known from the encoding are split; those
    /// counted from QEMU's access reports are `bytes_dynamic`. Absent from plugins before
    /// this key.
    #[serde(default)]
    pub mem_by_width: BTreeMap<String, MemWidthCounts>,
    /// Instructions per class.
    #[serde(default)]
    pub classes: BTreeMap<String, u64>,
    /// Other instructions (integer and the rest; register moves not counted) on the
    /// longest loop-carried dependency chains of the loops, once per iteration: one core
    /// cycle each. Written when not 0 (the native engine's count).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chain_other: u64,
    /// Iterations of the loops whose dependency chains are counted (`chain` of
    /// `fp_by_width`, `chain_other`). Written when not 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chain_iterations: u64,
    /// Iterations of loops whose dependency chains are not counted (the native engine
    /// built the loop's exit before it saw the loop, so it cannot tell the loop's entries).
    /// Written when not 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chain_iterations_left_out: u64,
}

/// FP instructions and FLOPs of one precision and width.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WidthCounts {
    /// Instructions.
    pub instructions: u64,
    /// FLOPs.
    pub flops: u64,
    /// Of `instructions`, the FP divides (`div*`): instructions, whatever their lanes or
    /// mask. Written when not 0; 0 in reports from before this key.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub div: u64,
    /// Of `instructions`, the FP square roots (`sqrt*`; reciprocal square-root estimates
    /// are not FP instructions), counted as `div`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sqrt: u64,
    /// Of `instructions`, those on the longest loop-carried dependency chain of their loop,
    /// by operation, once per iteration (docs/projection.md, "The dependency chain").
    /// Written when not empty.
    #[serde(default, skip_serializing_if = "ChainCounts::is_empty")]
    pub chain: ChainCounts,
}

/// FP instructions on loops' loop-carried dependency chains, by operation.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainCounts {
    /// Adds and subtracts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub add: u64,
    /// Multiplies.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mul: u64,
    /// Fused multiply-adds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fma: u64,
    /// Divides.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub div: u64,
    /// Square roots.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sqrt: u64,
}

impl ChainCounts {
    /// Whether every count is 0.
    pub fn is_empty(&self) -> bool {
        self.add + self.mul + self.fma + self.div + self.sqrt == 0
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Loads and stores of one access width.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemWidthCounts {
    /// Executions of instructions loading at this width.
    #[serde(default)]
    pub loads: u64,
    /// Their bytes.
    #[serde(default)]
    pub bytes_loaded: u64,
    /// Executions of instructions storing at this width.
    #[serde(default)]
    pub stores: u64,
    /// Their bytes.
    #[serde(default)]
    pub bytes_stored: u64,
}

/// Stream statistics.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StreamStats {
    /// Records written.
    pub records: u64,
    /// Records dropped.
    pub dropped: u64,
    /// Whether QEMU's translated code wrote the records (QEMU built by
    /// scripts/build-qemu.sh), rather than a plugin callback per access.
    #[serde(default)]
    pub inline: bool,
    /// Buffers of those records that overflowed before the plugin emptied them (records
    /// lost; 0 normally).
    #[serde(default)]
    pub overflowed_buffers: u64,
    /// Executions of instructions whose accesses the stream leaves out (the native
    /// engine: `xsave`, `repe cmps`/`scas`; 0 normally).
    #[serde(default)]
    pub unstreamed: u64,
}

/// Counts of one translation block.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TbCounts {
    /// Start address (run time).
    pub pc: u64,
    /// Executions.
    pub executions: u64,
    /// Instructions executed.
    pub instructions: u64,
    /// FP instructions executed.
    pub fp_instructions: u64,
    /// FLOPs.
    pub flops: u64,
    /// Load instructions.
    pub loads: u64,
    /// Store instructions.
    pub stores: u64,
    /// Bytes loaded.
    pub bytes_loaded: u64,
    /// Bytes stored.
    pub bytes_stored: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divides_and_square_roots_are_written_when_there_are_some() {
        // A report from before the keys: both 0.
        let old: WidthCounts =
            serde_json::from_str(r#"{"instructions": 4, "flops": 8}"#).expect("old entry");
        assert_eq!((old.instructions, old.div, old.sqrt), (4, 0, 0));
        let none = serde_json::to_value(&old).expect("JSON");
        assert_eq!(none, serde_json::json!({"instructions": 4, "flops": 8}));
        let some = WidthCounts {
            div: 3,
            sqrt: 1,
            ..old
        };
        let v = serde_json::to_value(&some).expect("JSON");
        assert_eq!(
            v,
            serde_json::json!({"instructions": 4, "flops": 8, "div": 3, "sqrt": 1})
        );
        let back: WidthCounts = serde_json::from_value(v).expect("new entry");
        assert_eq!((back.div, back.sqrt), (3, 1));
    }
}
