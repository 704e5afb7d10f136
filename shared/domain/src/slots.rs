//! The dispatcher's walk over a cadence's slots. A link that keeps its
//! cadence sits at a fixed slot of the cycle (its next sync time modulo
//! the cadence); each tick visits the slots whose time came since the last
//! tick's walk, so every such link is found once a cycle, whatever the
//! number of links, and its index entry never moves.

/// Slots to read, inclusive, in the order their times came; `hi: None`
/// runs to the end of the index, which also takes in slots at or past the
/// cadence (left by a longer cadence before an operator shortened it:
/// found once a cycle, at its turn, until their next run places them
/// again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotRange {
    pub lo: i64,
    pub hi: Option<i64>,
}

/// The walk of one tick: from the time the last walk reached (`covered`,
/// exclusive) to `now` (inclusive), never more than one cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotWalk {
    from: i64,
    now: i64,
    cadence: i64,
}

impl SlotWalk {
    /// A walk of a cadence of `cadence` ms (positive). A `covered` at or
    /// after `now` makes an empty walk; one a cycle or more ago, a whole
    /// cycle.
    pub fn new(covered: i64, now: i64, cadence: i64) -> Self {
        let cadence = cadence.max(1);
        Self {
            from: covered.max(now.saturating_sub(cadence)).min(now),
            now,
            cadence,
        }
    }

    /// The ranges of slots the walk reads: none for an empty walk, one,
    /// or two when it passes the end of a cycle.
    pub fn ranges(&self) -> Vec<SlotRange> {
        if self.from >= self.now {
            return vec![];
        }
        let a = self.from.rem_euclid(self.cadence);
        let b = self.now.rem_euclid(self.cadence);
        if a < b {
            vec![SlotRange {
                lo: a + 1,
                hi: Some(b),
            }]
        } else {
            vec![
                SlotRange {
                    lo: a + 1,
                    hi: None,
                },
                SlotRange { lo: 0, hi: Some(b) },
            ]
        }
    }

    /// Where the walk stands after visiting every slot up to `slot` (in the
    /// walk's order) but perhaps not all links at it: the time just before
    /// the slot's, so the next walk reads that slot again. A slot past the
    /// cadence counts as the cycle's end.
    pub fn reached_before(&self, slot: i64) -> i64 {
        let a = self.from.rem_euclid(self.cadence);
        let to_cycle_end = self.cadence - a;
        let offset = if slot > a {
            (slot - a).min(to_cycle_end)
        } else {
            to_cycle_end + slot
        };
        (self.from + offset - 1).clamp(self.from, self.now)
    }

    /// The time the whole walk reaches.
    pub fn end(&self) -> i64 {
        self.now
    }

    /// The time the walk starts after (a cursor before it reads nothing
    /// the walk did not).
    pub fn start(&self) -> i64 {
        self.from
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: i64 = 45;

    /// The slots a walk reads, listed.
    fn slots(walk: &SlotWalk, max: i64) -> Vec<i64> {
        let mut out = vec![];
        for r in walk.ranges() {
            out.extend(r.lo..=r.hi.unwrap_or(max));
        }
        out
    }

    #[test]
    fn a_walk_reads_the_slots_whose_time_came_once_in_their_order() {
        // Ticks at 100, 101, …: each reads the one slot that came.
        assert_eq!(slots(&SlotWalk::new(100, 101, C), C - 1), vec![101 % C]);
        // Ticks a few apart, across a cycle's end (135 = 3 × 45).
        assert_eq!(
            slots(&SlotWalk::new(132, 137, C), C - 1),
            vec![43, 44, 0, 1, 2]
        );
        // Consecutive walks partition time: every slot once a cycle.
        let mut seen = vec![];
        let mut covered = 0;
        for now in [7, 20, 44, 45, 46, 90] {
            seen.extend(slots(&SlotWalk::new(covered, now, C), C - 1));
            covered = now;
        }
        let mut sorted = seen.clone();
        sorted.sort_unstable();
        assert_eq!(sorted.len(), 90);
        assert_eq!(seen.iter().filter(|s| **s == 3).count(), 2, "two cycles");
    }

    #[test]
    fn a_walk_is_never_more_than_a_cycle_and_empty_when_no_time_passed() {
        assert!(SlotWalk::new(500, 500, C).ranges().is_empty());
        assert!(SlotWalk::new(600, 500, C).ranges().is_empty());
        // Hours behind: one cycle, each slot once, oldest first.
        let walk = SlotWalk::new(0, 1_000, C);
        let read = slots(&walk, C - 1);
        assert_eq!(read.len(), C as usize);
        assert_eq!(read[0], (1_000 % C) + 1);
        assert_eq!(*read.last().unwrap(), 1_000 % C);
    }

    #[test]
    fn slots_past_the_cadence_are_read_at_the_cycle_end() {
        let walk = SlotWalk::new(40, 50, C);
        assert_eq!(walk.ranges()[0], SlotRange { lo: 41, hi: None });
        assert_eq!(walk.reached_before(60), 44, "the end of the cycle");
    }

    #[test]
    fn a_walk_cut_short_resumes_at_the_slot_it_stopped_at() {
        let walk = SlotWalk::new(132, 137, C);
        // Stopped at slot 0 (time 135): the next walk starts after 134.
        let at = walk.reached_before(0);
        assert_eq!(at, 134);
        assert_eq!(slots(&SlotWalk::new(at, 137, C), C - 1), vec![0, 1, 2]);
        // Stopped at 43, the first slot: nothing of it was surely done.
        assert_eq!(walk.reached_before(43), 132);
    }
}
