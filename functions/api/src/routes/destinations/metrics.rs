//! `GET /v1/sites/{siteId}/destinations/{slug}/metrics`: a destination's
//! rows queued, sent and failed by event and UTC day, from the site's
//! sharded counters.

use std::collections::BTreeMap;

use adtrail_domain::SiteId;
use adtrail_domain::capi::EventName;
use adtrail_domain::destinations::Slug;
use adtrail_store::conversions::Flow;
use lambda_http::{Body, Request, Response};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::views::{DestinationMetricsView, FlowDay, FlowView};
use crate::{Api, json};

pub(crate) async fn destination_metrics(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
    slug: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let slug = Slug::parse("slug", slug)?;
    let params = crate::input::query(req, &["from", "to"])?;
    let (from, to) = crate::input::day_range(&params, 366)?;
    caller.may_read(site.as_str())?;
    if api.store.sites().get_site(site.as_str()).await?.is_none() {
        return Err(ApiError::no_site());
    }
    let metrics = api
        .store
        .conversions()
        .destination_metrics(site.as_str(), slug.as_str(), from, to)
        .await?;
    let add = |a: &mut Flow, b: &Flow| {
        a.queued += b.queued;
        a.sent += b.sent;
        a.failed += b.failed;
    };
    let mut totals = Flow::default();
    let mut by_event: BTreeMap<EventName, Flow> = BTreeMap::new();
    let mut days = vec![];
    for (day, events) in &metrics {
        let mut on_day = Flow::default();
        for (event, f) in events {
            add(&mut on_day, f);
            add(by_event.entry(*event).or_default(), f);
        }
        add(&mut totals, &on_day);
        days.push(FlowDay {
            day_start: *day,
            flow: FlowView::of(on_day),
        });
    }
    json(
        200,
        &DestinationMetricsView {
            site_id: site.as_str(),
            slug: slug.as_str(),
            from,
            to,
            totals: FlowView::of(totals),
            by_event: by_event
                .into_iter()
                .map(|(e, f)| (e.wire(), FlowView::of(f)))
                .collect(),
            days,
        },
    )
}
