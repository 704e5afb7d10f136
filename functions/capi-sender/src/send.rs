//! One batch, start to end, in five phases: claim (lease and count each
//! row's attempt), prejudge (rows that cannot go whatever Meta says), send
//! (each site's target once, requests of up to 1,000 events by pixel and
//! token, a refused token's owner stopped), record (every row's end in
//! DynamoDB, each message's fate from what was recorded) and announce
//! (failures on the bus).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use adtrail_domain::capi::{
    Conversion, SEND_LEASE_MS, SendEnd, SendFailure, Verdict, doomed, end_of,
};
use adtrail_domain::destinations::PIXEL_SLUG;
use adtrail_domain::error_codes::LastErrorCode;
use adtrail_domain::telemetry::{
    CONVERSIONS_FAILED, CONVERSIONS_RETRIED, CONVERSIONS_SENT, PLATFORM_REQUESTS,
};
use adtrail_store::sending::Finish;
use adtrail_store::sites::Site;
use futures::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};

use crate::adapters::Adapter;
use crate::targets::{Target, TargetKey, TokenOwner};
use crate::{Delivery, Disposition, Sender};

/// Requests to Meta in flight at once.
const SEND_CONCURRENCY: usize = 8;
/// What a batch keeps after recording: the hundred rows being written
/// when recording stops, the failures' announcement, the messages' holds
/// and the answer to Lambda.
const LAST_WORDS: Duration = Duration::from_secs(5);

/// What one batch did, for the log and the tests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendReport {
    pub claimed: usize,
    pub sent: usize,
    pub retried: usize,
    pub failed: usize,
    pub waiting: usize,
    pub gone: usize,
    pub requests: usize,
    /// Rows no request carried because the deadline came first: their
    /// attempt given back, their messages back on the queue at once.
    pub released: usize,
    /// Rows not even claimed: the deadline was too near to send them.
    /// Their messages are back on the queue at once, for an invocation
    /// with the time.
    pub deferred: usize,
    /// Rows whose end was not recorded: the deadline came first. Their
    /// messages come back when their lease ends.
    pub unrecorded: usize,
    /// Milliseconds each phase took: claiming, sending (with grouping and
    /// stopping refused tokens' owners) and recording. What the deadline
    /// arithmetic assumes about them is checked against these.
    pub claim_ms: u64,
    pub send_ms: u64,
    pub record_ms: u64,
}

/// A claimed row and the message that named it.
pub(crate) struct Job {
    pub(crate) delivery: usize,
    pub(crate) conv: Conversion,
}

/// What the batch answers: each message's fate, and the figures.
pub(crate) struct Batch {
    pub(crate) dispositions: Vec<Disposition>,
    pub(crate) report: SendReport,
}

/// One account (with its test mode), one set of credentials: the events
/// of a group share requests.
type GroupKey = (String, TokenOwner);

impl Sender {
    /// `deadline`: the invocation's end, in Unix milliseconds of the wall
    /// clock (Lambda's), if any.
    pub(crate) async fn send_batch(
        &self,
        deliveries: &[Delivery],
        deadline: Option<u64>,
    ) -> (Vec<Disposition>, SendReport) {
        let now = self.clock.now_ms();
        let lease_id = uuid::Uuid::new_v4().to_string();
        let mut batch = Batch {
            dispositions: vec![Disposition::Done; deliveries.len()],
            report: SendReport::default(),
        };
        let phase = Instant::now();
        let claimed = self
            .claim(deliveries, &lease_id, now, deadline, &mut batch)
            .await;
        batch.report.claim_ms = ms_since(phase);
        if let Some(jobs) = claimed {
            let mut verdicts = prejudge(&jobs, now);
            let phase = Instant::now();
            self.send(&jobs, &mut verdicts, now, deadline, &mut batch.report)
                .await;
            batch.report.send_ms = ms_since(phase);
            let phase = Instant::now();
            let failures = self
                .record(&jobs, &verdicts, &lease_id, (now, deadline), &mut batch)
                .await;
            batch.report.record_ms = ms_since(phase);
            self.announce(failures).await;
        }
        (batch.dispositions, batch.report)
    }

