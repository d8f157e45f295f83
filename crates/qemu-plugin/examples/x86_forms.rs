//! Every legacy and VEX x86-64 instruction form with one explicit memory operand whose
//! CPUID features QEMU 7.2 emulates with `-cpu max` (SSE to SSE4.2, AVX, AVX2, FMA, F16C,
//! BMI, x87, MMX...), encoded with iced-x86 as `<instruction>; ret` stubs 16 bytes apart
//! with the memory operand at [rdi] (VSIB: [rdi + xmm4/ymm4]).
//!
//! `cargo run -p hpcscope-qemu-plugin --example x86_forms -- OUTDIR` writes
//! `OUTDIR/forms.bin` (the stubs) and `OUTDIR/forms.txt` (offset, iced code, instruction).
//! `bench/mix/x86_forms.sh` runs every stub under QEMU with the plugin's `audit=` and
//! checks that the memory stream carries exactly each form's counted bytes.
//! Control flow, privileged, string, stack, segment, division (which faults on the zeroed
//! buffer) and x87/SSE state instructions are left out.
use iced_x86::*;
use std::io::Write;

/// A register for the `n`-th register operand of kind `kind` (memory-or-register kinds get
/// a register here only when the memory operand is another one).
fn reg_for(kind: OpCodeOperandKind, n: usize) -> Option<Register> {
    use OpCodeOperandKind::*;
    use Register::*;
    let xmm = [XMM1, XMM2, XMM3, XMM5];
    let ymm = [YMM1, YMM2, YMM3, YMM5];
    Some(match kind {
        r8_reg | r8_opcode | r8_or_mem => [CL, DL, BL, R8L][n],
        r16_reg | r16_rm | r16_opcode | r16_reg_mem | r16_or_mem => [CX, DX, BX, R8W][n],
        r32_reg | r32_rm | r32_opcode | r32_vvvv | r32_reg_mem | r32_or_mem => {
            [ECX, EDX, EBX, R8D][n]
        }
        r64_reg | r64_rm | r64_opcode | r64_vvvv | r64_reg_mem | r64_or_mem => {
            [RCX, RDX, RBX, R8][n]
        }
        xmm_reg | xmm_rm | xmm_vvvv | xmm_is4 | xmm_is5 | xmm_or_mem => xmm[n],
        ymm_reg | ymm_rm | ymm_vvvv | ymm_is4 | ymm_is5 | ymm_or_mem => ymm[n],
        mm_reg | mm_rm | mm_or_mem => [MM1, MM2, MM3, MM5][n],
        st0 => ST0,
        al => AL,
        cl => CL,
        ax => AX,
        dx => DX,
        eax => EAX,
        rax => RAX,
        sti_opcode => ST1,
        _ => {
            return Option::None;
        }
    })
}

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".into()));
    std::fs::create_dir_all(&dir).expect("create the output directory");
    let mut blob = Vec::new();
    let mut list = std::fs::File::create(dir.join("forms.txt")).expect("create forms.txt");
    let bad_feat = |f: &CpuidFeature| {
        use CpuidFeature::*;
        !matches!(
            f,
            INTEL8086
                | INTEL186
                | INTEL286
                | INTEL386
                | INTEL486
                | X64
                | CMOV
                | SSE
                | SSE2
                | SSE3
                | SSSE3
                | SSE4_1
                | SSE4_2
                | AVX
                | AVX2
                | FMA
                | F16C
                | BMI1
                | BMI2
                | ADX
                | MOVBE
                | POPCNT
                | LZCNT
                | MMX
                | FPU
                | FPU287
                | FPU387
                | CX8
                | CMPXCHG16B
                | PCLMULQDQ
                | AES
                | CLFSH
                | SHA
                | RDRAND
                | RDSEED
        )
    };
    let mut n = 0;
    for code in Code::values() {
        let oc = code.op_code();
        if !oc.is_instruction()
            || oc.encoding() == EncodingKind::EVEX
            || oc.encoding() == EncodingKind::XOP
            || oc.encoding() == EncodingKind::D3NOW
            || oc.encoding() == EncodingKind::MVEX
        {
            continue;
        }
        if !oc.mode64() || code.cpuid_features().iter().any(bad_feat) {
            continue;
        }
        // one explicit memory operand
        let kinds: Vec<_> = (0..oc.op_count()).map(|i| oc.op_kind(i)).collect();
        use OpCodeOperandKind as K;
        let is_mem = |k: &K| {
            matches!(
                k,
                K::mem
                    | K::mem_vsib32x
                    | K::mem_vsib64x
                    | K::mem_vsib32y
                    | K::mem_vsib64y
                    | K::r8_or_mem
                    | K::r16_or_mem
                    | K::r32_or_mem
                    | K::r64_or_mem
                    | K::mm_or_mem
                    | K::xmm_or_mem
                    | K::ymm_or_mem
            )
        };
        if kinds.iter().filter(|k| is_mem(k)).count() != 1 {
            continue;
        }
        let mut ins = Instruction::default();
        ins.set_code(code);
        let mut ok = true;
        let mut ri = 0;
        for (i, k) in kinds.iter().enumerate() {
            let i = i as u32;
            use OpCodeOperandKind::*;
            match k {
                mem | mem_vsib32x | mem_vsib64x | mem_vsib32y | mem_vsib64y | r8_or_mem
                | r16_or_mem | r32_or_mem | r64_or_mem | mm_or_mem | xmm_or_mem | ymm_or_mem => {
                    ins.set_op_kind(i, OpKind::Memory);
                    ins.set_memory_base(Register::RDI);
                    ins.set_memory_displ_size(0);
                    match k {
                        mem_vsib32x | mem_vsib64x => {
                            ins.set_memory_index(Register::XMM4);
                            ins.set_memory_index_scale(1);
                        }
                        mem_vsib32y | mem_vsib64y => {
                            ins.set_memory_index(Register::YMM4);
                            ins.set_memory_index_scale(1);
                        }
                        _ => {}
                    }
                }
                imm8 | imm8sex16 | imm8sex32 | imm8sex64 | imm8_const_1 => {
                    ins.set_op_kind(i, OpKind::Immediate8);
                    ins.set_immediate8(1);
                }
                imm16 => {
                    ins.set_op_kind(i, OpKind::Immediate16);
                    ins.set_immediate16(1);
                }
                imm32 => {
                    ins.set_op_kind(i, OpKind::Immediate32);
                    ins.set_immediate32(1);
                }
                imm32sex64 => {
                    ins.set_op_kind(i, OpKind::Immediate32to64);
                    ins.set_immediate32(1);
                }
                imm4_m2z => {
                    ins.set_op_kind(i, OpKind::Immediate8);
                    ins.set_immediate8(0);
                }
                _ => match reg_for(*k, ri) {
                    Some(r) => {
                        ins.set_op_kind(i, OpKind::Register);
                        ins.set_op_register(i, r);
                        ri += 1;
                    }
                    Option::None => {
                        ok = false;
                    }
                },
            }
        }
        if !ok {
            continue;
        }
        let mut enc = Encoder::new(64);
        let ip = blob.len() as u64;
        if enc.encode(&ins, ip).is_err() {
            continue;
        }
        let bytes = enc.take_buffer();
        let mut dec = Decoder::with_ip(64, &bytes, ip, DecoderOptions::NONE);
        let d = dec.decode();
        if d.is_invalid()
            || d.flow_control() != FlowControl::Next
            || d.is_privileged()
            || d.is_string_instruction()
        {
            continue;
        }
        let m = format!("{:?}", d.mnemonic());
        if [
            "Div",
            "Idiv",
            "Push",
            "Pop",
            "Enter",
            "Leave",
            "Lfs",
            "Lgs",
            "Lss",
            "Fxrstor",
            "Fxrstor64",
            "Xrstor",
            "Xrstor64",
            "Frstor",
            "Fldenv",
            "Fnrstor",
            "Lds",
            "Les",
            "Mov_sreg",
            "Bound",
            "Clflush",
            "Clflushopt",
            "Fxsave",
            "Fxsave64",
            "Xsave",
            "Xsave64",
            "Xsaveopt",
            "Fnsave",
            "Fnstenv",
            "Fsave",
            "Fstenv",
            "Fldcw",
            "Fnstcw",
            "Fbld",
            "Fbstp",
            "Ldmxcsr",
            "Vldmxcsr",
            "Cmpxchg16b",
            "Lsl",
            "Lar",
            "Verr",
            "Verw",
            "Sldt",
            "Str",
            "Smsw",
            "Sgdt",
            "Sidt",
            "Lmsw",
            "Maskmovq",
            "Maskmovdqu",
            "Vmaskmovdqu",
            "Xlatb",
            "Frstpm",
            "Fnstsw",
        ]
        .contains(&m.as_str())
        {
            continue;
        }
        // stub: insn; ret (pad to 16)
        let start = blob.len();
        blob.extend_from_slice(&bytes);
        blob.push(0xc3);
        while blob.len() % 16 != 0 {
            blob.push(0xcc);
        }
        let mut f = GasFormatter::new();
        let mut s = String::new();
        f.format(&d, &mut s);
        writeln!(list, "{start} {code:?} {s}").unwrap();
        n += 1;
    }
    std::fs::write(dir.join("forms.bin"), &blob).expect("write forms.bin");
    eprintln!("{n} forms, {} bytes", blob.len());
}
