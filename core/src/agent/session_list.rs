//! `session/list` with authenticated cursors, and `session_info_update` from catalog observations.
//!
//! Pagination runs over the catalog's entries sorted by session-id bytes (a stable order that does
//! not depend on the catalog's), matching the request's `cwd` filter, in pages of at most
//! `max_page_size`. A cursor names the last session id of the previous page and the filter it was
//! made under, authenticated with HMAC-SHA256 under the agent's key: the one its options give
//! (`Options::cursor_key`, shared by every agent of a fleet through a runner's store), else one
//! drawn from the OS CSPRNG once per [`Agent`](super::Agent). A malformed, forged, foreign
//! (another key's) or re-filtered cursor is `-32602`, never "start over".
//!
//! A catalog that reads one page from storage ([`SessionCatalog::list_page`](crate::host::SessionCatalog::list_page))
//! is asked for the page: the connection's principal, the filter (the path as sent and its
//! canonical form), the cursor's position and the page size. Otherwise the facade pages over the
//! whole catalog ([`SessionCatalog::list_sessions`](crate::host::SessionCatalog::list_sessions)).
//! Both paths give the same pages for the same catalog, with one difference: a catalog filters
//! by the cwd it stores, so a session live on this connection under another cwd than its catalog
//! entry's (loaded elsewhere than it was created) is found under the stored one (and then left out,
//! its live cwd not matching) rather than under its live one.
//!
//! A session's cwd comes from the live registry first (validated at setup), else the catalog
//! entry. An entry with no absolute cwd is omitted *after* pagination, so a page may be short, or
//! even empty, while `nextCursor` is still set; clients follow `nextCursor` until it is absent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::state::AgentInner;
use super::wire::{Reply, decode, encode};
use crate::acp::{ListSessionsRequest, ListSessionsResponse, SessionInfo, SessionUpdate};
use crate::error::{Error, ErrorExt};
use crate::host::{CatalogPage, CatalogPageRequest, SessionCatalogEntry};

/// `session/list`.
pub(crate) fn list_sessions(agent: &Arc<AgentInner>, params: Value) -> Reply {
    let agent = agent.clone();
    Box::pin(async move {
        let request: ListSessionsRequest = decode(params)?;
        let filter = request.cwd.clone();
        if filter.as_ref().is_some_and(|cwd| !cwd.is_absolute()) {
            return Err(Error::invalid_params_msg("invalid params at `cwd`: it must be an absolute path"));
        }
        let after = match &request.cursor {
            Some(cursor) => Some(
                agent
                    .cursor_key
                    .decode(cursor, filter.as_deref())
                    .map_err(|e| Error::invalid_params_msg(format!("invalid params at `cursor`: {e}")))?,
            ),
            None => None,
        };
        let catalog = agent.options.catalog.clone().ok_or_else(|| Error::method_not_found_msg("session/list"))?;
        let matcher = filter.as_deref().map(CwdFilter::new);
        let request = CatalogPageRequest {
            principal: agent.options.principal.clone(),
            cwd: matcher.as_ref().map(CwdFilter::paths),
            after: after.clone(),
            limit: agent.options.max_page_size,
        };
        let page = match catalog.list_page(&request).await? {
            Some(page) => page_of(&agent, page, matcher.as_ref()),
            None => paginate(&agent, catalog.list_sessions().await?, matcher.as_ref(), after.as_deref()),
        };
        let mut response = ListSessionsResponse::new(page.sessions);
        if let Some(last) = page.next_after {
            response = response.next_cursor(agent.cursor_key.encode(&last, filter.as_deref()));
        }
        encode(&response)
    })
}

struct Page {
    sessions: Vec<SessionInfo>,
    next_after: Option<String>,
}

/// The `cwd` filter: the path as the client sent it, and its canonical form. Session cwds from
/// the live registry are canonical (symlinks resolved at setup), so a client filtering by the very
/// path it created the session with (say `/tmp/x` where `/tmp` is a link) must still find it.
struct CwdFilter {
    given: PathBuf,
    canonical: Option<PathBuf>,
}

