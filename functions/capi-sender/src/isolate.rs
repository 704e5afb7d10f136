//! One request to a platform and what each of its events became: a
//! request the platform rejects whole for one invalid event is split in
//! halves until that event stands alone (the domain judges), and a
//! per-event answer (Pinterest's) gives each event its own verdict.

use adtrail_domain::capi::{Conversion, Judged, Verdict};

use crate::Sender;
use crate::adapters::Adapter;
use crate::targets::Target;

/// Requests one group may spend isolating invalid events; what is left
/// after is tried again on the next attempt.
const MAX_SPLIT_REQUESTS: usize = 64;

impl Sender {
    /// Sends `rows` to `target` through its platform's adapter; a request
    /// rejected as invalid is split in halves until each invalid event
    /// stands alone. A half that could not end before `deadline` (with
    /// the time to record it) is not sent: its rows are given back.
    /// Answers a verdict per row and the requests made.
    pub(crate) async fn send_isolating(
        &self,
        adapter: &dyn Adapter,
        target: &Target,
        rows: &[&Conversion],
        deadline: Option<u64>,
    ) -> (Vec<Verdict>, usize) {
        let mut verdicts: Vec<Option<Verdict>> = vec![None; rows.len()];
        let mut ranges = vec![(0, rows.len())];
        let mut requests = 0;
        while let Some((lo, hi)) = ranges.pop() {
            if requests >= MAX_SPLIT_REQUESTS {
                for v in &mut verdicts[lo..hi] {
                    *v = Some(Verdict::unexpected(
                        "too many invalid events to isolate at once",
                    ));
                }
                continue;
            }
            // The first request was checked by the caller; a half comes
            // after at least one request's time.
            if requests > 0 && !self.time_for_a_request(deadline) {
                for v in &mut verdicts[lo..hi] {
                    *v = Some(Verdict::NotSent);
                }
                continue;
            }
            requests += 1;
            match adapter.send(target, &rows[lo..hi]).await {
                Judged::All(verdict) => {
                    for v in &mut verdicts[lo..hi] {
                        *v = Some(verdict.clone());
                    }
                }
                Judged::PerEvent(each) if each.len() == hi - lo => {
                    for (v, e) in verdicts[lo..hi].iter_mut().zip(each) {
                        *v = Some(e);
                    }
                }
                Judged::PerEvent(_) => {
                    for v in &mut verdicts[lo..hi] {
                        *v = Some(Verdict::unexpected(
                            "the platform answered for another number of events",
                        ));
                    }
                }
                Judged::Split => {
                    let mid = lo + (hi - lo) / 2;
                    ranges.push((mid, hi));
                    ranges.push((lo, mid));
                }
            }
        }
        (
            verdicts
                .into_iter()
                .map(|v| v.unwrap_or(Verdict::Sent))
                .collect(),
            requests,
        )
    }
}
