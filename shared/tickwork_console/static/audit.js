// The audit trail (GET /v1/audit): a job's or a workflow's Audit tab, who created, changed and paused it, and the
// Audit page (a tenant's own records; an admin's, every tenant's or one's).
import { html, useEffect, useState } from "./vendor/htm-preact-standalone.module.js";
import { enc, get } from "./api.js";
import { useIsAdmin } from "./tenancy.js";
import { Cell, ErrorBox, Loading, Pager, Time, ZoneLabel, instant, navigate, urlFilters, useLoad, usePager, useTimeZone, wallValue } from "./ui.js";

const LONGEST = 1000;

// A changed field's value as text (a string as typed, in quotes; anything else as JSON): the page never reads it
// as markup, whatever it holds.
function valueText(value) {
  if (value === undefined || value === null) return "—";
  const text = typeof value === "string" ? `"${value}"` : JSON.stringify(value);
  return text.length > LONGEST ? `${text.slice(0, LONGEST)}…` : text;
}

// The before and after of each changed field; a create's or a delete's many fields folded under their count.
function Changes({ changes }) {
  const names = Object.keys(changes || {});
  if (!names.length) return html`<span class="muted">—</span>`;
  const list = html`<ul class="changes">
    ${names.map(
      (name) => html`<li>
        <code>${name}</code> <span class="change-before">${valueText(changes[name].before)}</span>${" → "}<span class="change-after">${valueText(changes[name].after)}</span>
      </li>`,
    )}
  </ul>`;
  return names.length > 6 ? html`<details><summary>${names.length} fields</summary>${list}</details>` : list;
}

const RESOURCE_PAGES = { job: "jobs", workflow: "workflows", run: "runs", workflow_run: "workflow-runs" };

function ResourceLink({ resource }) {
  const page = RESOURCE_PAGES[resource.kind];
  const label = html`<span class="muted">${resource.kind}</span> <span class="mono">${resource.id}</span>`;
  return page ? html`<a href=${`#/${page}/${enc(resource.id)}`}>${label}</a>` : label;
}

// Records, newest first. `wide`: the Audit page's, with each record's resource and (for an admin) tenant.
function AuditTable({ records, wide, tenants }) {
  const columns = 5 + (wide ? 1 : 0) + (tenants ? 1 : 0);
  return html`<table class="list audit">
    <caption class="visually-hidden">Audit records, newest first</caption>
    <thead>
      <tr>
        <th>When <${ZoneLabel} /></th><th>Who</th><th>Action</th>${wide ? html`<th>Resource</th>` : null}${tenants ? html`<th>Tenant</th>` : null}
        <th>Outcome</th><th>Changes</th>
      </tr>
    </thead>
    <tbody>
      ${records.length === 0
        ? html`<tr><td colspan=${columns} class="muted">No audit records match.</td></tr>`
        : records.map(
            (r) => html`<tr>
              <${Cell} label="When"><${Time} value=${r.at} /><//>
              <${Cell} label="Who" className="audit-who">
<span>
                <span title=${r.actor.id}>${r.actor.display}</span> <span class="tag">${r.actor.kind}</span>
                ${r.source_ip ? html` <span class="muted mono" title=${r.user_agent || ""}>${r.source_ip}</span>` : null}
              </span>
              <//>
              <${Cell} label="Action" className="audit-action mono">${r.action}<//>
              ${wide ? html`<${Cell} label="Resource"><${ResourceLink} resource=${r.resource} /><//>` : null}
              ${tenants ? html`<${Cell} label="Tenant" className="audit-tenant">${r.tenant}<//>` : null}
              <${Cell} label="Outcome">${r.outcome}<//>
              <${Cell} label="Changes" className="audit-changes"><${Changes} changes=${r.changes} /><//>
            </tr>`,
          )}
    </tbody>
  </table>`;
}

// A job's or a workflow's records: its tenant's, since a minute before its creation (the listing's default window
// is the last 7 days), asked again when it changes.
export function ResourceAudit({ item }) {
  const pager = usePager(item.id);
  const since = new Date(Date.parse(item.created_at) - 60000).toISOString();
  const audit = useLoad(
    () => get("/v1/audit", { resource: item.id, tenant: item.tenant, from: since, limit: 20, cursor: pager.cursor }),
    [item.id, item.version, pager.cursor],
  );
  return html`<div>
    <h2>Audit</h2>
    <${ErrorBox} error=${audit.error} />
    ${audit.data
      ? html`<${AuditTable} records=${audit.data.items} /><${Pager} pager=${pager} nextCursor=${audit.data.next_cursor} label="Audit" />`
      : audit.error
        ? null
        : html`<${Loading} what="audit records" />`}
  </div>`;
}