impl CwdFilter {
    fn new(given: &Path) -> Self {
        let canonical = std::fs::canonicalize(given).ok().filter(|c| c != given);
        Self { given: given.to_path_buf(), canonical }
    }

    fn matches(&self, cwd: &Path) -> bool {
        cwd == self.given || self.canonical.as_deref() == Some(cwd)
    }

    /// The paths a matching cwd equals: as given, then canonical when that differs.
    fn paths(&self) -> Vec<PathBuf> {
        std::iter::once(self.given.clone()).chain(self.canonical.clone()).collect()
    }
}

/// The response page from a page the catalog read: each entry's cwd resolved as in [`paginate`]
/// and the filter checked again against it (a session live here may have another cwd than the
/// catalog's), the cursor from the catalog's last entry when more follow.
fn page_of(agent: &AgentInner, page: CatalogPage, filter: Option<&CwdFilter>) -> Page {
    let CatalogPage { mut entries, mut more } = page;
    // A catalog that answered more than asked: the rest is the next page's.
    if entries.len() > agent.options.max_page_size {
        entries.truncate(agent.options.max_page_size);
        more = true;
    }
    let next_after = if more { entries.last().map(|entry| entry.session_id.0.to_string()) } else { None };
    let sessions = entries
        .into_iter()
        .filter_map(|entry| {
            let cwd = resolved_cwd(agent, &entry)?;
            if filter.is_some_and(|f| !f.matches(&cwd)) {
                return None;
            }
            Some(SessionInfo::new(entry.session_id, cwd).title(entry.title).updated_at(entry.updated_at))
        })
        .collect();
    Page { sessions, next_after }
}

fn paginate(
    agent: &AgentInner,
    mut entries: Vec<SessionCatalogEntry>,
    filter: Option<&CwdFilter>,
    after: Option<&str>,
) -> Page {
    entries.sort_by(|a, b| a.session_id.0.as_bytes().cmp(b.session_id.0.as_bytes()));
    entries.dedup_by(|a, b| a.session_id == b.session_id);
    let resolved = entries.into_iter().map(|entry| {
        let cwd = resolved_cwd(agent, &entry);
        (entry, cwd)
    });
    let mut matching = resolved
        .filter(|(_, cwd)| filter.is_none_or(|f| cwd.as_deref().is_some_and(|cwd| f.matches(cwd))))
        .filter(|(entry, _)| after.is_none_or(|a| entry.session_id.0.as_bytes() > a.as_bytes()));
    let page: Vec<_> = matching.by_ref().take(agent.options.max_page_size).collect();
    let has_more = matching.next().is_some();
    let next_after = if has_more { page.last().map(|(entry, _)| entry.session_id.0.to_string()) } else { None };
    let sessions = page
        .into_iter()
        .filter_map(|(entry, cwd)| {
            let cwd = cwd?;
            Some(SessionInfo::new(entry.session_id, cwd).title(entry.title).updated_at(entry.updated_at))
        })
        .collect();
    Page { sessions, next_after }
}

/// A session's cwd: the live registry's (validated at setup) first, then the catalog's if absolute.
fn resolved_cwd(agent: &AgentInner, entry: &SessionCatalogEntry) -> Option<PathBuf> {
    if let Some(live) = agent.registry.get(&entry.session_id) {
        return Some(live.setup.cwd().to_path_buf());
    }
    entry.cwd.clone().filter(|cwd| cwd.is_absolute())
}

/// The product tells the facade a catalog entry changed. A `session_info_update` is sent only when
/// the title or update time actually changed (see `SessionEntry::session_info_update`), and only
/// for a session live on this connection.
pub(crate) async fn observe_session_meta(agent: &AgentInner, entry: SessionCatalogEntry) {
    let Some(session) = agent.registry.get(&entry.session_id) else {
        return;
    };
    let Some(update) = session.session_info_update(entry.title.as_ref(), entry.updated_at.as_ref()) else {
        return;
    };
    if let Err(e) = agent.send_update(&session.id, SessionUpdate::SessionInfoUpdate(update)).await {
        tracing::debug!(error = %e.message, "could not send session_info_update");
    }
}