    /// Sends every row not judged yet, by group, up to
    /// [`SEND_CONCURRENCY`] requests in flight; stops the owner of a token
    /// Meta refused. A request that could not end before the invocation's
    /// deadline is not started: its rows are not sent.
    async fn send(
        &self,
        jobs: &[Job],
        verdicts: &mut [Option<Verdict>],
        now: i64,
        deadline: Option<u64>,
        report: &mut SendReport,
    ) {
        let (targets, groups) = self.group(jobs, verdicts).await;
        let mut requests = vec![];
        for ((_, owner), members) in &groups {
            let Ok(target) = &targets[&target_key(&jobs[members[0]].conv)] else {
                continue;
            };
            // `group` kept only targets with an adapter.
            let Some(adapter) = self.adapter(target.account.platform()) else {
                continue;
            };
            let per_request = self.events_per_request.clamp(1, adapter.max_events());
            let platform = target.account.platform().as_str();
            let adapter: std::sync::Arc<dyn Adapter + '_> = adapter.into();
            for chunk in members.chunks(per_request) {
                let adapter = adapter.clone();
                requests.push(async move {
                    if !self.time_for_a_request(deadline) {
                        return (
                            owner,
                            chunk,
                            vec![Verdict::NotSent; chunk.len()],
                            0,
                            platform,
                        );
                    }
                    let rows: Vec<&Conversion> = chunk.iter().map(|j| &jobs[*j].conv).collect();
                    let (results, made) = self
                        .send_isolating(adapter.as_ref(), target, &rows, deadline)
                        .await;
                    (owner, chunk, results, made, platform)
                });
            }
        }
        let sent: Vec<_> = futures::stream::iter(requests)
            .buffer_unordered(SEND_CONCURRENCY)
            .collect()
            .await;
        let mut refused: Vec<TokenOwner> = vec![];
        for (owner, chunk, results, made, platform) in sent {
            report.requests += made;
            metrics::counter!(PLATFORM_REQUESTS, "Platform" => platform).increment(made as u64);
            for (j, v) in chunk.iter().zip(results) {
                if matches!(v, Verdict::Attempt(SendFailure::TokenInvalid, _))
                    && !refused.contains(owner)
                {
                    refused.push(owner.clone());
                }
                verdicts[*j] = Some(v);
            }
        }
        for owner in refused {
            self.stop_owner(&owner, now).await;
        }
    }

    /// Each target (a site's pixel, or a destination), once, the site read
    /// once for all of them, and the rows by group; a row whose target
    /// cannot send gets its verdict here.
    async fn group(
        &self,
        jobs: &[Job],
        verdicts: &mut [Option<Verdict>],
    ) -> (
        HashMap<TargetKey, Result<Target, Verdict>>,
        BTreeMap<GroupKey, Vec<usize>>,
    ) {
        let mut sites: HashMap<String, Result<Option<Site>, Verdict>> = HashMap::new();
        let mut targets: HashMap<TargetKey, Result<Target, Verdict>> = HashMap::new();
        for (j, job) in jobs.iter().enumerate() {
            let key = target_key(&job.conv);
            if verdicts[j].is_some() || targets.contains_key(&key) {
                continue;
            }
            if !sites.contains_key(&key.0) {
                let site = self.read_site(&key.0).await;
                sites.insert(key.0.clone(), site);
            }
            let target = match &sites[&key.0] {
                Err(v) => Err(v.clone()),
                Ok(site) => self.target(&key.0, site.as_ref(), key.1.as_deref()).await,
            };
            targets.insert(key, target);
        }
        let mut groups: BTreeMap<GroupKey, Vec<usize>> = BTreeMap::new();
        for (j, job) in jobs.iter().enumerate() {
            if verdicts[j].is_some() {
                continue;
            }
            match &targets[&target_key(&job.conv)] {
                Err(v) => verdicts[j] = Some(v.clone()),
                Ok(t) => groups.entry(t.group()).or_default().push(j),
            }
        }
        (targets, groups)
    }

