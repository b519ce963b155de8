// The DLQ: FAILED runs, retried one by one or redriven together.
import { html, useState } from "./vendor/htm-preact-standalone.module.js";
import { enc, get, post } from "./api.js";
import { JobLink } from "./names.js";
import { Cell, ConfirmDialog, ErrorBox, Loading, Pager, Status, Time, useLoad, usePager } from "./ui.js";

// ------------------------------------------------------------------ DLQ

export function DlqPage() {
  const pager = usePager("dlq");
  const dlq = useLoad(() => get("/v1/dlq", { limit: 25, cursor: pager.cursor }), [pager.cursor], 10000);
  const [confirm, setConfirm] = useState(null); // {kind: "retry", run} | {kind: "redrive"}
  const [notice, setNotice] = useState(null);
  const retry = async (run) => {
    await post(`/v1/runs/${enc(run.id)}/retry`);
    setNotice(html`Re-queued <a href=${`#/runs/${enc(run.id)}`}>${run.id}</a>.`);
    dlq.reload();
  };
  const redrive = async () => {
    const answer = await post("/v1/dlq/redrive", { all: true });
    setNotice(`Re-queued ${answer.redriven} run${answer.redriven === 1 ? "" : "s"}${answer.more ? "; more remain, redrive again" : ""}.`);
    dlq.reload();
  };
  const items = dlq.data ? dlq.data.items : [];
  return html`<section>
    <h1 tabindex="-1">Dead letters</h1>
    <p class="muted">Runs that used up their attempts (FAILED). Retry one, or redrive them all.</p>
    <div class="toolbar">
      <button type="button" onClick=${() => setConfirm({ kind: "redrive" })} disabled=${items.length === 0}>Redrive all…</button>
    </div>
    <div aria-live="polite">${notice ? html`<p class="notice">${notice}</p>` : null}</div>
    <${ErrorBox} error=${dlq.error} />
    ${dlq.data
      ? html`<table class="list">
            <caption class="visually-hidden">FAILED runs, newest first</caption>
            <thead><tr><th>Run</th><th>Job</th><th>Failed (UTC)</th><th>Attempts</th><th>Error</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>
              ${items.length === 0
                ? html`<tr><td colspan="6" class="muted">The DLQ is empty.</td></tr>`
                : items.map(
                    (run) => html`<tr>
                      <${Cell} label="Run" className="mono"><a href=${`#/runs/${enc(run.id)}`}>${run.id}</a><//>
                      <${Cell} label="Job"><${JobLink} id=${run.job_id} /><//>
                      <${Cell} label="Failed"><${Time} value=${run.finished_at} /><//>
                      <${Cell} label="Attempts">${run.attempts}<//>
                      <${Cell} label="Error" className="mono">${run.error ? `${run.error.type}: ${run.error.message}` : "—"}<//>
                      <${Cell} label="Actions"><button type="button" onClick=${() => setConfirm({ kind: "retry", run })}>Retry</button><//>
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
      title=${confirm && confirm.kind === "retry" ? "Retry this run?" : "Redrive every FAILED run?"}
      confirmLabel=${confirm && confirm.kind === "retry" ? "Retry" : "Redrive all"}
      onConfirm=${() => (confirm.kind === "retry" ? retry(confirm.run) : redrive())}
      onClose=${() => setConfirm(null)}
    >
      ${confirm && confirm.kind === "retry"
        ? html`<p>Run <span class="mono">${confirm.run.id}</span> is queued again; its attempts start from 1.</p>`
        : html`<p>Every FAILED run of yours is queued again; their attempts start from 1.</p>`}
    <//>
  </section>`;
}
