// Jobs, one job, and one run.
import { html, useState } from "./vendor/htm-preact-standalone.module.js";
import { del, enc, get, post, postEveryPage } from "./api.js";
import { Attribution, ResourceAudit, TabPanel, Tabs } from "./audit.js";
import { JobForecastFacts, RunForecastFacts } from "./forecast.js";
import { tagsText } from "./forms.js";
import { HEALTH, JobState, LastRun, healthOf, useLastRuns } from "./health.js";
import { EditJobDialog } from "./job_form.js";
import { JobLink } from "./names.js";
import { Instants } from "./schedule.js";
import { RegionStrip, StuckRunsStrip } from "./stuck.js";
import { TenantCell, TenantHead, columnsWithTenant } from "./tenancy.js";
import { VariantsPanel } from "./variants.js";
import {
  Cell,
  ConfirmDialog,
  ErrorBox,
  Loading,
  Pager,
  Progress,
  Status,
  JobZone,
  Time,
  ZoneLabel,
  band,
  duration,
  navigate,
  offset,
  scheduleText,
  useLoad,
  useLoadWhile,
  usePager,
  when,
} from "./ui.js";

const JOB_STATES = ["", "ACTIVE", "PAUSED", "SUSPENDED", "COMPLETED", "CANCELLED"];
const TERMINAL_RUN = new Set(["SUCCEEDED", "FAILED", "SKIPPED", "CANCELLED"]);
// The blocked instants a job's page shows: the first few among its next BLOCKED_LOOKAHEAD occurrences (one bounded
// preview: the API takes at most 1000).
const BLOCKED_LOOKAHEAD = 200;
const BLOCKED_SHOWN = 5;
const JOB_TABS = [
  ["runs", "Runs"],
  ["audit", "Audit"],
];

// ------------------------------------------------------------------ Jobs

// Free text over a job's name and tags (key=value), as typed, any case. The API filters by name prefix and by
// one exact tag; this looks inside them, over the page loaded.
function matches(job, search) {
  if (!search) return true;
  return [job.name, ...Object.entries(job.tags || {}).map(([k, v]) => `${k}=${v}`)].some((text) => text.toLowerCase().includes(search));
}

