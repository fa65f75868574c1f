//! Which slots hold anything: one bit per slot, so that the wheel finds the
//! next non-empty slot with a few `trailing_zeros` instead of walking empty
//! slots one tick at a time. This is what makes a jump far into the future
//! cost O(levels) per occupied slot rather than O(ticks).
//!
//! Level 0 (up to 4,096 slots) has a word per 64 slots and a summary word
//! with a bit per non-empty word; every upper level (64 slots) has one word.

/// See the module docs. Bit `s` of a level is set iff slot `s`'s list is
/// non-empty; the wheel keeps that true on every link and unlink.
#[derive(Debug)]
pub(crate) struct Occupancy {
    /// Level 0: bit `s % 64` of word `s / 64`.
    first: Box<[u64]>,
    /// Bit `w` set iff `first[w] != 0`.
    summary: u64,
    /// Levels 1.. (index `level - 1`).
    upper: Box<[u64]>,
}

/// The bits of `word` strictly above bit `bit`.
fn above(word: u64, bit: usize) -> u64 {
    word & u64::MAX.checked_shl(bit as u32 + 1).unwrap_or(0)
}

impl Occupancy {
    pub(crate) fn new(slots0: usize, levels: usize) -> Self {
        Occupancy {
            first: vec![0; slots0.div_ceil(64)].into_boxed_slice(),
            summary: 0,
            upper: vec![0; levels - 1].into_boxed_slice(),
        }
    }

    pub(crate) fn set(&mut self, level: usize, slot: usize) {
        if level == 0 {
            self.first[slot / 64] |= 1 << (slot % 64);
            self.summary |= 1 << (slot / 64);
        } else {
            self.upper[level - 1] |= 1 << slot;
        }
    }

    pub(crate) fn clear(&mut self, level: usize, slot: usize) {
        if level == 0 {
            let word = &mut self.first[slot / 64];
            *word &= !(1 << (slot % 64));
            if *word == 0 {
                self.summary &= !(1 << (slot / 64));
            }
        } else {
            self.upper[level - 1] &= !(1 << slot);
        }
    }

    #[cfg(test)]
    pub(crate) fn is_set(&self, level: usize, slot: usize) -> bool {
        match level {
            0 => self.first[slot / 64] & 1 << (slot % 64) != 0,
            _ => self.upper[level - 1] & 1 << slot != 0,
        }
    }

    /// The first occupied slot of level 0 after `slot`, going round: level
    /// 0 is a window, so the slots before `now`'s digit are the next
    /// rotation's.
    pub(crate) fn first_after_wrapping(&self, slot: usize) -> Option<usize> {
        self.first_after(0, slot).or_else(|| {
            (self.summary != 0).then(|| {
                let word = self.summary.trailing_zeros() as usize;
                word * 64 + self.first[word].trailing_zeros() as usize
            })
        })
    }

    /// The first occupied slot of `level` after `slot` (exclusive). On an
    /// upper level the slots at or before `now`'s digit are empty (see
    /// `geometry.rs`).
    pub(crate) fn first_after(&self, level: usize, slot: usize) -> Option<usize> {
        if level > 0 {
            let bits = above(self.upper[level - 1], slot);
            return (bits != 0).then(|| bits.trailing_zeros() as usize);
        }
        let word = slot / 64;
        let bits = above(self.first[word], slot % 64);
        if bits != 0 {
            return Some(word * 64 + bits.trailing_zeros() as usize);
        }
        let words = above(self.summary, word);
        (words != 0).then(|| {
            let word = words.trailing_zeros() as usize;
            word * 64 + self.first[word].trailing_zeros() as usize
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_next_set_bit_across_words_and_levels() {
        let mut o = Occupancy::new(4096, 10);
        assert_eq!(o.first_after(0, 0), None);
        o.set(0, 5);
        o.set(0, 700);
        o.set(0, 4095);
        assert_eq!(o.first_after(0, 0), Some(5));
        assert_eq!(o.first_after(0, 5), Some(700));
        assert_eq!(o.first_after(0, 63), Some(700));
        assert_eq!(o.first_after(0, 700), Some(4095));
        assert_eq!(o.first_after(0, 4095), None);
        o.clear(0, 700);
        assert_eq!(o.first_after(0, 5), Some(4095));
        assert_eq!(o.first_after_wrapping(4095), Some(5));
        assert_eq!(o.first_after_wrapping(3000), Some(4095));
        o.clear(0, 5);
        o.clear(0, 4095);
        assert_eq!(o.first_after_wrapping(3000), None);
        o.set(9, 63);
        assert_eq!(o.first_after(9, 62), Some(63));
        assert_eq!(o.first_after(9, 63), None);
        o.clear(9, 63);
        assert_eq!(o.first_after(9, 0), None);
    }
}
