//! The route table: every route once, with its method, its path and what
//! it does. Dispatch finds routes here; the `405` answers and the logs'
//! route names read it; the template tests check the template's routes
//! and the OpenAPI document against it.

/// What a route does: one variant per operation, matched exhaustively by
/// [`dispatch`], so a route in [`ROUTES`] without a handler does not build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    PutSite,
    PutConnection,
    GetConnection,
    DeleteConnection,
    Login,
    Refresh,
    Link,
    Unlink,
    UnlinkPreview,
    SyncNow,
    PutPixel,
    DeletePixel,
    PutDestination,
    GetDestination,
    ListDestinations,
    DeleteDestination,
    DestinationMetrics,
    LeadConversions,
    PutPipeline,
    PutEventMap,
    GetEventMap,
    PostEvents,
    RecordLead,
    MoveLead,
    DeleteLead,
    ListConversions,
    Spend,
    Status,
    DailyReport,
    LeadsReport,
    WebhookVerify,
    Webhook,
    ListPages,
    LinkPage,
    UnlinkPage,
    ForwardLeadgen,
    ListForms,
    RefreshForms,
    GetFormRules,
    PutFormRules,
    SimulateFormRules,
    ListFormLeads,
    ReadFormLead,
    ReturnFormLead,
    FormsReport,
    ListSites,
    GetSite,
    DeleteSite,
}

/// One route: its method, its path (`{…}` standing for one id), and what it
/// does.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
    /// Outside the JWT authorizer: Meta calls it, and its handler checks
    /// the call itself.
    pub public: bool,
    pub(super) op: Op,
}

const fn r(method: &'static str, path: &'static str, op: Op) -> Route {
    Route {
        method,
        path,
        public: false,
        op,
    }
}

/// A route Meta calls, outside the authorizer.
const fn open(method: &'static str, path: &'static str, op: Op) -> Route {
    Route {
        method,
        path,
        public: true,
        op,
    }
}

/// Every route. The one table: dispatch finds routes here, the `405`
/// answers and the logs' route names read it, and the template tests check
/// it against the template's routes and the OpenAPI document.
pub const ROUTES: [Route; 48] = [
    r("PUT", "/v1/sites/{siteId}", Op::PutSite),
    r("GET", "/v1/sites", Op::ListSites),
    r("GET", "/v1/sites/{siteId}", Op::GetSite),
    r("DELETE", "/v1/sites/{siteId}", Op::DeleteSite),
    r("PUT", "/v1/meta/connections/{ownerKey}", Op::PutConnection),
    r("GET", "/v1/meta/connections/{ownerKey}", Op::GetConnection),
    r(
        "DELETE",
        "/v1/meta/connections/{ownerKey}",
        Op::DeleteConnection,
    ),
    r("POST", "/v1/meta/connections/{ownerKey}/login", Op::Login),
    r(
        "GET",
        "/v1/meta/connections/{ownerKey}/pages",
        Op::ListPages,
    ),
    r(
        "POST",
        "/v1/meta/connections/{ownerKey}/refresh",
        Op::Refresh,
    ),
    r(
        "PUT",
        "/v1/sites/{siteId}/ad-accounts/{adAccountId}",
        Op::Link,
    ),
    r(
        "DELETE",
        "/v1/sites/{siteId}/ad-accounts/{adAccountId}",
        Op::Unlink,
    ),
    r(
        "GET",
        "/v1/sites/{siteId}/ad-accounts/{adAccountId}/unlink-preview",
        Op::UnlinkPreview,
    ),
    r("POST", "/v1/sites/{siteId}/sync", Op::SyncNow),
    r("PUT", "/v1/sites/{siteId}/pages/{pageId}", Op::LinkPage),
    r(
        "DELETE",
        "/v1/sites/{siteId}/pages/{pageId}",
        Op::UnlinkPage,
    ),
    r(
        "GET",
        "/v1/sites/{siteId}/pages/{pageId}/forms",
        Op::ListForms,
    ),
    r(
        "POST",
        "/v1/sites/{siteId}/pages/{pageId}/forms/refresh",
        Op::RefreshForms,
    ),
    r(
        "GET",
        "/v1/sites/{siteId}/forms/{formId}/rules",
        Op::GetFormRules,
    ),
    r(
        "PUT",
        "/v1/sites/{siteId}/forms/{formId}/rules",
        Op::PutFormRules,
    ),
    r(
        "POST",
        "/v1/sites/{siteId}/forms/{formId}/rules/simulate",
        Op::SimulateFormRules,
    ),
    r("GET", "/v1/sites/{siteId}/form-leads", Op::ListFormLeads),
    r(
        "GET",
        "/v1/sites/{siteId}/form-leads/{leadgenId}",
        Op::ReadFormLead,
    ),
    r(
        "POST",
        "/v1/sites/{siteId}/form-leads/{leadgenId}/return",
        Op::ReturnFormLead,
    ),
    r("PUT", "/v1/sites/{siteId}/pixel", Op::PutPixel),
    r("DELETE", "/v1/sites/{siteId}/pixel", Op::DeletePixel),
    r(
        "GET",
        "/v1/sites/{siteId}/destinations",
        Op::ListDestinations,
    ),
    r(
        "PUT",
        "/v1/sites/{siteId}/destinations/{slug}",
        Op::PutDestination,
    ),
    r(
        "GET",
        "/v1/sites/{siteId}/destinations/{slug}",
        Op::GetDestination,
    ),
    r(
        "DELETE",
        "/v1/sites/{siteId}/destinations/{slug}",
        Op::DeleteDestination,
    ),
    r(
        "GET",
        "/v1/sites/{siteId}/destinations/{slug}/metrics",
        Op::DestinationMetrics,
    ),
    r("PUT", "/v1/sites/{siteId}/pipeline", Op::PutPipeline),
    r("PUT", "/v1/sites/{siteId}/event-map", Op::PutEventMap),
    r("GET", "/v1/sites/{siteId}/event-map", Op::GetEventMap),
    r("POST", "/v1/sites/{siteId}/events", Op::PostEvents),
    r("POST", "/v1/sites/{siteId}/leads", Op::RecordLead),
    r(
        "POST",
        "/v1/sites/{siteId}/leads/{leadKey}/stage",
        Op::MoveLead,
    ),
    r(
        "DELETE",
        "/v1/sites/{siteId}/leads/{leadKey}",
        Op::DeleteLead,
    ),
    r("GET", "/v1/sites/{siteId}/conversions", Op::ListConversions),
    r(
        "GET",
        "/v1/sites/{siteId}/leads/{leadKey}/conversions",
        Op::LeadConversions,
    ),
    r("GET", "/v1/sites/{siteId}/spend", Op::Spend),
    r("GET", "/v1/meta/status", Op::Status),
    r("GET", "/v1/reports/daily", Op::DailyReport),
    r("GET", "/v1/reports/leads", Op::LeadsReport),
    r("GET", "/v1/reports/forms", Op::FormsReport),
    r("POST", "/v1/meta/leadgen", Op::ForwardLeadgen),
    open("GET", "/v1/webhooks/meta", Op::WebhookVerify),
    open("POST", "/v1/webhooks/meta", Op::Webhook),
];