export function JobsPage({ query }) {
  const filters = {
    state: query.get("state") || "",
    type: query.get("type") || "",
    tag: query.get("tag") || "",
    name_prefix: query.get("name") || "",
  };
  const health = query.get("health") || "";
  const search = (query.get("q") || "").trim().toLowerCase();
  const key = JSON.stringify([filters, health, search]);
  const pager = usePager(key);
  // Suspended is a state the API filters on; failing and stuck are judged here, over a larger page.
  const asked = health === "suspended" ? { ...filters, state: "SUSPENDED" } : filters;
  const { data, error, loading, reload } = useLoad(
    () => get("/v1/jobs", { ...asked, limit: health || search ? 100 : 25, cursor: pager.cursor }),
    [key, pager.cursor],
    10000,
  );
  const lastRuns = useLastRuns(data && data.items, data);
  const shown = data
    ? data.items.filter((job) => matches(job, search) && (!health || (job.id in lastRuns && healthOf(job, lastRuns[job.id]) === health)))
    : [];
  const apply = (event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const params = new URLSearchParams();
    for (const [name, value] of form.entries()) if (String(value).trim()) params.set(name, String(value).trim());
    navigate(`#/jobs${params.toString() ? `?${params}` : ""}`);
  };
  return html`<section>
    <h1 tabindex="-1">Jobs</h1>
    <div class="toolbar"><a class="button primary" href="#/jobs/new">New job</a></div>
    <${StuckRunsStrip} />
    <${RegionStrip} />
    ${filters.tag && !filters.tenant ? html`<${BulkJobActions} tag=${filters.tag} onDone=${reload} />` : null}
    <form class="filters" key=${key} onSubmit=${apply} aria-label="Filter jobs">
      <label>Search <input name="q" type="search" defaultValue=${query.get("q") || ""} placeholder="name or tag" size="14" /></label>
      <label>State
        <select name="state">
          ${JOB_STATES.map((s) => html`<option value=${s} selected=${s === filters.state}>${s || "any"}</option>`)}
        </select>
      </label>
      <label>Type <input name="type" defaultValue=${filters.type} placeholder="echo" size="10" /></label>
      <label>Tag <input name="tag" defaultValue=${filters.tag} placeholder="team=billing" size="14" /></label>
      <label>Name starts with <input name="name" defaultValue=${filters.name_prefix} size="14" /></label>
      <label>Health
        <select name="health">
          ${HEALTH.map(([value, label]) => html`<option value=${value} selected=${value === health}>${label}</option>`)}
        </select>
      </label>
      <button type="submit" class="primary">Filter</button>
      <a href="#/jobs" class="button">Clear</a>
    </form>
    <${ErrorBox} error=${error} />
    ${loading && !data ? html`<${Loading} what="jobs" />` : null}
    ${data
      ? html`<table class="list">
            <caption class="visually-hidden">Jobs, newest first</caption>
            <thead><tr><${TenantHead} /><th>Name</th><th>Type</th><th>State</th><th>Last run <${ZoneLabel} /></th><th>Schedule</th><th>Next run <${ZoneLabel} /></th><th>Priority</th><th>Tags</th></tr></thead>
            <tbody>
              ${shown.length === 0
                ? html`<tr><td colspan=${columnsWithTenant(8)} class="muted">No jobs match.</td></tr>`
                : shown.map(
                    (job) => html`<tr>
                      <${TenantCell} item=${job} />
                      <${Cell} label="Name"><a href=${`#/jobs/${enc(job.id)}`}>${job.name}</a><//>
                      <${Cell} label="Type">${job.type}<//>
                      <${Cell} label="State"><${JobState} job=${job} lastRun=${lastRuns[job.id]} /><//>
                      <${Cell} label="Last run"><${LastRun} run=${lastRuns[job.id]} /><//>
                      <${Cell} label="Schedule" className="mono">${scheduleText(job.schedule)}<//>
                      <${Cell} label="Next run"><${Time} value=${job.next_run_at} /><//>
                      <${Cell} label="Priority">${job.priority} (${band(job.priority)})<//>
                      <${Cell} label="Tags" className="mono">${tagsText(job.tags)}<//>
                    </tr>`,
                  )}
            </tbody>
          </table>
          <${Pager} pager=${pager} nextCursor=${data.next_cursor} label="Jobs" />`
      : null}
  </section>`;
}

// Every job with the tag filtered on paused, resumed or cancelled in one action (POST /v1/bulk/jobs, following its
// cursor): each job is answered on its own, and the notice counts them.
const BULK_ACTIONS = [
  ["pause", "Pause", "Paused"],
  ["resume", "Resume", "Resumed"],
  ["cancel", "Cancel", "Cancelled"],
];

function counted(items, done) {
  const count = (outcome) => items.filter((item) => item.outcome === outcome).length;
  const refused = items.filter((item) => item.outcome === "refused" || item.outcome === "not_found");
  return html`${done} ${count("ok")} job${count("ok") === 1 ? "" : "s"}${count("already") ? `; ${count("already")} already so` : ""}${refused.length
    ? html`; ${refused.length} refused: ${refused.map((item) => html`<span class="mono">${item.job_id}</span> (${item.reason || item.outcome}) `)}`
    : ""}.`;
}

function BulkJobActions({ tag, onDone }) {
  const [key, ...rest] = tag.split("=");
  const selector = { tags: { [key]: rest.join("=") } };
  const [asked, setAsked] = useState(null);
  const [notice, setNotice] = useState(null);
  const chosen = BULK_ACTIONS.find(([action]) => action === asked);
  return html`<div>
    <div class="toolbar bulk-jobs" role="group" aria-label="Every job tagged so">
      <span class="muted">Every job tagged <span class="mono">${tag}</span>:</span>
      ${BULK_ACTIONS.map(([action, label]) => html`<button type="button" class=${action === "cancel" ? "danger" : ""} onClick=${() => setAsked(action)}>${label} all…</button>`)}
    </div>
    <div aria-live="polite">${notice ? html`<p class="notice">${notice}</p>` : null}</div>
    <${ConfirmDialog}
      open=${chosen !== undefined}
      title=${chosen ? `${chosen[1]} every job tagged ${tag}?` : ""}
      confirmLabel=${chosen ? `${chosen[1]} all` : ""}
      danger=${asked === "cancel"}
      onConfirm=${async () => { const items = await postEveryPage("/v1/bulk/jobs", { action: asked, selector }); setNotice(counted(items, chosen[2])); onDone(); }}
      onClose=${() => setAsked(null)}
    >
      <p>Every job of yours tagged <span class="mono">${tag}</span>, on every page, not only those shown.</p>
    <//>
  </div>`;
}

// ------------------------------------------------------------------ one job

function RunsTable({ runs }) {
  return html`<table class="list">
    <caption class="visually-hidden">Runs, newest first</caption>
    <thead><tr><th>Run</th><th>Status</th><th>Scheduled <${ZoneLabel} /></th><th>Started</th><th>Late</th><th>Attempts</th><th>Took</th></tr></thead>
    <tbody>
      ${runs.length === 0
        ? html`<tr><td colspan="7" class="muted">No runs yet.</td></tr>`
        : runs.map(
            (run) => html`<tr>
              <${Cell} label="Run" className="mono"><a href=${`#/runs/${enc(run.id)}`}>${run.id.split(".").slice(1).join(".") || run.id}</a><//>
              <${Cell} label="Status"><${Status} value=${run.status} />${run.skip_reason ? html` <span class="muted">${run.skip_reason}</span>` : null}${run.blocked_by ? html` <span class="muted mono" title="The calendar or freeze that blocked it">${run.blocked_by}</span>` : null}${run.status === "RUNNING" ? html` <${Progress} progress=${run.progress} />` : null}<//>
              <${Cell} label="Scheduled"><${Time} value=${run.scheduled_for} /><//>
              <${Cell} label="Started"><${Time} value=${run.started_at} /><//>
              <${Cell} label="Late">${duration(run.lateness_ms)}<//>
              <${Cell} label="Attempts">${run.attempts}${run.max_attempts ? ` / ${run.max_attempts}` : ""}<//>
              <${Cell} label="Took">${duration(run.duration_ms)}<//>
            </tr>`,
          )}
    </tbody>
  </table>`;
}

function NextInstants({ preview, blocked }) {
  const blockedItems = blocked.data ? blocked.data.items.filter((item) => item.blocked).slice(0, BLOCKED_SHOWN) : [];
  return html`<div>
    <h2>Next 5 instants</h2>
    <${ErrorBox} error=${preview.error} />
    ${preview.data
      ? preview.data.items.length
        ? html`<${Instants} items=${preview.data.items} label="Next 5 instants" />`
        : html`<p class="muted">No more occurrences.</p>`
      : null}
    <h2>Next blocked instants</h2>
    <${ErrorBox} error=${blocked.error} />
    ${blocked.data
      ? blockedItems.length
        ? html`<${Instants} items=${blockedItems} label="Next blocked instants" />`
        : html`<p class="muted">None blocked among the next ${BLOCKED_LOOKAHEAD} instants.</p>`
      : null}
  </div>`;
}

// A job's calendars, by name, each a link to its page.
function CalendarLinks({ ids }) {
  const calendars = useLoad(() => (ids.length ? get("/v1/calendars") : Promise.resolve({ items: [] })), [ids.join(",")]);
  if (!ids.length) return html`<span class="muted">none</span>`;
  const names = Object.fromEntries(((calendars.data && calendars.data.items) || []).map((c) => [c.id, c.name]));
  return html`<ul class="plain" aria-label="Calendars">
    ${ids.map((id) => html`<li><a href=${`#/calendars/${enc(id)}`} title=${id}>${names[id] || id}</a></li>`)}
  </ul>`;
}

export function JobPage({ id, query }) {
  const job = useLoad(() => get(`/v1/jobs/${enc(id)}`), [id], 10000);
  const preview = useLoad(() => get(`/v1/jobs/${enc(id)}/preview`, { count: 5 }), [id, job.data && job.data.version]);
  const blocked = useLoad(() => get(`/v1/jobs/${enc(id)}/preview`, { count: BLOCKED_LOOKAHEAD }), [id, job.data && job.data.version]);
  const pager = usePager(id);
  const runs = useLoad(() => get(`/v1/jobs/${enc(id)}/runs`, { limit: 20, cursor: pager.cursor }), [id, pager.cursor], 3000);
  const lastRun = useLastRuns(job.data ? [job.data] : [], runs.data)[id];
  const [dialog, setDialog] = useState(null);
  const [actionError, setActionError] = useState(null);
  const [notice, setNotice] = useState(null);
  const act = async (label, call) => {
    setActionError(null);
    setNotice(null);
    try {
      const answer = await call();
      setNotice(label(answer));
      job.reload();
      runs.reload();
    } catch (err) {
      setActionError(err);
    }
  };
  if (job.error && !job.data) return html`<section><h1 tabindex="-1">Job</h1><${ErrorBox} error=${job.error} /></section>`;
  if (!job.data) return html`<${Loading} what="the job" />`;
  const j = job.data;
  const tab = query && query.get("tab") === "audit" ? "audit" : "runs";
  const live = j.state === "ACTIVE" || j.state === "SUSPENDED";
  // A COMPLETED or CANCELLED job takes no change, trigger or edit (the API answers 409), and has no next instants.
  const ended = j.state === "COMPLETED" || j.state === "CANCELLED";
  return html`<${JobZone.Provider} value=${(j.schedule && j.schedule.timezone) || "UTC"}><section>
    <p class="crumbs"><a href="#/jobs">Jobs</a> /</p>
    <h1 tabindex="-1">${j.name} <${JobState} job=${j} lastRun=${lastRun} /></h1>
    <div class="toolbar" role="group" aria-label="Job actions">
      ${live ? html`<button type="button" onClick=${() => act(() => "Paused.", () => post(`/v1/jobs/${enc(id)}/pause`))}>Pause</button>` : null}
      ${j.state === "PAUSED" || j.state === "SUSPENDED"
        ? html`<button type="button" onClick=${() => act(() => "Resumed.", () => post(`/v1/jobs/${enc(id)}/resume`))}>Resume</button>`
        : null}
      ${ended
        ? null
        : html`<button type="button" onClick=${() => act((run) => html`Triggered: <a href=${`#/runs/${enc(run.id)}`}>run ${run.id}</a>`, () => post(`/v1/jobs/${enc(id)}/trigger`))}>Trigger now</button>
            <button type="button" onClick=${() => setDialog("edit")}>Edit</button>
            <button type="button" class="danger" onClick=${() => setDialog("cancel")}>Cancel job</button>`}
    </div>
    <div aria-live="polite">${notice ? html`<p class="notice">${notice}</p>` : null}</div>
    <${ErrorBox} error=${actionError} />
    <div class="columns">
      <dl class="facts">
        <dt>Id</dt><dd class="mono">${j.id}</dd>
        <dt>Type</dt><dd>${j.type}</dd>
        <dt>Schedule</dt><dd class="mono">${scheduleText(j.schedule)}</dd>
        <dt>Next run</dt><dd><${Time} value=${j.next_run_at} /></dd>
        <dt>Last run</dt><dd><${LastRun} run=${lastRun} /></dd>
        <dt>Priority</dt><dd>${j.priority} (${band(j.priority)} band)</dd>
        <dt>Retries</dt><dd>${j.retry.max_attempts} attempts, backoff ${j.retry.backoff_seconds} s (max ${j.retry.max_backoff_seconds} s)</dd>
        <dt>Timeout</dt><dd>${j.timeout_seconds} s</dd>
        <${JobForecastFacts} job=${j} />
        <dt>Policies</dt><dd>overlap ${j.overlap}, catch-up ${j.catchup}${j.jitter_seconds ? `, jitter ${j.jitter_seconds} s` : ""}${j.circuit_breaker ? `, breaker after ${j.circuit_breaker.failure_threshold} failures` : ""}</dd>
        <dt>Tags</dt><dd class="mono">${tagsText(j.tags) || "—"}</dd>
        <dt>Calendars</dt><dd><${CalendarLinks} ids=${j.calendars || []} />${(j.calendars || []).length ? html` <span class="muted">blocked: ${j.on_blocked === "DEFER" ? "runs when allowed" : "skipped"}</span>` : null}</dd>
        <${Attribution} item=${j} />
        ${j.suspended_reason ? html`<dt>Suspended</dt><dd>${j.suspended_reason}</dd>` : null}
        <dt>Payload</dt><dd><pre class="preview">${JSON.stringify(j.payload, null, 2)}</pre></dd>
      </dl>
      ${ended ? null : html`<${NextInstants} preview=${preview} blocked=${blocked} />`}
    </div>
    ${(j.variants && j.variants.length) || j.variant_rollback
      ? html`<${VariantsPanel} job=${j} onChanged=${() => { job.reload(); runs.reload(); }} />`
      : null}
    <${Tabs} tabs=${JOB_TABS} current=${tab} base=${`#/jobs/${enc(id)}`} label="Job sections" />
    ${tab === "audit"
      ? html`<${TabPanel} name="audit"><${ResourceAudit} item=${j} /><//>`
      : html`<${TabPanel} name="runs">
          <h2>Runs</h2>
          <${ErrorBox} error=${runs.error} />
          ${runs.data
            ? html`<${RunsTable} runs=${runs.data.items} /><${Pager} pager=${pager} nextCursor=${runs.data.next_cursor} label="Runs" />`
            : html`<${Loading} what="runs" />`}
        <//>`}
    ${dialog === "edit"
      ? html`<${EditJobDialog} job=${j} open=${true} onClose=${() => setDialog(null)} onSaved=${() => { setNotice("Saved."); job.reload(); }} />`
      : null}
    <${ConfirmDialog}
      open=${dialog === "cancel"}
      title="Cancel this job?"
      confirmLabel="Cancel job"
      danger=${true}
      onConfirm=${async () => { await del(`/v1/jobs/${enc(id)}`); setNotice("Cancelled."); job.reload(); }}
      onClose=${() => setDialog(null)}
    >
      <p>${j.name} will not run again. Runs already queued are recorded SKIPPED.</p>
    <//>
  </section><//>`;
}

// ------------------------------------------------------------------ one run

// The run's life as its fields give it: scheduled → claimed and queued → started → each attempt → finished.
function timeline(run) {
  const steps = [];
  const scheduled = run.nominal_at || run.scheduled_for;
  steps.push({ label: "Scheduled", at: scheduled, note: run.trigger !== "SCHEDULE" ? `trigger ${run.trigger}` : "" });
  // A retry or a DLQ redrive re-queues the run: enqueued_at is then that re-queue, and its attempts start again.
  if (run.enqueued_at)
    steps.push(
      run.requeues
        ? { label: "Re-queued after FAILED", at: run.enqueued_at, note: `retry or redrive${run.requeues > 1 ? `, ${run.requeues} times` : ""}`, requeue: true }
        : { label: "Claimed and queued", at: run.enqueued_at },
    );
  if (run.started_at)
    steps.push({ label: "Started", at: run.started_at, note: run.lateness_ms !== null && run.lateness_ms !== undefined ? `${duration(run.lateness_ms)} late` : "" });
  const earlier = run.earlier_attempts;
  if (earlier) {
    const counts = Object.entries(earlier.outcomes).map(([outcome, n]) => `${n} ${outcome}`).join(", ");
    const attempts = earlier.first_attempt === earlier.last_attempt ? `attempt ${earlier.first_attempt}` : `attempts ${earlier.first_attempt}–${earlier.last_attempt}`;
    steps.push({ label: `${earlier.records} earlier records`, at: earlier.first_started_at, note: `${attempts}: ${counts} · ${duration(earlier.handler_ms)} handler time`, outcome: "collapsed" });
  }
  for (const group of collapsedSegments(run.attempt_history || [])) {
    const last = group[group.length - 1];
    if (group.length > 1) {
      const took = group.reduce((ms, a) => ms + (new Date(a.ended_at) - new Date(a.started_at)), 0);
      steps.push({ label: `Attempt ${last.attempt}`, at: group[0].started_at, note: `${group.length} segments yielded · ${duration(took)}`, outcome: "yielded" });
      continue;
    }
    const took = last.ended_at ? duration(new Date(last.ended_at) - new Date(last.started_at)) : "running";
    steps.push({
      label: `Attempt ${last.attempt}`,
      at: last.started_at,
      note: `${last.outcome || "in progress"} · ${took}`,
      error: last.error,
      outcome: last.outcome,
    });
  }
  if (run.finished_at)
    steps.push({ label: `Finished ${run.status}`, at: run.finished_at, note: run.duration_ms !== null && run.duration_ms !== undefined ? `took ${duration(run.duration_ms)}` : "" });
  // In time order (a stable sort: steps at one instant keep their order); the attempts of an earlier execution
  // come before its re-queue.
  const time = (step) => new Date(step.at).getTime();
  return steps.sort((a, b) => time(a) - time(b));
}

// A durable run's attempt records, each run of yielded segments of one attempt as one group (the timeline shows
// it as one line with its count and time); every other record alone.
function collapsedSegments(history) {
  const groups = [];
  for (const attempt of history) {
    const group = groups[groups.length - 1];
    const yielded = attempt.outcome === "yielded";
    if (yielded && group && group[0].outcome === "yielded" && group[0].attempt === attempt.attempt) group.push(attempt);
    else groups.push([attempt]);
  }
  return groups;
}

function Timeline({ run }) {
  const steps = timeline(run);
  // Offsets from the occurrence, which a precise run's early send or a trigger's claim may come before.
  const origin = new Date(run.nominal_at || run.scheduled_for).getTime();
  return html`<ol class="timeline" aria-label="Timeline">
    ${steps.map(
      (step) => html`<li class=${step.outcome ? `outcome-${step.outcome}` : step.requeue ? "requeue" : ""}>
        <span class="tl-label">${step.label}</span>
        <span class="tl-time"><${Time} value=${step.at} ms=${true} /> <span class="muted">${Number.isNaN(origin) ? "" : offset(new Date(step.at).getTime() - origin)}</span></span>
        ${step.note ? html`<span class="tl-note">${step.note}</span>` : null}
        ${step.error ? html`<span class="tl-error">${step.error}</span>` : null}
      </li>`,
    )}
  </ol>`;
}

function RunLogs({ id, finished }) {
  const logs = useLoad(() => get(`/v1/runs/${enc(id)}/logs`), [id, finished], finished ? 0 : 3000);
  return html`<section aria-labelledby="logs-title">
    <h2 id="logs-title">Logs</h2>
    <${ErrorBox} error=${logs.error} />
    ${logs.data
      ? html`${logs.data.insights_url
            ? html`<p><a href=${logs.data.insights_url} target="_blank" rel="noopener noreferrer">Open in CloudWatch Logs Insights</a></p>`
            : null}
          ${logs.data.lines.length === 0
            ? html`<p class="muted">No log lines yet.</p>`
            : html`<table class="list logs">
                <caption class="visually-hidden">Log lines</caption>
                <thead><tr><th>At <${ZoneLabel} /></th><th>Attempt</th><th>Level</th><th>Message</th></tr></thead>
                <tbody>
                  ${logs.data.lines.map(
                    (line) => html`<tr class=${`level-${String(line.level).toLowerCase()}`}>
                      <${Cell} label="At" className="mono">${when(line.at, { ms: true })}<//>
                      <${Cell} label="Attempt">${line.attempt}<//>
                      <${Cell} label="Level">${line.level}<//>
                      <${Cell} label="Message" className="mono">${line.message}${line.fields && Object.keys(line.fields).length ? html` <span class="muted">${JSON.stringify(line.fields)}</span>` : null}<//>
                    </tr>`,
                  )}
                </tbody>
              </table>`}
          ${logs.data.truncated ? html`<p class="muted">Truncated at ${logs.data.limit_bytes} bytes.</p>` : null}`
      : logs.error
        ? null
        : html`<${Loading} what="logs" />`}
  </section>`;
}

function ResultPreview({ id }) {
  const result = useLoad(() => get(`/v1/runs/${enc(id)}/result`), [id]);
  if (result.error) return html`<${ErrorBox} error=${result.error} />`;
  if (!result.data && result.loading) return html`<${Loading} what="the result" />`;
  const text = JSON.stringify(result.data, null, 2) || "";
  return html`<pre class="preview" aria-label="Result">${text.length > 4000 ? `${text.slice(0, 4000)}\n…` : text}</pre>`;
}

export function RunPage({ id }) {
  const [confirming, setConfirming] = useState(null); // "retry" | "cancel"
  const [notice, setNotice] = useState(null);
  const run = useLoadWhile(() => get(`/v1/runs/${enc(id)}`), [id], (r) => !TERMINAL_RUN.has(r.status), 2000, 30000);
  if (run.error && !run.data) return html`<section><h1 tabindex="-1">Run</h1><${ErrorBox} error=${run.error} /></section>`;
  if (!run.data) return html`<${Loading} what="the run" />`;
  const r = run.data;
  const finished = TERMINAL_RUN.has(r.status);
  return html`<section>
    <p class="crumbs">${r.workflow_run_id ? html`<a href="#/workflows">Workflows</a>` : html`<a href="#/jobs">Jobs</a>`} / <${JobLink} id=${r.job_id} /> /</p>
    <h1 tabindex="-1">Run <span class="mono">${r.id}</span> <${Status} value=${r.status} /></h1>
    ${r.status === "FAILED"
      ? html`<div class="toolbar"><button type="button" onClick=${() => setConfirming("retry")}>Retry run</button></div>`
      : null}
    ${r.status === "RUNNING"
      ? html`<div class="toolbar"><button type="button" class="danger" onClick=${() => setConfirming("cancel")}>Cancel run</button></div>`
      : null}
    <div aria-live="polite">${notice ? html`<p class="notice">${notice}</p>` : null}</div>
    <div class="columns">
      <div>
        <h2>Timeline</h2>
        <${Timeline} run=${r} />
      </div>
      <dl class="facts">
        ${r.progress ? html`<dt>Progress</dt><dd><${Progress} progress=${r.progress} /> <span class="muted">at <${Time} value=${r.progress.updated_at} /></span></dd>` : null}
        <dt>Attempts</dt><dd>${r.attempts}${r.max_attempts ? ` of ${r.max_attempts}` : ""}${r.segments ? ` (${r.segments + 1} segments)` : ""}</dd>
        <dt>Late</dt><dd>${duration(r.lateness_ms)}</dd>
        ${r.segments
          ? html`<dt>Handler time</dt><dd>${duration(r.handler_ms)} <span class="muted">every segment and attempt${r.requeues ? ", of every execution" : ""}</span></dd>
              <dt>Last segment</dt><dd>${duration(r.duration_ms)}</dd>`
          : html`<dt>Took</dt><dd>${duration(r.duration_ms)}${r.handler_ms !== null && r.handler_ms !== undefined && r.handler_ms !== r.duration_ms ? html` <span class="muted">(${duration(r.handler_ms)} over every attempt${r.requeues ? " of every execution" : ""})</span>` : null}</dd>`}
        ${r.wall_ms !== null && r.wall_ms !== undefined ? html`<dt>Wall time</dt><dd>${duration(r.wall_ms)} <span class="muted">${r.requeues ? "each execution's first start to its end, added" : "first start to end"}</span></dd>` : null}
        <dt>Band</dt><dd>${band(r.priority)} (priority ${r.priority})</dd>
        <${RunForecastFacts} run=${r} />
        ${r.skip_reason ? html`<dt>Skipped</dt><dd>${r.skip_reason}${r.skipped_count ? ` (${r.skipped_count} occurrences)` : ""}</dd>` : null}
        ${r.blocked_by ? html`<dt>Blocked by</dt><dd class="mono">${r.blocked_by}</dd>` : null}
        ${r.deferred ? html`<dt>Deferred</dt><dd>${r.deferred} times${r.deferred_reason ? ` (${r.deferred_reason})` : ""}</dd>` : null}
        ${r.workflow_run_id ? html`<dt>Workflow run</dt><dd><a href=${`#/workflow-runs/${enc(r.workflow_run_id)}`}>${r.workflow_run_id}</a> step ${r.step_id}</dd>` : null}
      </dl>
    </div>
    ${r.error
      ? html`<h2>Error</h2><div class="run-error"><p><strong>${r.error.type}</strong></p><pre>${r.error.message}</pre></div>`
      : null}
    ${r.result ? html`<h2>Result</h2><${ResultPreview} id=${r.id} />` : null}
    <${RunLogs} id=${r.id} finished=${finished} />
    <${ConfirmDialog}
      open=${confirming === "cancel"}
      title="Cancel this run?"
      confirmLabel="Cancel run"
      danger=${true}
      onConfirm=${async () => { await post(`/v1/runs/${enc(id)}/cancel`); setNotice("Asked to stop: the run ends SKIPPED (cancelled) at its next heartbeat."); run.reload(); }}
      onClose=${() => setConfirming(null)}
    >
      <p>Its handler is asked to stop; the run is recorded SKIPPED (cancelled), not retried.</p>
    <//>
    <${ConfirmDialog}
      open=${confirming === "retry"}
      title="Retry this run?"
      confirmLabel="Retry"
      onConfirm=${async () => { await post(`/v1/runs/${enc(id)}/retry`); setNotice("Re-queued."); run.reload(); }}
      onClose=${() => setConfirming(null)}
    >
      <p>The run is queued again and its attempts start from 1.</p>
    <//>
  </section>`;
}
