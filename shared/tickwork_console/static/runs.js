// The Runs page (GET /v1/runs): a tenant's runs across every job and workflow, newest first, found by filters kept
// in the page's URL (#/runs?status=FAILED&on=ended_at&from=...), so a search can be bookmarked and shared.
import { html, useState } from "./vendor/htm-preact-standalone.module.js";
import { enc, get, postEveryPage } from "./api.js";
import { JobLink } from "./names.js";
import { TenantCell, TenantHead, columnsWithTenant } from "./tenancy.js";
import { Cell, ConfirmDialog, ErrorBox, Loading, Pager, Status, Time, ZoneLabel, instant, urlFilters, useLoad, usePager, useTimeZone, wallValue } from "./ui.js";

const FILTERS = ["status", "job_id", "workflow_id", "type", "tag", "trigger", "error_type", "from", "to", "on"];
const STATUSES = ["QUEUED", "RUNNING", "RETRYING", "SUCCEEDED", "FAILED", "SKIPPED", "CANCELLED"];
const TRIGGERS = ["schedule", "manual", "backfill"];

function Choice({ name, label, value, options, none }) {
  return html`<label>${label}
    <select name=${name} defaultValue=${value}>
      <option value="">${none}</option>
      ${options.map((option) => html`<option value=${option}>${option}</option>`)}
    </select>
  </label>`;
}

function retried(items) {
  const ok = items.filter((item) => item.outcome === "ok").length;
  const left = items.filter((item) => item.outcome !== "ok");
  return html`Re-queued ${ok} run${ok === 1 ? "" : "s"}${left.length
    ? html`; ${left.length} not: ${left.map((item) => html`<span class="mono">${item.run_id}</span> (${item.message || item.outcome}) `)}`
    : ""}.`;
}

// A search's filters as POST /v1/bulk/runs takes them: FAILED runs only, with the page's instants.
function bulkFilters(filters, zone) {
  const chosen = Object.fromEntries(Object.entries(filters).filter(([name, value]) => value && name !== "status"));
  for (const name of ["from", "to"]) if (chosen[name]) chosen[name] = instant(chosen[name], zone);
  return chosen;
}

