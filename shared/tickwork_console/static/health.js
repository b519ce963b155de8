// A job's health at a glance: its last run (the newest that started, GET /v1/jobs/{id}/runs?started=true, one
// per job shown: the job record does not carry it; a QUEUED run claimed ahead of its time is not its last, a run
// re-queued by a retry or redrive is: it ran), its state shown with that run's outcome, and the health filter's classes.
import { html, useEffect, useState } from "./vendor/htm-preact-standalone.module.js";
import { enc, get } from "./api.js";
import { Status, Time } from "./ui.js";

export const HEALTH = [
  ["", "any"],
  ["failing", "failing"],
  ["suspended", "suspended"],
  ["stuck", "stuck"],
];

const UNSETTLED = new Set(["QUEUED", "RUNNING", "RETRYING"]);
// Beyond its timeout, a run still unsettled this long, or a due time passed this long ago with no run, is stuck.
const STUCK_GRACE_MS = 5 * 60 * 1000;

// {job id: its newest run that started, or null}, for the jobs shown, asked again whenever `refreshKey` changes.
export function useLastRuns(jobs, refreshKey) {
  const [runs, setRuns] = useState({});
  const ids = (jobs || []).map((j) => j.id).join(",");
  useEffect(() => {
    let stale = false;
    Promise.all(
      (jobs || []).map((job) =>
        get(`/v1/jobs/${enc(job.id)}/runs`, { limit: 1, started: true }).then(
          (page) => [job.id, page.items[0] || null],
          () => [job.id, undefined],
        ),
      ),
    ).then((pairs) => {
      if (!stale) setRuns(Object.fromEntries(pairs));
    });
    return () => {
      stale = true;
    };
  }, [ids, refreshKey]);
  return runs;
}

// The health class a job falls in, or null: failing (its last run FAILED, or scheduled runs failing in a row),
// suspended (its breaker opened), stuck (a run unsettled past its timeout, or a due time long passed with no run).
export function healthOf(job, lastRun, now = Date.now()) {
  if (job.state === "SUSPENDED") return "suspended";
  if ((lastRun && lastRun.status === "FAILED") || job.consecutive_failures > 0) return "failing";
  if (lastRun && UNSETTLED.has(lastRun.status)) {
    const since = new Date(underWaySince(lastRun)).getTime();
    if (now - since > job.timeout_seconds * 1000 + STUCK_GRACE_MS) return "stuck";
  }
  if (job.state === "ACTIVE" && job.next_run_at && now - new Date(job.next_run_at).getTime() > STUCK_GRACE_MS) return "stuck";
  return null;
}

// The job's state; a COMPLETED job whose last run FAILED shows as failed, not as a quiet grey COMPLETED.
export function JobState({ job, lastRun }) {
  if (job.state === "COMPLETED" && lastRun && lastRun.status === "FAILED") {
    return html`<span class="status status-failed" title="Completed: its last run FAILED">COMPLETED · FAILED</span>`;
  }
  return html`<${Status} value=${job.state} />`;
}

// Since when an unsettled run has been under way: its execution's start; one re-queued by a retry or redrive and
// not started again, its re-queue (its occurrence may be days old); else its occurrence.
export function underWaySince(run) {
  return run.started_at || (run.requeues ? run.enqueued_at : null) || run.scheduled_for;
}

export function LastRun({ run }) {
  if (run === undefined) return html`<span class="muted">…</span>`;
  if (run === null) return html`<span class="muted">none yet</span>`;
  return html`<a href=${`#/runs/${enc(run.id)}`}><${Status} value=${run.status} /></a> <${Time} value=${run.finished_at || underWaySince(run)} />`;
}