    /// Records every row's end, or as many as it can before the deadline
    /// less [`LAST_WORDS`]; each message's fate follows what was recorded.
    /// Answers the failures to announce.
    async fn record(
        &self,
        jobs: &[Job],
        verdicts: &[Option<Verdict>],
        lease_id: &str,
        (now, deadline): (i64, Option<u64>),
        batch: &mut Batch,
    ) -> Vec<Value> {
        let finishes = finishes_of(jobs, verdicts, now);
        let stop = deadline.and_then(|d| {
            adtrail_http::deadline::Deadline::from_lambda_ms(d, LAST_WORDS).map(|d| d.instant())
        });
        let applied = match self
            .store
            .conversions()
            .finish_sends(lease_id, &finishes, now, stop)
            .await
        {
            Ok(a) => a,
            Err(error) => {
                // Nothing recorded: the leases expire and the messages come
                // back after the queue's timeout. An event Meta took is
                // sent again with the same event_id, which Meta
                // deduplicates.
                tracing::error!(error = %error, "could not record the sends");
                for job in jobs {
                    batch.dispositions[job.delivery] = Disposition::Retry;
                }
                return vec![];
            }
        };
        let mut failures = vec![];
        for ((job, finish), applied) in jobs.iter().zip(&finishes).zip(applied) {
            match applied {
                Some(true) => {}
                // The lease was lost: another attempt owns the row.
                Some(false) => continue,
                // Not recorded before the deadline: the row keeps its
                // lease, and its message comes back when the lease ends,
                // to be taken over (Lambda ending the batch mid-write
                // would have left the same, every message back at once,
                // and the function failed).
                None => {
                    batch.report.unrecorded += 1;
                    batch.dispositions[job.delivery] = Disposition::Later(SEND_LEASE_MS);
                    continue;
                }
            }
            adtrail_store::telemetry::note("siteIds", &job.conv.site_id);
            failures.extend(count_end(job, &finish.end, now, batch));
        }
        failures
    }

    /// Puts `ConversionFailed` on the bus, without contact data.
    async fn announce(&self, failures: Vec<Value>) {
        if failures.is_empty() {
            return;
        }
        match self
            .store
            .bus()
            .put_events("ConversionFailed", &failures)
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::warn!(refused = n, "EventBridge refused some events"),
            Err(error) => tracing::warn!(error = %error, "could not put the failures on the bus"),
        }
    }
}

/// Each row's end as the store records it (a row no verdict reached was
/// not sent: an unexpected failure, retried like one).
fn finishes_of(jobs: &[Job], verdicts: &[Option<Verdict>], now: i64) -> Vec<Finish> {
    jobs.iter()
        .zip(verdicts)
        .map(|(job, v)| {
            let c = &job.conv;
            let verdict = v
                .clone()
                .unwrap_or_else(|| Verdict::unexpected("the event was not sent"));
            Finish::of(c, end_of(verdict, c.attempts, c.unsure, now))
        })
        .collect()
}

/// Counts a recorded end in the batch's report and metrics, sets its
/// message's fate, and answers the `ConversionFailed` detail of a failure.
fn count_end(job: &Job, end: &SendEnd, now: i64, batch: &mut Batch) -> Option<Value> {
    match end {
        SendEnd::Sent => {
            batch.report.sent += 1;
            metrics::counter!(CONVERSIONS_SENT).increment(1);
            None
        }
        SendEnd::Released => {
            batch.report.released += 1;
            batch.dispositions[job.delivery] = Disposition::Later(0);
            None
        }
        SendEnd::Retry { at, .. } => {
            batch.report.retried += 1;
            metrics::counter!(CONVERSIONS_RETRIED).increment(1);
            batch.dispositions[job.delivery] = Disposition::Later(at - now);
            None
        }
        SendEnd::Failed { last_error } => {
            batch.report.failed += 1;
            // Once in total (the alarm's rate) and once by reason.
            let reason = LastErrorCode::of(last_error).as_str();
            metrics::counter!(CONVERSIONS_FAILED).increment(1);
            metrics::counter!(CONVERSIONS_FAILED, "Reason" => reason).increment(1);
            Some(json!({
                "siteId": job.conv.site_id,
                "eventId": job.conv.event_id,
                "eventName": job.conv.event_name.as_str(),
                "destination": job.conv.destination.as_deref().unwrap_or(PIXEL_SLUG),
                "leadId": job.conv.lead_id,
                "attempts": job.conv.attempts,
                "lastError": last_error,
            }))
        }
    }
}

fn ms_since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Rows that cannot go whatever Meta says (the domain's `doomed`).
fn prejudge(jobs: &[Job], now: i64) -> Vec<Option<Verdict>> {
    jobs.iter()
        .map(|job| {
            let c = &job.conv;
            doomed(c, c.attempts, c.unsure, now).map(Verdict::Failed)
        })
        .collect()
}

/// Where a row goes: its site, and its destination (`None`: the pixel).
fn target_key(c: &Conversion) -> TargetKey {
    (c.site_id.clone(), c.destination.clone())
}
