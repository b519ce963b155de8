// Creating a job (the New job page) and editing one (its Edit dialog): the schedule builder with its live preview,
// a payload editor checked against the job type's schema, and each error shown on the field it names.
import { html, useEffect, useState } from "./vendor/htm-preact-standalone.module.js";
import { enc } from "./api.js";
import { Field, FieldError, createFrom, errorsFor, parseJson, parseTags } from "./forms.js";
import { ScheduleWithPreview } from "./schedule.js";
import { ScheduledEditFields, saveScheduledEdit, useScheduledEdit } from "./scheduled_edit.js";
import { jobTypes, validate } from "./schema.js";
import { ConfirmDialog, ErrorBox } from "./ui.js";

// The payload as JSON text, checked as it is typed against the type's payload schema (from the OpenAPI document).
function PayloadField({ types, type, text, onInput, errors }) {
  const schema = types ? types[type] : null;
  const fields = schema && schema.properties ? Object.keys(schema.properties) : [];
  return html`<div>
    <${Field} label="Payload (JSON)" field="payload" errors=${errors} value=${text} onInput=${onInput} textarea=${true} rows="6" class="mono" spellcheck="false" />
    ${fields.length ? html`<p class="muted hint">${type} takes: <span class="mono">${fields.join(", ")}</span></p>` : null}
  </div>`;
}

// The form's own checks of the payload: JSON, then the type's schema.
function payloadChecks(text, type, types) {
  const parsed = parseJson(text, "payload");
  if (parsed.errors.length) return parsed;
  const schema = types && types[type];
  return { value: parsed.value, errors: schema ? validate(schema, parsed.value) : [] };
}

// The payload's own errors show as it is typed; the API's payload errors until the payload has some of its own.
function withPayloadChecks(errors, payloadErrors) {
  const payload = (e) => e.field === "payload" || e.field.startsWith("payload.") || e.field.startsWith("payload[");
  return [...errors.filter((e) => !payload(e)), ...(payloadErrors.length ? payloadErrors : errors.filter(payload))];
}

function useJobTypes() {
  const [types, setTypes] = useState(null);
  useEffect(() => {
    jobTypes().then(setTypes, () => setTypes({}));
  }, []);
  return types;
}

// ------------------------------------------------------------------ New job

export function NewJobPage() {
  const types = useJobTypes();
  const [name, setName] = useState("");
  const [type, setType] = useState("echo");
  const [schedule, setSchedule] = useState(null);
  const [payload, setPayload] = useState("{}");
  const [priority, setPriority] = useState("5");
  const [tags, setTags] = useState("");
  const [attempts, setAttempts] = useState("3");
  const [errors, setErrors] = useState([]);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const typedPayload = payloadChecks(payload, type, types);
  // The payload's own errors show as it is typed; the rest once the form is sent.
  const shown = withPayloadChecks(errors, typedPayload.errors);
  const submit = (event) => {
    event.preventDefault();
    const parsedTags = parseTags(tags);
    const body = {
      name: name.trim(),
      type,
      schedule,
      payload: typedPayload.value,
      priority: Number(priority),
      tags: parsedTags.value,
      retry: { max_attempts: Number(attempts) },
    };
    const local = [...typedPayload.errors, ...parsedTags.errors];
    const pageOf = (job) => `#/jobs/${enc(job.id)}`;
    return createFrom({ path: "/v1/jobs", body, local, pageOf, setErrors, setError, setBusy });
  };
  return html`<section>
    <p class="crumbs"><a href="#/jobs">Jobs</a> /</p>
    <h1 tabindex="-1">New job</h1>
    <form class="job-form" onSubmit=${submit} aria-label="New job" novalidate>
      <div class="form-grid">
        <${Field} label="Name" field="name" errors=${shown} value=${name} onInput=${setName} placeholder="nightly-report" />
        <div class="field">
          <label for="field-type">Type</label>
          <select id="field-type" value=${type} onChange=${(e) => setType(e.currentTarget.value)}>
            ${Object.keys(types || { echo: {} }).map((t) => html`<option value=${t}>${t}</option>`)}
          </select>
          <${FieldError} id="field-type-errors" errors=${errorsFor(shown, "type")} />
        </div>
        <${Field} label="Priority (0-9)" field="priority" errors=${shown} value=${priority} onInput=${setPriority} type="number" min="0" max="9" />
        <${Field} label="Attempts" field="retry" errors=${shown} value=${attempts} onInput=${setAttempts} type="number" min="1" />
        <${Field} label="Tags (key=value, comma-separated)" field="tags" errors=${shown} value=${tags} onInput=${setTags} placeholder="team=data" />
      </div>
      <${ScheduleWithPreview} initial=${{ cron: "0 9 * * *", timezone: "UTC" }} schedule=${schedule} setSchedule=${setSchedule} errors=${shown} />
      <${PayloadField} types=${types} type=${type} text=${payload} onInput=${setPayload} errors=${shown} />
      <${ErrorBox} error=${error} />
      <div class="actions">
        <a class="button" href="#/jobs">Cancel</a>
        <button type="submit" class="primary" disabled=${busy}>Create job</button>
      </div>
    </form>
  </section>`;
}

// ------------------------------------------------------------------ Edit

export function EditJobDialog({ job, open, onClose, onSaved }) {
  const types = useJobTypes();
  const edit = useScheduledEdit(job);
  const [payload, setPayload] = useState(JSON.stringify(job.payload || {}, null, 2));
  const typedPayload = payloadChecks(payload, job.type, types);
  const shown = withPayloadChecks(edit.errors, typedPayload.errors);
  const save = async () => {
    await saveScheduledEdit(edit, `/v1/jobs/${enc(job.id)}`, { payload: typedPayload.value }, typedPayload.errors);
    onSaved();
  };
  return html`<${ConfirmDialog} open=${open} title=${`Edit ${job.name}`} confirmLabel="Save" onConfirm=${save} onClose=${onClose}>
    <${ScheduledEditFields} edit=${edit} errors=${shown} />
    <${PayloadField} types=${types} type=${job.type} text=${payload} onInput=${setPayload} errors=${shown} />
  <//>`;
}
