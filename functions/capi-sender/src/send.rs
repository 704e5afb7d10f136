//! One batch, start to end: lease and count each row's attempt, resolve
//! each site's pixel and token once, send by pixel in requests of up to
//! 1,000 events (splitting a rejected request to isolate the invalid
//! event), then record every row's end in DynamoDB and decide each
//! message's fate.

use std::collections::{BTreeMap, HashMap};

use adtrail_domain::capi::{
    Conversion, EventName, Judged, MAX_EVENTS_PER_REQUEST, SEND_LEASE_MS, SendEnd, SendFailure,
    Verdict, doomed, end_of, judge_error,
};
use adtrail_domain::contact::{ContactHashes, sha256_hex};
use adtrail_domain::error_codes::{LastErrorCode, last_error};
use adtrail_domain::money::Currency;
use adtrail_domain::pixels::{PixelSource, pixel_ready};
use adtrail_meta::{CustomData, ServerEvent, UserData};
use adtrail_store::seal::Purpose;
use adtrail_store::sending::{Claim, Finish};
use futures::StreamExt;
use serde::Serialize;
use serde_json::json;

use crate::{Delivery, Disposition, Sender, distinct_rows};

/// Requests to Meta in flight at once.
const SEND_CONCURRENCY: usize = 8;
/// Requests one group may spend isolating invalid events; what is left
/// after is tried again on the next attempt.
const MAX_SPLIT_REQUESTS: usize = 64;

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
}

