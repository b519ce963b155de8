// The DLQ (FAILED runs) and workflows.
import { html, useState } from "./vendor/htm-preact-standalone.module.js";
import { enc, get, post } from "./api.js";
import { Dag } from "./dag.js";
import {
  Cell,
  ConfirmDialog,
  ErrorBox,
  Loading,
  Pager,
  Status,
  Time,
  scheduleText,
  useLoad,
  useLoadWhile,
  usePager,
} from "./ui.js";

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
                      <${Cell} label="Job" className="mono"><a href=${`#/jobs/${enc(run.job_id)}`}>${run.job_id}</a><//>
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

// ------------------------------------------------------------------ workflows

export function WorkflowsPage() {
  const pager = usePager("workflows");
  const list = useLoad(() => get("/v1/workflows", { limit: 25, cursor: pager.cursor }), [pager.cursor], 10000);
  return html`<section>
    <h1 tabindex="-1">Workflows</h1>
    <${ErrorBox} error=${list.error} />
    ${list.data
      ? html`<table class="list">
            <caption class="visually-hidden">Workflows, newest first</caption>
            <thead><tr><th>Name</th><th>State</th><th>Schedule</th><th>Steps</th><th>Next run (UTC)</th></tr></thead>
            <tbody>
              ${list.data.items.length === 0
                ? html`<tr><td colspan="5" class="muted">No workflows.</td></tr>`
                : list.data.items.map(
                    (w) => html`<tr>
                      <${Cell} label="Name"><a href=${`#/workflows/${enc(w.id)}`}>${w.name}</a><//>
                      <${Cell} label="State"><${Status} value=${w.state} /><//>
                      <${Cell} label="Schedule" className="mono">${scheduleText(w.schedule)}<//>
                      <${Cell} label="Steps">${w.steps.length}<//>
                      <${Cell} label="Next run"><${Time} value=${w.next_run_at} /><//>
                    </tr>`,
                  )}
            </tbody>
          </table>
          <${Pager} pager=${pager} nextCursor=${list.data.next_cursor} label="Workflows" />`
      : list.error
        ? null
        : html`<${Loading} what="workflows" />`}
  </section>`;
}

export function WorkflowPage({ id }) {
  const workflow = useLoad(() => get(`/v1/workflows/${enc(id)}`), [id]);
  const pager = usePager(id);
  const runs = useLoad(() => get(`/v1/workflows/${enc(id)}/runs`, { limit: 20, cursor: pager.cursor }), [id, pager.cursor], 5000);
  const [notice, setNotice] = useState(null);
  const [error, setError] = useState(null);
  if (workflow.error) return html`<section><h1 tabindex="-1">Workflow</h1><${ErrorBox} error=${workflow.error} /></section>`;
  if (!workflow.data) return html`<${Loading} what="the workflow" />`;
  const w = workflow.data;
  const trigger = async () => {
    setError(null);
    try {
      const run = await post(`/v1/workflows/${enc(id)}/trigger`);
      setNotice(html`Triggered: <a href=${`#/workflow-runs/${enc(run.id)}`}>${run.id}</a>`);
      runs.reload();
    } catch (err) {
      setError(err);
    }
  };
  return html`<section>
    <p class="crumbs"><a href="#/workflows">Workflows</a> /</p>
    <h1 tabindex="-1">${w.name} <${Status} value=${w.state} /></h1>
    <div class="toolbar"><button type="button" onClick=${trigger}>Trigger now</button></div>
    <div aria-live="polite">${notice ? html`<p class="notice">${notice}</p>` : null}</div>
    <${ErrorBox} error=${error} />
    <p><span class="muted">Schedule</span> <span class="mono">${scheduleText(w.schedule)}</span></p>
    <${Dag} steps=${w.steps} />
    <h2>Runs</h2>
    <${ErrorBox} error=${runs.error} />
    ${runs.data
      ? html`<table class="list">
            <caption class="visually-hidden">Workflow runs, newest first</caption>
            <thead><tr><th>Run</th><th>Status</th><th>Scheduled (UTC)</th><th>Finished</th></tr></thead>
            <tbody>
              ${runs.data.items.length === 0
                ? html`<tr><td colspan="4" class="muted">No runs yet.</td></tr>`
                : runs.data.items.map(
                    (r) => html`<tr>
                      <${Cell} label="Run" className="mono"><a href=${`#/workflow-runs/${enc(r.id)}`}>${r.id}</a><//>
                      <${Cell} label="Status"><${Status} value=${r.status} /><//>
                      <${Cell} label="Scheduled"><${Time} value=${r.scheduled_for} /><//>
                      <${Cell} label="Finished"><${Time} value=${r.finished_at} /><//>
                    </tr>`,
                  )}
            </tbody>
          </table>
          <${Pager} pager=${pager} nextCursor=${runs.data.next_cursor} label="Workflow runs" />`
      : null}
  </section>`;
}

export function WorkflowRunPage({ id }) {
  const run = useLoadWhile(() => get(`/v1/workflow-runs/${enc(id)}`), [id], (r) => r.status === "RUNNING" || r.status === "COMPENSATING", 2000, 30000);
  const workflowId = run.data ? run.data.workflow_id : null;
  const workflow = useLoad(() => (workflowId ? get(`/v1/workflows/${enc(workflowId)}`) : Promise.resolve(null)), [workflowId]);
  const [confirm, setConfirm] = useState(null);
  const [notice, setNotice] = useState(null);
  if (run.error && !run.data) return html`<section><h1 tabindex="-1">Workflow run</h1><${ErrorBox} error=${run.error} /></section>`;
  if (!run.data) return html`<${Loading} what="the workflow run" />`;
  const r = run.data;
  // The DAG's edges come from the workflow's definition, so it is drawn once that has loaded (not first without
  // edges, then redrawn); a step the definition no longer has is drawn alone.
  const defined = workflow.data ? workflow.data.steps : [];
  const known = new Set(defined.map((s) => s.id));
  const steps = [...defined, ...Object.keys(r.steps).filter((s) => !known.has(s)).map((s) => ({ id: s, depends_on: [] }))];
  return html`<section>
    <p class="crumbs"><a href="#/workflows">Workflows</a> / <a href=${`#/workflows/${enc(r.workflow_id)}`}>${workflow.data ? workflow.data.name : r.workflow_id}</a> /</p>
    <h1 tabindex="-1">Workflow run <span class="mono">${r.id}</span> <${Status} value=${r.status} /></h1>
    <div class="toolbar">
      ${r.status === "FAILED" ? html`<button type="button" onClick=${() => setConfirm("retry")}>Retry failed steps</button>` : null}
      ${r.status === "RUNNING" ? html`<button type="button" class="danger" onClick=${() => setConfirm("cancel")}>Cancel run</button>` : null}
    </div>
    <div aria-live="polite">${notice ? html`<p class="notice">${notice}</p>` : null}</div>
    <p class="muted">Scheduled <${Time} value=${r.scheduled_for} /> · started <${Time} value=${r.started_at} /> · finished <${Time} value=${r.finished_at} /></p>
    <${ErrorBox} error=${workflow.error} />
    ${steps.length && (workflow.data || workflow.error) ? html`<${Dag} steps=${steps} states=${r.steps} compensations=${r.compensations} />` : null}
    <${ConfirmDialog}
      open=${confirm !== null}
      title=${confirm === "retry" ? "Retry the failed steps?" : "Cancel this workflow run?"}
      confirmLabel=${confirm === "retry" ? "Retry" : "Cancel run"}
      danger=${confirm === "cancel"}
      onConfirm=${async () => {
        await post(`/v1/workflow-runs/${enc(id)}/${confirm}`);
        setNotice(confirm === "retry" ? "Retrying." : "Cancelled.");
        run.reload();
      }}
      onClose=${() => setConfirm(null)}
    >
      <p>${confirm === "retry"
        ? "Its FAILED steps run again, with the steps skipped because of them; nothing that succeeded runs again."
        : "Steps not started are SKIPPED; running ones are asked to stop."}</p>
    <//>
  </section>`;
}
