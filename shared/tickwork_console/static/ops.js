// The DLQ: FAILED runs, retried one by one or redriven together; one no retry takes out says why, and is dismissed.
import { html, useState } from "./vendor/htm-preact-standalone.module.js";
import { enc, get, post } from "./api.js";
import { JobLink } from "./names.js";
import { TenantCell, TenantHead, columnsWithTenant } from "./tenancy.js";
import { Cell, ConfirmDialog, ErrorBox, Loading, Pager, Status, Time, ZoneLabel, useLoad, usePager } from "./ui.js";

// ------------------------------------------------------------------ DLQ

const DIALOG = {
  retry: {
    title: "Retry this run?",
    label: "Retry",
    text: (run) => html`<p>Run <span class="mono">${run.id}</span> is queued again; its attempts start from 1.</p>`,
  },
  dismiss: {
    title: "Dismiss this run?",
    label: "Dismiss",
    text: (run) => html`<p>Run <span class="mono">${run.id}</span> leaves the DLQ without a retry; its record stays, saying who dismissed it.</p>`,
  },
  redrive: {
    title: "Redrive every FAILED run?",
    label: "Redrive all",
    text: () => html`<p>Every FAILED run of yours that can be retried is queued again; their attempts start from 1.</p>`,
  },
};

export function DlqPage() {
  const pager = usePager("dlq");
  const dlq = useLoad(() => get("/v1/dlq", { limit: 25, cursor: pager.cursor }), [pager.cursor], 10000);
  const [confirm, setConfirm] = useState(null); // {kind: "retry" | "dismiss", run} | {kind: "redrive"}
  const [notice, setNotice] = useState(null);
  const retry = async (run) => {
    await post(`/v1/runs/${enc(run.id)}/retry`);
    setNotice(html`Re-queued <a href=${`#/runs/${enc(run.id)}`}>${run.id}</a>.`);
    dlq.reload();
  };
  const dismiss = async (run) => {
    await post(`/v1/dlq/${enc(run.id)}/dismiss`);
    setNotice(html`Dismissed <a href=${`#/runs/${enc(run.id)}`}>${run.id}</a>; its record is kept.`);
    dlq.reload();
  };
  const redrive = async () => {
    const answer = await post("/v1/dlq/redrive", { all: true });
    const left = answer.refused.length ? `; ${answer.refused.length} cannot be retried (each says why)` : "";
    setNotice(`Re-queued ${answer.redriven} run${answer.redriven === 1 ? "" : "s"}${answer.more ? "; more remain, redrive again" : ""}${left}.`);
    dlq.reload();
  };
  const items = dlq.data ? dlq.data.items : [];
  return html`<section>
    <h1 tabindex="-1">Dead letters</h1>
    <p class="muted">Runs that used up their attempts (FAILED). Retry one, or redrive them all; one that cannot be retried says why, and can be dismissed.</p>
    <div class="toolbar">
      <button type="button" onClick=${() => setConfirm({ kind: "redrive" })} disabled=${items.length === 0}>Redrive all…</button>
    </div>
    <div aria-live="polite">${notice ? html`<p class="notice">${notice}</p>` : null}</div>
    <${ErrorBox} error=${dlq.error} />
    ${dlq.data
      ? html`<table class="list">
            <caption class="visually-hidden">FAILED runs, newest first</caption>
            <thead><tr><${TenantHead} /><th>Run</th><th>Job</th><th>Failed <${ZoneLabel} /></th><th>Attempts</th><th>Error</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>
              ${items.length === 0
                ? html`<tr><td colspan=${columnsWithTenant(6)} class="muted">The DLQ is empty.</td></tr>`
                : items.map(
                    (run) => html`<tr>
                      <${TenantCell} item=${run} />
                      <${Cell} label="Run" className="mono"><a href=${`#/runs/${enc(run.id)}`}>${run.id}</a><//>
                      <${Cell} label="Job"><${JobLink} id=${run.job_id} /><//>
                      <${Cell} label="Failed"><${Time} value=${run.finished_at} /><//>
                      <${Cell} label="Attempts">${run.attempts}<//>
                      <${Cell} label="Error" className="mono">${run.error ? `${run.error.type}: ${run.error.message}` : "—"}<//>
                      <${Cell} label="Actions"><div class="dlq-actions">${run.retry && !run.retry.retryable
                        ? html`<span class="muted">${run.retry.message}</span>
                            ${run.retry.reason === "workflow_step" ? html`<a href=${`#/workflow-runs/${enc(run.workflow_run_id)}`}>Its workflow run</a>` : null}
                            <button type="button" onClick=${() => setConfirm({ kind: "dismiss", run })}>Dismiss</button>`
                        : html`<button type="button" onClick=${() => setConfirm({ kind: "retry", run })}>Retry</button>`}</div><//>
                    </tr>`,
                  )}
            </tbody>
          </table>
          <${Pager} pager=${pager} nextCursor=${dlq.data.next_cursor} label="DLQ" />`
      : dlq.error
        ? null
        : html`<${Loading} what="the DLQ" />`}
    <${ConfirmDialog}
      open=${confirm !== null}
      title=${confirm ? DIALOG[confirm.kind].title : ""}
      confirmLabel=${confirm ? DIALOG[confirm.kind].label : ""}
      onConfirm=${() => ({ retry, dismiss, redrive })[confirm.kind](confirm.run)}
      onClose=${() => setConfirm(null)}
    >
      ${confirm ? DIALOG[confirm.kind].text(confirm.run) : null}
    <//>
  </section>`;
}