export function RunsPage({ query }) {
  const { zone } = useTimeZone();
  const { filters, key, apply } = urlFilters(FILTERS, query, "#/runs", { instants: ["from", "to"], zone });
  const pager = usePager(key);
  const runs = useLoad(
    () => get("/v1/runs", { ...filters, from: instant(filters.from, zone), to: instant(filters.to, zone), limit: 50, cursor: pager.cursor }),
    [key, pager.cursor],
    15000,
  );
  const items = runs.data ? runs.data.items : [];
  const [selected, setSelected] = useState(() => new Set());
  const [asked, setAsked] = useState(null); // "selected" | "all"
  const [notice, setNotice] = useState(null);
  const failed = items.filter((run) => run.status === "FAILED");
  const chosen = failed.filter((run) => selected.has(run.id));
  const toggle = (id) => setSelected((s) => {
    const next = new Set(s);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    return next;
  });
  const retry = async () => {
    const selection = asked === "selected" ? { run_ids: chosen.map((run) => run.id) } : { filters: bulkFilters(filters, zone) };
    // POST /v1/bulk/runs: the runs named, or every FAILED run the filters find; each answered on its own.
    setNotice(retried(await postEveryPage("/v1/bulk/runs", { action: "retry", ...selection })));
    setSelected(new Set());
    runs.reload();
  };
  return html`<section>
    <h1 tabindex="-1">Runs</h1>
    <p class="muted">Every job's and workflow's runs, newest first. Type and tag find the jobs that have them.</p>
    <form class="filters" key=${key} onSubmit=${apply} aria-label="Filter runs">
      <${Choice} name="status" label="Status" value=${filters.status} options=${STATUSES} none="any" />
      <label>Job <input name="job_id" defaultValue=${filters.job_id} placeholder="job id" size="14" /></label>
      <label>Workflow <input name="workflow_id" defaultValue=${filters.workflow_id} placeholder="workflow id" size="14" /></label>
      <label>Type <input name="type" defaultValue=${filters.type} placeholder="echo" size="10" /></label>
      <label>Tag <input name="tag" defaultValue=${filters.tag} placeholder="team=pay" size="12" /></label>
      <${Choice} name="trigger" label="Trigger" value=${filters.trigger} options=${TRIGGERS} none="any" />
      <label>Error type <input name="error_type" defaultValue=${filters.error_type} placeholder="TimeoutError" size="12" /></label>
      <label>From <${ZoneLabel} /> <input name="from" type="datetime-local" step="1" defaultValue=${wallValue(filters.from, zone)} /></label>
      <label>To <${ZoneLabel} /> <input name="to" type="datetime-local" step="1" defaultValue=${wallValue(filters.to, zone)} /></label>
      <label>Times bound
        <select name="on" defaultValue=${filters.on}>
          <option value="">when scheduled</option>
          <option value="ended_at">when ended</option>
        </select>
      </label>
      <button type="submit" class="primary">Search</button>
      <a href="#/runs" class="button">Clear</a>
    </form>
    <div class="toolbar bulk-runs" role="group" aria-label="Retry FAILED runs">
      <button type="button" onClick=${() => setAsked("selected")} disabled=${chosen.length === 0}>Retry selected (${chosen.length})</button>
      <button type="button" onClick=${() => setAsked("all")} disabled=${filters.status !== "FAILED"} title=${filters.status === "FAILED" ? "" : "Search for FAILED runs first"}>Retry all matching…</button>
    </div>
    <div aria-live="polite">${notice ? html`<p class="notice">${notice}</p>` : null}</div>
    <${ErrorBox} error=${runs.error} />
    ${runs.data
      ? html`<table class="list">
            <caption class="visually-hidden">Runs, newest first</caption>
            <thead><tr><${TenantHead} /><th><span class="visually-hidden">Select</span></th><th>Run</th><th>Status</th><th>Job</th><th>Scheduled <${ZoneLabel} /></th><th>Ended <${ZoneLabel} /></th><th>Trigger</th><th>Error</th></tr></thead>
            <tbody>
              ${items.length === 0
                ? html`<tr><td colspan=${columnsWithTenant(8)} class="muted">No runs match${runs.data.next_cursor ? " on this page; there are more to look through" : ""}.</td></tr>`
                : items.map(
                    (run) => html`<tr>
                      <${TenantCell} item=${run} />
                      <${Cell} label="Select">${run.status === "FAILED"
                        ? html`<input type="checkbox" checked=${selected.has(run.id)} onChange=${() => toggle(run.id)} aria-label=${`Select ${run.id}`} />`
                        : null}<//>
                      <${Cell} label="Run" className="mono"><a href=${`#/runs/${enc(run.id)}`}>${run.id}</a><//>
                      <${Cell} label="Status"><${Status} value=${run.status} /><//>
                      <${Cell} label="Job"><${JobLink} id=${run.job_id} /><//>
                      <${Cell} label="Scheduled"><${Time} value=${run.scheduled_for} /><//>
                      <${Cell} label="Ended"><${Time} value=${run.finished_at} /><//>
                      <${Cell} label="Trigger">${run.trigger}<//>
                      <${Cell} label="Error" className="mono">${run.error ? `${run.error.type}: ${run.error.message}` : "—"}<//>
                    </tr>`,
                  )}
            </tbody>
          </table>
          <${Pager} pager=${pager} nextCursor=${runs.data.next_cursor} label="Runs" />`
      : runs.error
        ? null
        : html`<${Loading} what="runs" />`}
    <${ConfirmDialog}
      open=${asked !== null}
      title=${asked === "selected" ? `Retry ${chosen.length} selected run${chosen.length === 1 ? "" : "s"}?` : "Retry every FAILED run matching?"}
      confirmLabel="Retry"
      onConfirm=${retry}
      onClose=${() => setAsked(null)}
    >
      <p>${asked === "selected" ? "The runs selected are" : "Every FAILED run these filters find, on every page, is"} queued again; their attempts start from 1. A run that cannot be retried says why.</p>
    <//>
  </section>`;
}