/// Where a site's events go and with which token.
struct Target {
    pixel_id: String,
    token: String,
    test_event_code: Option<String>,
    country_hash: Option<String>,
    /// Who to stop if Meta refuses the token.
    owner: TokenOwner,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum TokenOwner {
    Connection { owner: String, version: String },
    Pixel { site: String, version: String },
}

struct Job {
    delivery: usize,
    conv: Conversion,
}

impl Sender {
    pub(crate) async fn send_batch(
        &self,
        deliveries: &[Delivery],
    ) -> (Vec<Disposition>, SendReport) {
        let now = self.clock.now_ms();
        let lease_id = uuid::Uuid::new_v4().to_string();
        let mut report = SendReport::default();
        let mut dispositions = vec![Disposition::Done; deliveries.len()];

        let rows = distinct_rows(deliveries);
        let keys: Vec<(String, String)> = rows.keys().cloned().collect();
        let firsts: Vec<usize> = rows.values().map(|idx| idx[0]).collect();
        let claims = match self
            .aws
            .claim_sends(&keys, &lease_id, SEND_LEASE_MS, now)
            .await
        {
            Ok(claims) => claims,
            Err(error) => {
                // Nothing was decided: every message comes back after the
                // queue's visibility timeout.
                tracing::warn!(error = %error, "could not claim the batch's sends");
                for i in firsts {
                    dispositions[i] = Disposition::Retry;
                }
                return (dispositions, report);
            }
        };
        let mut jobs = vec![];
        for (i, claim) in firsts.into_iter().zip(claims) {
            match claim {
                Claim::Claimed(conv) => jobs.push(Job {
                    delivery: i,
                    conv: *conv,
                }),
                Claim::Wait(ms) => {
                    report.waiting += 1;
                    dispositions[i] = Disposition::Later(ms);
                }
                Claim::Gone => report.gone += 1,
            }
        }
        report.claimed = jobs.len();

        let mut verdicts: Vec<Option<Verdict>> = vec![None; jobs.len()];
        // Rows that cannot go whatever Meta says.
        for (j, job) in jobs.iter().enumerate() {
            let c = &job.conv;
            verdicts[j] =
                doomed(c.event_time, c.attempts, c.hashes.is_some(), now).map(Verdict::Failed);
        }

        // Each site's target, once.
        let mut targets: HashMap<String, Result<Target, Verdict>> = HashMap::new();
        for (j, job) in jobs.iter().enumerate() {
            if verdicts[j].is_none() && !targets.contains_key(&job.conv.site_id) {
                let target = self.target(&job.conv.site_id).await;
                targets.insert(job.conv.site_id.clone(), target);
            }
        }
        // Groups: one pixel, one token, one test code.
        let mut groups: BTreeMap<(String, TokenOwner, Option<String>), Vec<usize>> =
            BTreeMap::new();
        for (j, job) in jobs.iter().enumerate() {
            if verdicts[j].is_some() {
                continue;
            }
            match &targets[&job.conv.site_id] {
                Err(v) => verdicts[j] = Some(v.clone()),
                Ok(t) => groups
                    .entry((
                        t.pixel_id.clone(),
                        t.owner.clone(),
                        t.test_event_code.clone(),
                    ))
                    .or_default()
                    .push(j),
            }
        }
        let mut refused: Vec<TokenOwner> = vec![];
        // Every request of the batch, up to SEND_CONCURRENCY in flight.
        let mut requests = vec![];
        for ((_, owner, _), members) in &groups {
            let Ok(target) = &targets[&jobs[members[0]].conv.site_id] else {
                continue;
            };
            for chunk in members.chunks(self.events_per_request.clamp(1, MAX_EVENTS_PER_REQUEST)) {
                let events: Vec<ServerEvent> = chunk
                    .iter()
                    .map(|j| server_event(&jobs[*j].conv, target))
                    .collect();
                requests.push(async move {
                    let (results, made) = self.send_isolating(target, &events).await;
                    (owner, chunk, results, made)
                });
            }
        }
        let sent: Vec<_> = futures::stream::iter(requests)
            .buffer_unordered(SEND_CONCURRENCY)
            .collect()
            .await;
        for (owner, chunk, results, requests) in sent {
            report.requests += requests;
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

        // Record every end; then each message's fate follows what was
        // recorded.
        let finishes: Vec<Finish> = jobs
            .iter()
            .zip(&verdicts)
            .map(|(job, v)| {
                let c = &job.conv;
                let verdict = v
                    .clone()
                    .unwrap_or_else(|| Verdict::unexpected("the event was not sent"));
                Finish {
                    site_id: c.site_id.clone(),
                    sk: c.sk.clone(),
                    event_id: c.event_id.clone(),
                    event_name: c.event_name,
                    end: end_of(verdict, c.attempts, now),
                }
            })
            .collect();
        let applied = match self.aws.finish_sends(&lease_id, &finishes, now).await {
            Ok(a) => a,
            Err(error) => {
                // Nothing recorded: the leases expire and the messages come
                // back after the queue's timeout. An event Meta took is
                // sent again with the same event_id, which Meta
                // deduplicates.
                tracing::error!(error = %error, "could not record the sends");
                for job in &jobs {
                    dispositions[job.delivery] = Disposition::Retry;
                }
                return (dispositions, report);
            }
        };
        let mut failures = vec![];
        for ((job, finish), applied) in jobs.iter().zip(&finishes).zip(applied) {
            if !applied {
                // The lease was lost: another attempt owns the row.
                continue;
            }
            match &finish.end {
                SendEnd::Sent => report.sent += 1,
                SendEnd::Retry { at, .. } => {
                    report.retried += 1;
                    dispositions[job.delivery] = Disposition::Later(at - now);
                }
                SendEnd::Failed { last_error } => {
                    report.failed += 1;
                    failures.push(json!({
                        "siteId": job.conv.site_id,
                        "eventId": job.conv.event_id,
                        "eventName": job.conv.event_name.as_str(),
                        "leadId": job.conv.lead_id,
                        "attempts": job.conv.attempts,
                        "lastError": last_error,
                    }));
                }
            }
        }
        if !failures.is_empty() {
            match self.aws.put_events("ConversionFailed", &failures).await {
                Ok(0) => {}
                Ok(n) => tracing::warn!(refused = n, "EventBridge refused some events"),
                Err(error) => {
                    tracing::warn!(error = %error, "could not put the failures on the bus")
                }
            }
        }
        (dispositions, report)
    }

    /// The site's pixel and its token, or why nothing can go (the
    /// domain's [`pixel_ready`] rule, the API's too).
    async fn target(&self, site: &str) -> Result<Target, Verdict> {
        let store_failed = |e: adtrail_store::StoreError| {
            tracing::warn!(error = %e, "could not read the site's pixel and token");
            Verdict::unexpected("the store could not be read")
        };
        let site_row = match self.aws.get_site(site).await {
            Ok(Some(s)) => s,
            Ok(None) => {
                return Err(Verdict::Failed(last_error(
                    LastErrorCode::PixelUnavailable,
                    "the site is gone",
                )));
            }
            Err(e) => return Err(store_failed(e)),
        };
        let pixel = self.aws.get_pixel(site).await.map_err(store_failed)?;
        let connection = match pixel.as_ref().and_then(|p| p.connection_owner()) {
            Some(owner) => self.aws.get_connection(owner).await.map_err(store_failed)?,
            None => None,
        };
        pixel_ready(pixel.as_ref(), connection.as_ref().map(|c| c.status))
            .map_err(|why| Verdict::Failed(why.last_error()))?;
        // `pixel_ready` answered yes, so there is a pixel.
        let Some(pixel) = pixel else {
            return Err(Verdict::unexpected("the pixel is gone"));
        };
        let unseal_failed = |e: adtrail_store::StoreError| {
            tracing::warn!(error = %e, "could not unseal the token");
            Verdict::unexpected("the sealing key is unavailable")
        };
        let (token, owner) = match &pixel.source {
            PixelSource::Connection { owner_key } => {
                let Some(connection) = connection else {
                    return Err(Verdict::unexpected("the connection is gone"));
                };
                let token = self
                    .aws
                    .unseal(owner_key, Purpose::MetaConnection, &connection.sealed_token)
                    .await
                    .map_err(unseal_failed)?;
                (
                    token,
                    TokenOwner::Connection {
                        owner: owner_key.clone(),
                        version: connection.token_version,
                    },
                )
            }
            PixelSource::Token {
                sealed_token,
                token_version,
                ..
            } => {
                let token = self
                    .aws
                    .unseal(&format!("pixel:{site}"), Purpose::PixelToken, sealed_token)
                    .await
                    .map_err(unseal_failed)?;
                (
                    token,
                    TokenOwner::Pixel {
                        site: site.to_owned(),
                        version: token_version.clone(),
                    },
                )
            }
        };
        Ok(Target {
            pixel_id: pixel.pixel_id,
            token,
            test_event_code: pixel.test_event_code,
            country_hash: site_row.country.map(|c| sha256_hex(&c.to_lowercase())),
            owner,
        })
    }

    /// Sends `events`; a request Meta rejects as invalid is split in halves
    /// until each invalid event stands alone. Answers a verdict per event
    /// and the number of requests made.
    async fn send_isolating(
        &self,
        target: &Target,
        events: &[ServerEvent],
    ) -> (Vec<Verdict>, usize) {
        let mut verdicts: Vec<Option<Verdict>> = vec![None; events.len()];
        let mut ranges = vec![(0, events.len())];
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
            requests += 1;
            let result = self
                .graph
                .send_events(
                    &target.token,
                    &target.pixel_id,
                    &events[lo..hi],
                    target.test_event_code.as_deref(),
                )
                .await;
            let verdict = match result {
                Ok(_) => Verdict::Sent,
                Err(e) => match judge_error(e.kind, e.subcode, &e.message, hi - lo) {
                    Judged::All(v) => v,
                    Judged::Split => {
                        let mid = lo + (hi - lo) / 2;
                        ranges.push((mid, hi));
                        ranges.push((lo, mid));
                        continue;
                    }
                },
            };
            for v in &mut verdicts[lo..hi] {
                *v = Some(verdict.clone());
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

    /// Stops whoever owns a refused token, if it is still the stored one.
    async fn stop_owner(&self, owner: &TokenOwner, now: i64) {
        let error = last_error(
            LastErrorCode::MetaTokenInvalid,
            "Meta refused the token while sending conversions",
        );
        let result = match owner {
            TokenOwner::Connection { owner, version } => {
                match self.aws.stop_connection(owner, version, &error, now).await {
                    Ok(true) => {
                        if let Err(e) = self
                            .aws
                            .put_event(
                                "ConnectionTokenInvalid",
                                &json!({"ownerKey": owner, "lastError": error}),
                            )
                            .await
                        {
                            tracing::warn!(error = %e, "could not put the event on the bus");
                        }
                        Ok(())
                    }
                    Ok(false) => Ok(()),
                    Err(e) => Err(e),
                }
            }
            TokenOwner::Pixel { site, version } => self
                .aws
                .stop_pixel(site, version, &error, now)
                .await
                .map(|_| ()),
        };
        if let Err(error) = result {
            tracing::warn!(error = %error, "could not stop the refused token's owner");
        }
    }
}

/// A row as Meta's wire format has it.
fn server_event(c: &Conversion, target: &Target) -> ServerEvent {
    let country = target.country_hash.clone();
    let hashes = c.hashes.clone().unwrap_or(ContactHashes {
        ph: vec![],
        external_id: None,
    });
    let custom_data = match (c.event_name, c.value_cents, &c.currency) {
        (EventName::Purchase, Some(cents), Some(currency)) => {
            let exponent = Currency::parse(currency).map_or(2, |c| c.exponent());
            Some(CustomData {
                // Shortest round-trip formatting prints the decimal the
                // cents spell (459.9 for 45,990).
                value: cents as f64 / 10f64.powi(exponent as i32),
                currency: currency.clone(),
            })
        }
        _ => None,
    };
    ServerEvent {
        event_name: c.event_name.as_str().to_owned(),
        event_time: c.event_time.div_euclid(1_000),
        event_id: c.event_id.clone(),
        action_source: "chat",
        user_data: UserData {
            ph: hashes.ph,
            external_id: hashes.external_id.into_iter().collect(),
            country: country.into_iter().collect(),
        },
        custom_data,
    }
}
