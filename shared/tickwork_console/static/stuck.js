// The health strips: the caller's stuck runs (GET /v1/runs/stuck), each linked to its run page with why and for
// how long, as the StuckRuns alarm counts them (durations run from the API's own clock, as_of, not the browser's);
// and, deployed in several regions, the regions' roles and the replication lag as this region sees them
// (GET /v1/health, docs/regions.md).
import { html } from "./vendor/htm-preact-standalone.module.js";
import { enc, get } from "./api.js";
import { JobLink } from "./names.js";
import { ErrorBox, Status, Time, duration, useLoad } from "./ui.js";

// How long past what: a QUEUED run's `since` is its scheduled time, a RUNNING run's the end of its lease.
const PAST = {
  queued_past_threshold: "past its time",
  running_past_lease: "past its lease",
};

function StuckRun({ run, asOf }) {
  const late = new Date(asOf).getTime() - new Date(run.since).getTime();
  return html`<li>
    <a class="mono" href=${`#/runs/${enc(run.run_id)}`}>${run.run_id}</a>
    <${Status} value=${run.status} />
    <span class="stuck-why">${duration(late)} ${PAST[run.reason] || run.reason}</span>
    <span class="muted">· <${JobLink} id=${run.job_id} /></span>
  </li>`;
}

export function StuckRunsStrip() {
  // Every 15 s: each call reads the due entries of the next twenty minutes or so (docs/operations.md).
  const stuck = useLoad(() => get("/v1/runs/stuck"), [], 15000);
  const items = stuck.data ? stuck.data.items : [];
  return html`<section class=${`health-strip${items.length ? " unhealthy" : ""}`} aria-labelledby="stuck-title">
    <h2 id="stuck-title">Stuck runs</h2>
    <${ErrorBox} error=${stuck.error} />
    ${stuck.data
      ? items.length
        ? html`<ul class="stuck-runs" aria-label="Stuck runs">
              ${items.map((run) => html`<${StuckRun} key=${run.run_id} run=${run} asOf=${stuck.data.as_of} />`)}
            </ul>
            ${stuck.data.more ? html`<p class="muted">More are stuck than shown: the oldest ${items.length} are listed.</p>` : null}`
        : html`<p class="muted">No stuck runs.</p>`
      : null}
  </section>`;
}

// The regions' block: nothing for a single region. Every 60 s: the API reads the lag at most once a minute.
export function RegionStrip() {
  const health = useLoad(() => get("/v1/health"), [], 60000);
  const region = health.data && health.data.region;
  if (!region || region.mode === "single") return null;
  const role = region.mode === "strong" ? "active (all regions are)" : region.active_region === region.region ? "active" : "passive";
  const lag = region.replication_lag_ms;
  return html`<section class="health-strip" aria-labelledby="region-title">
    <h2 id="region-title">Regions</h2>
    <dl class="region-roles">
      <dt>Mode</dt><dd>${region.mode}</dd>
      <dt>This region</dt><dd><span class="mono">${region.region}</span> · ${role}</dd>
      ${region.mode === "eventual"
        ? html`<dt>Active region</dt><dd>${region.active_region ? html`<span class="mono">${region.active_region}</span>` : region.handing_over_to ? html`none: handing over from <span class="mono">${region.handing_over_from}</span> to <span class="mono">${region.handing_over_to}</span>` : "none yet"}</dd>
            <dt>Epoch</dt><dd>${region.epoch ?? "none"}${region.since ? html` · since <${Time} value=${region.since} />` : null}</dd>
            <dt>Replication lag</dt><dd>${lag === null || lag === undefined ? html`<span class="muted">unknown: ${region.replication_lag_reason}</span>` : `${lag} ms`}</dd>`
        : null}
    </dl>
  </section>`;
}
