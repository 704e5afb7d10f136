//! The sender's time: how many rows a batch claims, a slice at a time,
//! and whether a request may still start, so that what it claims is sent
//! and recorded before Lambda's deadline. Rows it has no time for go back
//! to the queue unclaimed (deferred) or with their attempt given back.

use std::time::{Duration, Instant, SystemTime};

use adtrail_domain::capi::SEND_LEASE_MS;
use adtrail_store::sending::Claim;

use crate::send::{Batch, Job};
use crate::{Delivery, Disposition, Sender, distinct_rows};

/// What a batch needs after its last request: recording every row's end
/// and answering Lambda.
pub const RECORD_MARGIN: Duration = Duration::from_secs(10);
/// Rows claimed at a time: between two slices the sender checks that it
/// can still send and record what it claims before its deadline.
pub const CLAIM_SLICE: usize = 500;

impl Sender {
    /// Leases and counts the attempt of each distinct row, a slice of
    /// [`CLAIM_SLICE`] at a time while the invocation has the time to send
    /// and record what it claims: recording takes about what claiming did
    /// (0.6 to 1.3 times, in the fault run's batches on moto), so a slice
    /// starts only if its own claiming (the slices' average so far), a
    /// request, the recording of every slice with it and the margin all
    /// fit before `deadline` ([`slice_and_record`]). The rows left are
    /// deferred (back on the queue at once): a batch larger than one
    /// invocation can work, on a slow day for DynamoDB, is worked in part
    /// rather than claimed whole and handed back unsent. `None` when
    /// nothing was claimed.
    pub(crate) async fn claim(
        &self,
        deliveries: &[Delivery],
        lease_id: &str,
        now: i64,
        deadline: Option<u64>,
        batch: &mut Batch,
    ) -> Option<Vec<Job>> {
        let rows: Vec<((String, String), Vec<usize>)> =
            distinct_rows(deliveries).into_iter().collect();
        let started = Instant::now();
        let mut jobs = vec![];
        for (n, slice) in rows.chunks(CLAIM_SLICE).enumerate() {
            let firsts = |from: usize| rows[from..].iter().map(|(_, idx)| idx[0]);
            if !self.time_left(deadline, slice_and_record(started.elapsed(), n)) {
                for i in firsts(n * CLAIM_SLICE) {
                    batch.report.deferred += 1;
                    batch.dispositions[i] = Disposition::Later(0);
                }
                break;
            }
            let keys: Vec<(String, String)> = slice.iter().map(|(k, _)| k.clone()).collect();
            let claims = match self
                .store
                .conversions()
                .claim_sends(&keys, lease_id, SEND_LEASE_MS, now)
                .await
            {
                Ok(claims) => claims,
                Err(error) => {
                    // Nothing of this slice or after it is decided: back
                    // after the queue's timeout. What was claimed goes on.
                    tracing::warn!(error = %error, "could not claim the batch's sends");
                    for i in firsts(n * CLAIM_SLICE) {
                        batch.dispositions[i] = Disposition::Retry;
                    }
                    break;
                }
            };
            for ((_, idx), claim) in slice.iter().zip(claims) {
                let i = idx[0];
                match claim {
                    Claim::Claimed(conv) => jobs.push(Job {
                        delivery: i,
                        conv: *conv,
                    }),
                    Claim::Wait(ms) => {
                        batch.report.waiting += 1;
                        batch.dispositions[i] = Disposition::Later(ms);
                    }
                    Claim::Gone => batch.report.gone += 1,
                }
            }
        }
        batch.report.claimed = jobs.len();
        (!jobs.is_empty()).then_some(jobs)
    }

    /// Whether a request started now ends, at Meta's timeout, with time
    /// left to record it before `deadline`.
    pub(crate) fn time_for_a_request(&self, deadline: Option<u64>) -> bool {
        self.time_left(deadline, Duration::ZERO)
    }

    /// Whether a request started now, `extra` more and the margin to
    /// record all end before `deadline` (none: always).
    fn time_left(&self, deadline: Option<u64>, extra: Duration) -> bool {
        let Some(deadline) = deadline else {
            return true;
        };
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let done = now + self.graph.config().timeout + RECORD_MARGIN + extra;
        u64::try_from(done.as_millis()).unwrap_or(u64::MAX) < deadline
    }
}

/// What starting one more claim slice commits to beyond a request and
/// the margin, after `done` slices took `claimed`: the slice itself (their
/// average) and the recording of all `done + 1`, taken to be as long as
/// their claiming. Nothing before the first: it always starts.
fn slice_and_record(claimed: Duration, done: usize) -> Duration {
    if done == 0 {
        return Duration::ZERO;
    }
    let done = u32::try_from(done).unwrap_or(u32::MAX);
    let slice = claimed / done;
    slice + (claimed + slice)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_commits_its_own_time_and_the_recording_of_all() {
        let s = Duration::from_secs;
        assert_eq!(slice_and_record(s(0), 0), s(0), "the first always starts");
        // One slice in 15 s: the next takes 15 more, and recording both 30.
        assert_eq!(slice_and_record(s(15), 1), s(45));
        // Two in 20 s: 10 more, and 30 to record the three.
        assert_eq!(slice_and_record(s(20), 2), s(40));
    }
}
