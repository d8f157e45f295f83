//! Just enough ELF to relocate link-time addresses: the lowest executable `PT_LOAD` address.
//!
//! `region=` takes addresses as the ELF symbol table gives them. A position-independent
//! executable is loaded at a bias; QEMU reports where the main binary's executable segment
//! starts (`qemu_plugin_start_code`), and the difference with the file's is the bias.

/// Lowest `p_vaddr` of an executable `PT_LOAD` segment of an ELF64 little-endian file.
pub fn exec_segment_start(b: &[u8]) -> Option<u64> {
    if b.len() < 64 || &b[..4] != b"\x7fELF" || b[4] != 2 || b[5] != 1 {
        return None;
    }
    let u16_at = |o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let phentsize = usize::from(u16_at(0x36)?);
    let phnum = usize::from(u16_at(0x38)?);
    (0..phnum)
        .filter_map(|i| {
            let ph = phoff + i * phentsize;
            let (ty, flags) = (u32_at(ph)?, u32_at(ph + 4)?);
            // PT_LOAD with PF_X.
            (ty == 1 && flags & 1 == 1)
                .then(|| u64_at(ph + 0x10))
                .flatten()
        })
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_non_elf() {
        assert_eq!(exec_segment_start(b"not an elf file at all"), None);
    }

    #[test]
    fn reads_a_minimal_header() {
        let mut b = vec![0u8; 64 + 56];
        b[..6].copy_from_slice(b"\x7fELF\x02\x01");
        b[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        b[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        b[64..68].copy_from_slice(&1u32.to_le_bytes());
        b[68..72].copy_from_slice(&5u32.to_le_bytes());
        b[80..88].copy_from_slice(&0x1000u64.to_le_bytes());
        assert_eq!(exec_segment_start(&b), Some(0x1000));
    }
}