// Who created it, changed it last and paused it (the display names its records' actors have), as facts.
export function Attribution({ item }) {
  return html`<dt>Created by</dt><dd>${item.created_by || "—"} <span class="muted">at <${Time} value=${item.created_at} /></span></dd>
    <dt>Updated by</dt><dd>${item.updated_by || "—"} <span class="muted">at <${Time} value=${item.updated_at} /></span></dd>
    ${item.paused_by || item.paused_at
      ? html`<dt>Paused by</dt><dd>${item.paused_by || "—"} <span class="muted">at <${Time} value=${item.paused_at} /></span></dd>`
      : null}`;
}

// Tabs whose choice is in the page's URL (`?tab=`), so a tab can be bookmarked and shared; the first is the default.
export function Tabs({ tabs, current, base, label }) {
  const chosen = tabs.some(([name]) => name === current) ? current : tabs[0][0];
  const go = (name) => navigate(name === tabs[0][0] ? base : `${base}?tab=${name}`);
  // Arrow keys move between tabs, as in any tab list.
  const onKeyDown = (event) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    const at = tabs.findIndex(([name]) => name === chosen);
    const next = tabs[(at + step + tabs.length) % tabs.length][0];
    go(next);
    setTimeout(() => document.getElementById(`tab-${next}`)?.focus(), 0);
  };
  return html`<div class="tabs" role="tablist" aria-label=${label} onKeyDown=${onKeyDown}>
    ${tabs.map(
      ([name, text]) => html`<button
        type="button"
        role="tab"
        id=${`tab-${name}`}
        aria-selected=${name === chosen ? "true" : "false"}
        aria-controls=${`panel-${name}`}
        tabindex=${name === chosen ? "0" : "-1"}
        onClick=${() => go(name)}
      >${text}</button>`,
    )}
  </div>`;
}

export function TabPanel({ name, children }) {
  return html`<div role="tabpanel" id=${`panel-${name}`} aria-labelledby=${`tab-${name}`}>${children}</div>`;
}

const FILTERS = ["resource", "actor", "action", "from", "to", "tenant"];

export function AuditPage({ query }) {
  const admin = useIsAdmin();
  const { zone } = useTimeZone();
  const { filters, key, apply } = urlFilters(FILTERS, query, "#/audit", { instants: ["from", "to"], zone });
  const pager = usePager(key);
  const audit = useLoad(
    () => get("/v1/audit", { ...filters, from: instant(filters.from, zone), to: instant(filters.to, zone), limit: 50, cursor: pager.cursor }),
    [key, pager.cursor],
    15000,
  );
  return html`<section>
    <h1 tabindex="-1">Audit</h1>
    ${admin === null
      ? null
      : html`<p class="muted">
          ${admin ? "Every tenant's records (or one tenant's)" : "Your tenant's records"}, newest first: each change
          made through the API, who made it and from where. The last 7 days unless From says otherwise.
        </p>`}
    <form class="filters" key=${key} onSubmit=${apply} aria-label="Filter audit records">
      <label>Resource <input name="resource" defaultValue=${filters.resource} placeholder="job or workflow id" size="16" /></label>
      <label>Actor <input name="actor" defaultValue=${filters.actor} placeholder="id or name" size="14" /></label>
      <label>Action <input name="action" defaultValue=${filters.action} placeholder="job.pause" size="12" /></label>
      <label>From <${ZoneLabel} /> <input name="from" type="datetime-local" step="1" defaultValue=${wallValue(filters.from, zone)} /></label>
      <label>To <${ZoneLabel} /> <input name="to" type="datetime-local" step="1" defaultValue=${wallValue(filters.to, zone)} /></label>
      ${admin ? html`<label>Tenant <input name="tenant" defaultValue=${filters.tenant} placeholder="every tenant" size="12" /></label>` : null}
      <button type="submit" class="primary">Filter</button>
      <a href="#/audit" class="button">Clear</a>
    </form>
    <${ErrorBox} error=${audit.error} />
    ${audit.data
      ? html`<${AuditTable} records=${audit.data.items} wide=${true} tenants=${admin} />
          <${Pager} pager=${pager} nextCursor=${audit.data.next_cursor} label="Audit" />`
      : audit.error
        ? null
        : html`<${Loading} what="audit records" />`}
  </section>`;
}
