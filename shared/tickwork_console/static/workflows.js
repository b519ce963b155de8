// Workflows: the list, one workflow (its DAG, its runs, and its actions: trigger, pause, resume, edit, cancel, and
// cancel a running run), and one workflow run.
import { html, useState } from "./vendor/htm-preact-standalone.module.js";
import { del, enc, get, post } from "./api.js";
import { Attribution, ResourceAudit, TabPanel, Tabs } from "./audit.js";
import { Dag } from "./dag.js";
import { TenantCell, TenantHead, columnsWithTenant } from "./tenancy.js";
import { EditWorkflowDialog } from "./workflow_form.js";
import { Cell, ConfirmDialog, ErrorBox, Loading, Pager, Status, Time, ZoneLabel, scheduleText, useLoad, useLoadWhile, usePager } from "./ui.js";

// ------------------------------------------------------------------ workflows

export function WorkflowsPage() {
  const pager = usePager("workflows");
  const list = useLoad(() => get("/v1/workflows", { limit: 25, cursor: pager.cursor }), [pager.cursor], 10000);
  return html`<section>
    <h1 tabindex="-1">Workflows</h1>
    <div class="toolbar"><a class="button primary" href="#/workflows/new">New workflow</a></div>
    <${ErrorBox} error=${list.error} />
    ${list.data
      ? html`<table class="list">
            <caption class="visually-hidden">Workflows, newest first</caption>
            <thead><tr><${TenantHead} /><th>Name</th><th>State</th><th>Schedule</th><th>Steps</th><th>Next run <${ZoneLabel} /></th></tr></thead>
            <tbody>
              ${list.data.items.length === 0
                ? html`<tr><td colspan=${columnsWithTenant(5)} class="muted">No workflows.</td></tr>`
                : list.data.items.map(
                    (w) => html`<tr>
                      <${TenantCell} item=${w} />
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

const ENDED = new Set(["CANCELLED", "COMPLETED"]);
const WORKFLOW_TABS = [
  ["runs", "Runs"],
  ["audit", "Audit"],
];

export function WorkflowPage({ id, query }) {
  const workflow = useLoad(() => get(`/v1/workflows/${enc(id)}`), [id], 10000);
  const pager = usePager(id);
  const runs = useLoad(() => get(`/v1/workflows/${enc(id)}/runs`, { limit: 20, cursor: pager.cursor }), [id, pager.cursor], 5000);
  const [notice, setNotice] = useState(null);
  const [error, setError] = useState(null);
  const [dialog, setDialog] = useState(null); // "edit" | "cancel" | {run}
  if (workflow.error && !workflow.data) return html`<section><h1 tabindex="-1">Workflow</h1><${ErrorBox} error=${workflow.error} /></section>`;
  if (!workflow.data) return html`<${Loading} what="the workflow" />`;
  const w = workflow.data;
  const act = async (label, call) => {
    setError(null);
    setNotice(null);
    try {
      setNotice(label(await call()));
      workflow.reload();
      runs.reload();
    } catch (err) {
      setError(err);
    }
  };
  const path = `/v1/workflows/${enc(id)}`;
  const ended = ENDED.has(w.state);
  const tab = query && query.get("tab") === "audit" ? "audit" : "runs";
  return html`<section>
    <p class="crumbs"><a href="#/workflows">Workflows</a> /</p>
    <h1 tabindex="-1">${w.name} <${Status} value=${w.state} /></h1>
    <div class="toolbar" role="group" aria-label="Workflow actions">
      ${ended ? null : html`<button type="button" onClick=${() => act((run) => html`Triggered: <a href=${`#/workflow-runs/${enc(run.id)}`}>${run.id}</a>`, () => post(`${path}/trigger`))}>Trigger now</button>`}
      ${w.state === "ACTIVE" || w.state === "SUSPENDED" ? html`<button type="button" onClick=${() => act(() => "Paused.", () => post(`${path}/pause`))}>Pause</button>` : null}
      ${w.state === "PAUSED" || w.state === "SUSPENDED" ? html`<button type="button" onClick=${() => act(() => "Resumed.", () => post(`${path}/resume`))}>Resume</button>` : null}
      ${ended ? null : html`<button type="button" onClick=${() => setDialog("edit")}>Edit</button>`}
      ${ended ? null : html`<button type="button" class="danger" onClick=${() => setDialog("cancel")}>Cancel workflow</button>`}
    </div>
    <div aria-live="polite">${notice ? html`<p class="notice">${notice}</p>` : null}</div>
    <${ErrorBox} error=${error} />
    <p><span class="muted">Schedule</span> <span class="mono">${scheduleText(w.schedule)}</span> · <span class="muted">next run</span> <${Time} value=${w.next_run_at} /></p>
    <dl class="facts attribution"><${Attribution} item=${w} /></dl>
    <${Dag} steps=${w.steps} />
    <${Tabs} tabs=${WORKFLOW_TABS} current=${tab} base=${`#/workflows/${enc(id)}`} label="Workflow sections" />
    ${tab === "audit" ? html`<${TabPanel} name="audit"><${ResourceAudit} item=${w} /><//>` : null}
    ${tab === "audit" ? null : html`<${TabPanel} name="runs">
    <h2>Runs</h2>
    <${ErrorBox} error=${runs.error} />
    ${runs.data
      ? html`<table class="list">
            <caption class="visually-hidden">Workflow runs, newest first</caption>
            <thead><tr><th>Run</th><th>Status</th><th>Scheduled <${ZoneLabel} /></th><th>Finished</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>
              ${runs.data.items.length === 0
                ? html`<tr><td colspan="5" class="muted">No runs yet.</td></tr>`
                : runs.data.items.map(
                    (r) => html`<tr>
                      <${Cell} label="Run" className="mono"><a href=${`#/workflow-runs/${enc(r.id)}`}>${r.id}</a><//>
                      <${Cell} label="Status"><${Status} value=${r.status} /><//>
                      <${Cell} label="Scheduled"><${Time} value=${r.scheduled_for} /><//>
                      <${Cell} label="Finished"><${Time} value=${r.finished_at} /><//>
                      <${Cell} label="Actions">${r.status === "RUNNING" ? html`<button type="button" class="danger" onClick=${() => setDialog({ run: r })}>Cancel run</button>` : null}<//>
                    </tr>`,
                  )}
            </tbody>
          </table>
          <${Pager} pager=${pager} nextCursor=${runs.data.next_cursor} label="Workflow runs" />`
      : null}
    <//>`}
    ${dialog === "edit"
      ? html`<${EditWorkflowDialog} workflow=${w} open=${true} onClose=${() => setDialog(null)} onSaved=${() => { setNotice("Saved."); workflow.reload(); }} />`
      : null}
    <${ConfirmDialog}
      open=${dialog === "cancel"}
      title="Cancel this workflow?"
      confirmLabel="Cancel workflow"
      danger=${true}
      onConfirm=${async () => { await del(path); setNotice("Cancelled."); workflow.reload(); }}
      onClose=${() => setDialog(null)}
    >
      <p>${w.name} will have no new runs.</p>
    <//>
    <${ConfirmDialog}
      open=${dialog !== null && typeof dialog === "object"}
      title="Cancel this workflow run?"
      confirmLabel="Cancel run"
      danger=${true}
      onConfirm=${async () => { await post(`/v1/workflow-runs/${enc(dialog.run.id)}/cancel`); setNotice(`Cancelled ${dialog.run.id}.`); runs.reload(); }}
      onClose=${() => setDialog(null)}
    >
      <p>Steps not started are SKIPPED; running ones are asked to stop.</p>
    <//>
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
