// Creating a workflow (the New workflow page) and editing one (its Edit dialog): the schedule builder with its
// live preview, the steps as JSON, and each error shown on the field it names.
import { html, useState } from "./vendor/htm-preact-standalone.module.js";
import { enc } from "./api.js";
import { Field, createFrom, errorsFor, parseJson, parseTags } from "./forms.js";
import { ScheduleWithPreview } from "./schedule.js";
import { ScheduledEditFields, saveScheduledEdit, useScheduledEdit } from "./scheduled_edit.js";
import { ConfirmDialog, ErrorBox } from "./ui.js";

// A starting point: two echo steps, the second after the first.
const STARTER_STEPS = [
  { id: "extract", type: "echo", payload: { rows: 3 } },
  { id: "load", type: "echo", depends_on: ["extract"] },
];

export function NewWorkflowPage() {
  const [name, setName] = useState("");
  const [priority, setPriority] = useState("5");
  const [tags, setTags] = useState("");
  const [schedule, setSchedule] = useState(null);
  const [steps, setSteps] = useState(JSON.stringify(STARTER_STEPS, null, 2));
  const [errors, setErrors] = useState([]);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = (event) => {
    event.preventDefault();
    const parsedSteps = parseJson(steps, "steps");
    const parsedTags = parseTags(tags);
    const body = { name: name.trim(), schedule, steps: parsedSteps.value, priority: Number(priority), tags: parsedTags.value };
    const local = [...parsedSteps.errors, ...parsedTags.errors];
    const pageOf = (workflow) => `#/workflows/${enc(workflow.id)}`;
    return createFrom({ path: "/v1/workflows", body, local, pageOf, setErrors, setError, setBusy });
  };
  return html`<section>
    <p class="crumbs"><a href="#/workflows">Workflows</a> /</p>
    <h1 tabindex="-1">New workflow</h1>
    <form class="job-form" onSubmit=${submit} aria-label="New workflow" novalidate>
      <div class="form-grid">
        <${Field} label="Name" field="name" errors=${errors} value=${name} onInput=${setName} placeholder="nightly-etl" />
        <${Field} label="Priority (0-9)" field="priority" errors=${errors} value=${priority} onInput=${setPriority} type="number" min="0" max="9" />
        <${Field} label="Tags (key=value, comma-separated)" field="tags" errors=${errors} value=${tags} onInput=${setTags} placeholder="team=data" />
      </div>
      <${ScheduleWithPreview} initial=${{ cron: "0 1 * * *", timezone: "UTC" }} schedule=${schedule} setSchedule=${setSchedule} errors=${errors} />
      <${Field} label="Steps (JSON)" field="steps" errors=${errorsFor(errors, "steps")} value=${steps} onInput=${setSteps} textarea=${true} rows="10" class="mono" spellcheck="false" />
      <p class="muted hint">Each step: <span class="mono">id</span>, <span class="mono">type</span>, and optionally <span class="mono">payload</span>, <span class="mono">depends_on</span>, <span class="mono">trigger_rule</span>, <span class="mono">retry</span>.</p>
      <${ErrorBox} error=${error} />
      <div class="actions">
        <a class="button" href="#/workflows">Cancel</a>
        <button type="submit" class="primary" disabled=${busy}>Create workflow</button>
      </div>
    </form>
  </section>`;
}

export function EditWorkflowDialog({ workflow, open, onClose, onSaved }) {
  const edit = useScheduledEdit(workflow);
  const [steps, setSteps] = useState(JSON.stringify(workflow.steps, null, 2));
  const save = async () => {
    const parsedSteps = parseJson(steps, "steps");
    await saveScheduledEdit(edit, `/v1/workflows/${enc(workflow.id)}`, { steps: parsedSteps.value }, parsedSteps.errors);
    onSaved();
  };
  return html`<${ConfirmDialog} open=${open} title=${`Edit ${workflow.name}`} confirmLabel="Save" onConfirm=${save} onClose=${onClose}>
    <${ScheduledEditFields} edit=${edit} errors=${edit.errors} />
    <${Field} label="Steps (JSON)" field="steps" errors=${errorsFor(edit.errors, "steps")} value=${steps} onInput=${setSteps} textarea=${true} rows="8" class="mono" spellcheck="false" />
  <//>`;
}
