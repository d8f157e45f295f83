//! The FLOP rule for horizontal and reduction operations on x86-64
//! (`docs/flop-counting.md`), applied to the plugin's classification of a translation block.
//! The rule itself is `hpcscope_x86_lanes`, which the DynamoRIO client applies too, so that
//! both engines count alike.

use iced_x86::Instruction;

use super::{FpOp, InsnInfo};

/// Sets `counted_lanes` of the FP instructions of one block that the rule applies to.
pub fn adjust(insns: &[Instruction], infos: &mut [InsnInfo]) {
    let fps: Vec<Option<hpcscope_x86_lanes::Fp>> = infos
        .iter()
        .map(|i| {
            i.fp.filter(|f| !f.active_lanes)
                .map(|f| hpcscope_x86_lanes::Fp {
                    element_bits: f.precision.bits(),
                    vector_bits: f.vector_bits,
                    fma: f.op == FpOp::Fma,
                })
        })
        .collect();
    let counted = hpcscope_x86_lanes::counted_lanes(insns, &fps);
    for (info, c) in infos.iter_mut().zip(counted) {
        if let Some(fp) = info.fp.as_mut() {
            fp.counted_lanes = c;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::isa::Classifier;
    use crate::isa::x86_64::{TABLE, X86_64};

    /// FLOPs per instruction of a block given as hex encodings (from `as` + `objdump`).
    fn flops(block: &[&str]) -> Vec<u32> {
        let c = X86_64::new(TABLE).expect("table");
        let bytes: Vec<Vec<u8>> = block
            .iter()
            .map(|h| {
                h.split_whitespace()
                    .map(|b| u8::from_str_radix(b, 16).expect("hex"))
                    .collect()
            })
            .collect();
        let refs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
        c.classify_block(&refs)
            .iter()
            .map(|i| i.fp.map_or(0, |f| f.flops()))
            .collect()
    }

    #[test]
    fn sse2_reduction_tail_of_an_accumulator_counts_nothing() {
        // movapd %xmm2,%xmm1; unpckhpd %xmm2,%xmm1; addpd %xmm2,%xmm1 (xmm2 from the loop)
        assert_eq!(
            flops(&["66 0f 28 ca", "66 0f 15 ca", "66 0f 58 ca"]),
            [0, 0, 0]
        );
    }

    #[test]
    fn horizontal_sum_of_block_values_counts_its_useful_lane() {
        // movupd (%rdi),%xmm2; mulpd %xmm2,%xmm2; then the same tail: x0*x0 + x1*x1 is
        // 2 multiplies and 1 add; the add's upper lane (x1*x1 + x1*x1) does not count.
        let f = flops(&[
            "66 0f 10 17",
            "66 0f 59 d2",
            "66 0f 28 ca",
            "66 0f 15 ca",
            "66 0f 58 ca",
        ]);
        assert_eq!(f, [0, 2, 0, 0, 1]);
    }

    #[test]
    fn haddpd_of_one_register() {
        // haddpd %xmm0,%xmm0: of an accumulator, 0; of a loaded value, the one distinct sum.
        assert_eq!(flops(&["66 0f 7c c0"]), [0]);
        assert_eq!(flops(&["66 0f 10 07", "66 0f 7c c0"]), [0, 1]);
    }

    #[test]
    fn avx2_reduction_tail_counts_nothing() {
        // vextractf128 $1,%ymm1,%xmm3; vaddpd %xmm1,%xmm3,%xmm2; vunpckhpd %xmm2,%xmm2,%xmm0;
        // vaddpd %xmm2,%xmm0,%xmm0
        let f = flops(&[
            "c4 e3 7d 19 cb 01",
            "c5 e1 58 d1",
            "c5 e9 15 c2",
            "c5 f9 58 c2",
        ]);
        assert_eq!(f, [0, 0, 0, 0]);
    }

    #[test]
    fn partial_sums_in_several_accumulators_are_part_of_the_tail() {
        // clang: four ymm accumulators added pairwise, then the horizontal tail.
        let f = flops(&[
            "c5 f5 58 cb",
            "c5 fd 58 c2",
            "c5 fd 58 c1",
            "c4 e3 7d 19 c1 01",
            "c5 f9 58 c1",
            "c4 e3 79 05 c8 01",
            "c5 fb 58 c1",
        ]);
        assert_eq!(f, [0; 7]);
    }

    #[test]
    fn adding_two_values_from_before_the_block_counts() {
        // addpd %xmm1,%xmm0 with nothing combining it afterwards.
        assert_eq!(flops(&["66 0f 58 c1"]), [2]);
    }

    #[test]
    fn a_square_through_a_copy_counts_every_lane() {
        // movapd %xmm0,%xmm1; mulpd %xmm0,%xmm1
        assert_eq!(flops(&["66 0f 28 c8", "66 0f 59 c8"]), [0, 2]);
    }

    #[test]
    fn a_lane_overwritten_unread_does_not_count() {
        // clang: [dx*dx, dy*dy] of which only dy*dy is kept (unpckhpd %xmm0,%xmm0), dx*dx
        // recomputed in scalar; then xmm0 is zeroed.
        let f = flops(&[
            "66 0f 28 c3",
            "66 0f 59 c3",
            "66 0f 15 c0",
            "66 0f 28 cb",
            "f2 0f 59 cb",
            "f2 0f 58 c8",
            "f2 0f 11 0f",
            "66 0f 57 c0",
        ]);
        assert_eq!(f, [0, 1, 0, 0, 1, 1, 0, 0]);
    }

    #[test]
    fn identical_lanes_count_once() {
        // vbroadcastsd (%rdi),%ymm0; vmulpd %ymm0,%ymm0,%ymm1: four times the same square.
        assert_eq!(flops(&["c4 e2 7d 19 07", "c5 fd 59 c8"]), [0, 1]);
    }

    #[test]
    fn avx512_reduction_tail_counts_nothing() {
        // gcc 12 -O3 -ffast-math -march=x86-64-v4 -mprefer-vector-width=512, a dot product's
        // tail after its zmm FMA loop: vextractf64x4 $1,%zmm1,%ymm3; mov; vaddpd
        // %ymm1,%ymm3,%ymm0; and; vaddpd %ymm3,%ymm1,%ymm1 (the remainder loop's
        // accumulator); mov; vextractf64x2 $1,%ymm0,%xmm2; vaddpd %xmm0,%xmm2,%xmm2;
        // vunpckhpd %xmm2,%xmm2,%xmm0; vaddpd %xmm2,%xmm0,%xmm0; cmp; je.
        let f = flops(&[
            "62 f3 fd 48 1b cb 01",
            "48 89 c8",
            "c5 e5 58 c1",
            "48 83 e0 f8",
            "c5 f5 58 cb",
            "48 89 c7",
            "62 f3 fd 28 19 c2 01",
            "c5 e9 58 d0",
            "c5 e9 15 c2",
            "c5 f9 58 c2",
            "48 39 c1",
            "0f 84 84 00 00 00",
        ]);
        assert_eq!(f, [0; 12]);
        // The float sum's: vextractf32x8, vextractf128, vmovhlps and vshufps $0x55.
        let f = flops(&[
            "62 f3 7d 48 1b cb 01",
            "c5 e4 58 d1",
            "c5 f4 58 cb",
            "c4 e3 7d 19 d0 01",
            "c5 f8 58 c2",
            "c5 f8 12 d0",
            "c5 e8 58 d0",
            "c5 e8 c6 c2 55",
            "c5 f8 58 c2",
        ]);
        assert_eq!(f, [0; 9]);
    }

    #[test]
    fn avx512_partial_sums_and_a_zmm_wide_tail_count_nothing() {
        // clang 14, the same sum: four zmm accumulators added pairwise, then
        // vextractf64x4 $1,%zmm0,%ymm1 and a 512-bit vaddpd %zmm1,%zmm0,%zmm0 (its upper
        // lanes add zeros), vextractf128, vaddpd, vpermilpd $1, vaddsd.
        let f = flops(&[
            "62 f1 f5 48 58 cb",
            "62 f1 fd 48 58 c2",
            "62 f1 fd 48 58 c1",
            "62 f3 fd 48 1b c1 01",
            "62 f1 fd 48 58 c1",
            "c4 e3 7d 19 c1 01",
            "c5 f9 58 c1",
            "c4 e3 79 05 c8 01",
            "c5 fb 58 c1",
        ]);
        assert_eq!(f, [0; 9]);
    }

    #[test]
    fn avx512_loop_body_counts_every_lane() {
        // vmovupd (%rsi,%rax,1),%zmm4; vfmadd231pd (%rdx,%rax,1),%zmm4,%zmm1: 8 lanes x 2.
        assert_eq!(
            flops(&["62 f1 fd 48 10 24 06", "62 f2 dd 48 b8 0c 02"]),
            [0, 16]
        );
    }

    #[test]
    fn avx512_shuffles_of_blocks_follow_their_lanes() {
        // vshuff64x2 $0x4e,%zmm0,%zmm0,%zmm1 swaps zmm0's 256-bit halves; vaddpd
        // %zmm1,%zmm0,%zmm0 then adds lane i to lane i+4 of one accumulator: a tail.
        assert_eq!(
            flops(&["62 f3 fd 48 23 c8 4e", "62 f1 fd 48 58 c1"]),
            [0, 0]
        );
        // Of a loaded value, a horizontal step counts: its 8 lanes are 4 distinct sums
        // (lane i and lane i+4 add the same pair), counted once each.
        assert_eq!(
            flops(&[
                "62 f1 fd 48 10 07",
                "62 f3 fd 48 23 c8 4e",
                "62 f1 fd 48 58 c1",
            ]),
            [0, 0, 4]
        );
    }

    #[test]
    fn an_avx512_instruction_under_a_mask_counts_every_lane() {
        // vmovupd (%rdi),%zmm0; vshuff64x2 $0x4e,%zmm0,%zmm0,%zmm1;
        // vaddpd %zmm1,%zmm0,%zmm0{%k1}: merge masking is not modelled, every lane counts.
        assert_eq!(
            flops(&[
                "62 f1 fd 48 10 07",
                "62 f3 fd 48 23 c8 4e",
                "62 f1 fd 49 58 c1",
            ]),
            [0, 0, 8]
        );
    }

    #[test]
    fn identical_lanes_stay_identical_through_arithmetic() {
        // hpcc's FFTE (gcc 12 -O3 -march=x86-64-v3), the complex products of its zfft1d:
        // vpermilpd $0x0,(%rsi),%ymm7; vpermilpd $0xf,(%r10),%ymm9; vpermilpd
        // $0xf,(%rsi),%ymm5; vpermilpd $0x0,(%r10),%ymm0 (each real or imaginary part in
        // two lanes); vmulpd %ymm7,%ymm9,%ymm6 (2 distinct products); vfmadd231pd
        // %ymm0,%ymm5,%ymm6 (2 distinct sums: its inputs' lanes are pairwise identical);
        // vmovupd %ymm6,(%rax).
        let f = flops(&[
            "c4 e3 7d 05 3e 00",
            "c4 43 7d 05 0a 0f",
            "c4 e3 7d 05 2e 0f",
            "c4 c3 7d 05 02 00",
            "c5 b5 59 f7",
            "c4 e2 d5 b8 f0",
            "c5 fd 11 30",
        ]);
        assert_eq!(f, [0, 0, 0, 0, 2, 4, 0]);
    }
}
