//! The shape of the hierarchy: which level and slot a deadline belongs in,
//! seen from the current tick, and when a slot's span begins.
//!
//! Level 0 has `S = 2^bits0` slots of one tick each (64 to 4,096, the
//! caller's choice) and is a circular window: a timer due at `d` with
//! `now < d < now + S` sits in slot `d mod S`, whichever rotation `d` is in,
//! so a delay shorter than `S` never cascades.
//!
//! Every level above has 64 slots, each as wide as the whole level below it,
//! so level `k ≥ 1` covers bits `bits0 + 6(k-1) .. bits0 + 6k` of a tick.
//! With `bits0 = 12` that is ten levels, and the top one reaches `u64::MAX`:
//! no deadline is out of range, so there is no overflow list and no
//! "rounds". A timer due `S` or more ticks ahead goes on the level of the
//! highest bit in which `d` and `now` differ, its *upper level*: `d` shares
//! every higher digit with `now` and has a larger digit on that level, so
//! its slot is ahead of `now`'s in the current rotation of the level, and
//! the upper level stays the same until `now` reaches the slot's first tick.

/// Slots of every level above the first (`2^UPPER_BITS`).
const UPPER_BITS: u32 = 6;

/// Fewest and most slots of level 0 (as powers of two).
const MIN_BITS0: u32 = 6;
const MAX_BITS0: u32 = 12;

/// See the module docs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geometry {
    /// Level 0 has `2^bits0` slots.
    bits0: u32,
}

impl Geometry {
    /// Level 0 of at least `slots` slots, rounded up to a power of two and
    /// clamped to 64..=4,096.
    pub(crate) fn new(slots: usize) -> Self {
        let bits = slots
            .max(1)
            .checked_next_power_of_two()
            .map_or(usize::BITS, usize::trailing_zeros);
        Geometry {
            bits0: bits.clamp(MIN_BITS0, MAX_BITS0),
        }
    }

    /// Slots of level 0, which is also its span in ticks.
    pub(crate) fn slots0(self) -> usize {
        1 << self.bits0
    }

    /// Levels, the first included: enough for the top one to hold bit 63.
    pub(crate) fn levels(self) -> usize {
        2 + ((63 - self.bits0) / UPPER_BITS) as usize
    }

    /// The lowest bit of `level`'s digit.
    fn shift(self, level: usize) -> u32 {
        match level {
            0 => 0,
            _ => self.bits0 + UPPER_BITS * (level as u32 - 1),
        }
    }

    /// Bits of `level`'s digit.
    fn width(self, level: usize) -> u32 {
        match level {
            0 => self.bits0,
            _ => UPPER_BITS,
        }
    }

    /// The level a timer due at `deadline > now` is linked on when placed at
    /// `now`: 0 within level 0's window, else its upper level.
    pub(crate) fn place(self, now: u64, deadline: u64) -> usize {
        if deadline - now < 1 << self.bits0 {
            0
        } else {
            self.upper_level(now, deadline)
        }
    }

    /// The level of the highest digit in which `now` and `deadline` differ
    /// (0 if they differ only in level 0's digit).
    pub(crate) fn upper_level(self, now: u64, deadline: u64) -> usize {
        let differ = now ^ deadline;
        if differ >> self.bits0 == 0 {
            0
        } else {
            let highest = 63 - differ.leading_zeros();
            1 + ((highest - self.bits0) / UPPER_BITS) as usize
        }
    }

    /// `tick`'s digit on `level`: the slot it falls in.
    pub(crate) fn slot_of(self, level: usize, tick: u64) -> usize {
        let digit = tick >> self.shift(level);
        (digit & ((1 << self.width(level)) - 1)) as usize
    }

    /// The tick level-0 `slot` stands for: the one in `(now, now + S)`.
    pub(crate) fn tick_of(self, now: u64, slot: usize) -> u64 {
        let mask = (1u64 << self.bits0) - 1;
        now + ((slot as u64).wrapping_sub(now) & mask)
    }

    /// The first tick of `slot` on upper `level` in the rotation `now` is in.
    pub(crate) fn slot_start(self, level: usize, now: u64, slot: usize) -> u64 {
        let shift = self.shift(level);
        let above = shift + self.width(level);
        let rotation = if above >= 64 {
            0
        } else {
            now >> above << above
        };
        rotation | (slot as u64) << shift
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_reach_bit_63_for_every_first_level_size() {
        for slots in [1, 64, 100, 1024, 4096, 1 << 20, usize::MAX] {
            let g = Geometry::new(slots);
            let top = g.upper_level(0, u64::MAX);
            assert_eq!(top, g.levels() - 1, "slots {slots}");
            assert!(g.shift(top) + g.width(top) >= 64);
            assert!(g.shift(top) < 64);
        }
        assert_eq!(Geometry::new(1).slots0(), 64);
        assert_eq!(Geometry::new(4096).levels(), 10);
        assert_eq!(Geometry::new(1 << 20).slots0(), 4096);
    }

    #[test]
    fn level_0_is_a_window_and_upper_levels_follow_the_highest_digit() {
        let g = Geometry::new(64);
        assert_eq!(g.place(10, 63), 0);
        assert_eq!(
            g.place(10, 64),
            0,
            "crosses a rotation, still in the window"
        );
        assert_eq!(g.place(10, 74), 1);
        assert_eq!(g.place(0, 4096), 2);
        assert_eq!(
            g.place(4000, 4100),
            2,
            "100 ahead, across a level-2 boundary"
        );
        assert_eq!(g.tick_of(10, 5), 69);
        assert_eq!(g.tick_of(10, 11), 11);
        assert_eq!(g.slot_of(1, 100), 1);
        assert_eq!(g.slot_start(1, 10, 1), 64);
        assert_eq!(g.slot_start(2, 5000, 3), 3 * 4096);
        let top = g.levels() - 1;
        assert_eq!(g.slot_start(top, 1, g.slot_of(top, u64::MAX)), 15 << 60);
        assert_eq!(g.tick_of(u64::MAX - 1, g.slot_of(0, u64::MAX)), u64::MAX);
    }
}
