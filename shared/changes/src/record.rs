//! One lead change, decided and written: again from fresh reads when it
//! raced another change of the same lead, at most [`MAX_TRIES`] times.

use adtrail_domain::SiteId;
use adtrail_domain::leadads::meta_lead_id;
use adtrail_domain::leads::{
    Lead, LeadContext, LeadInput, LeadTargets, LeadUpdate, LeadWrite, NewLead, decide,
    once_per_lead,
};
use adtrail_domain::time::Clock;
use adtrail_store::outbox::LeadWritten;
use adtrail_store::queue::SendMessage;
use adtrail_store::{Store, StoreError};

use crate::outbox::{enqueue, targets};

/// Tries of a change that raced another change of the same lead.
pub const MAX_TRIES: usize = 4;

/// What recording a change did.
#[derive(Debug)]
pub enum Recorded {
    /// Written: the lead after the change and the rows it queued (their
    /// messages are on the send queue, or the sweeper sends them).
    Written(Box<LeadWrite>),
    /// Written before, by this very change (a retry, a second delivery):
    /// the lead as it is now.
    Duplicate(Option<Lead>),
    /// The change changes nothing (an old move, the column the lead is
    /// in): the lead as it is, and whether this change was seen before.
    Unchanged { lead: Option<Lead>, seen: bool },
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("no such site")]
    NoSite,
    /// A change to a lead that was never recorded.
    #[error("no such lead")]
    NoLead,
    /// Every try raced another change of the same lead.
    #[error("the lead kept changing while the change was saved")]
    Busy,
    #[error("the store failed")]
    Store(#[from] StoreError),
}

/// Decides and writes one change of `lead_key` (`new`: the lead it records
/// when there is none yet), then enqueues the rows it queued.
///
/// # Errors
/// [`RecordError`]; nothing is written when it fails, except a write the
/// store made before failing to answer, which a retry sees as
/// [`Recorded::Duplicate`].
pub async fn record(
    store: &Store,
    clock: &dyn Clock,
    site: &SiteId,
    lead_key: &str,
    update: &LeadUpdate,
    new: Option<&NewLead>,
) -> Result<Recorded, RecordError> {
    // Events need somewhere to go and someone to match: contact data, or
    // a Lead Ads lead's own id (Meta's Conversion Leads).
    let wants_targets =
        update.hashes.is_some() || update.contact.is_some() || meta_lead_id(lead_key).is_some();
    for _ in 0..MAX_TRIES {
        // The site, the lead, the board and where events go, read at once:
        // one round trip (two for the pixel's connection), not six.
        let (sites, leads, boards) = (store.sites(), store.leads(), store.boards());
        let (site_row, lead, board, targets) = futures::try_join!(
            sites.get_site(site.as_str()),
            leads.get_lead(site.as_str(), lead_key),
            boards.get_board(site.as_str()),
            async {
                if wants_targets {
                    targets(store, site.as_str()).await.map(Some)
                } else {
                    Ok(None)
                }
            }
        )?;
        let Some(site_row) = site_row else {
            return Err(RecordError::NoSite);
        };
        let current = lead.clone();
        let input = match (lead, new) {
            (Some(lead), recorded) => LeadInput::Known {
                lead: Box::new(lead),
                recorded,
            },
            (None, Some(new)) => LeadInput::New {
                lead_id: uuid::Uuid::new_v4().to_string(),
                lead_key,
                lead: new,
            },
            (None, None) => return Err(RecordError::NoLead),
        };
        let ctx = LeadContext {
            site_id: &site_row.site_id,
            currency: &site_row.currency,
            board: &board,
            country: site_row.country.as_deref(),
            targets: targets
                .as_ref()
                .map_or_else(LeadTargets::default, |t| LeadTargets {
                    pixel: t.pixel,
                    send_lead_event: t.send_lead_event,
                    destinations: &t.destinations,
                }),
            now: clock.now_ms(),
        };
        let Some(plan) = decide(&ctx, input, update) else {
            let seen = store
                .leads()
                .change_seen(site.as_str(), &update.change_id)
                .await?;
            return Ok(Recorded::Unchanged {
                lead: current,
                seen,
            });
        };
        if let Some(done) = write(store, site.as_str(), lead_key, plan).await? {
            return Ok(done);
        }
    }
    Err(RecordError::Busy)
}

/// Keeps each event once per lead (its earlier rows read back), writes
/// the outbox and enqueues what it wrote. `None`: another change of the
/// lead raced it, decide again.
async fn write(
    store: &Store,
    site: &str,
    lead_key: &str,
    mut plan: LeadWrite,
) -> Result<Option<Recorded>, RecordError> {
    let known = plan.known_refs();
    let existing = if known.is_empty() {
        vec![]
    } else {
        store.conversions().get_conversions(site, &known).await?
    };
    once_per_lead(&mut plan, &existing);
    Ok(match store.leads().write_lead_change(&plan).await? {
        LeadWritten::Written => {
            enqueue(store, &messages(site, &plan)).await;
            Some(Recorded::Written(Box::new(plan)))
        }
        LeadWritten::ChangeSeen => {
            let lead = store.leads().get_lead(site, lead_key).await?;
            Some(Recorded::Duplicate(lead))
        }
        LeadWritten::Raced => None,
    })
}

/// The send messages of the rows a change wrote: the pixel's and the
/// destinations'.
fn messages(site: &str, plan: &LeadWrite) -> Vec<SendMessage> {
    plan.conversions
        .iter()
        .map(|c| &c.sk)
        .chain(plan.routed.iter().map(|r| &r.sk))
        .map(|sk| SendMessage {
            site_id: site.to_owned(),
            key: sk.clone(),
        })
        .collect()
}
