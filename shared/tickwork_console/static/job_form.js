// Creating a job (the New job page) and editing one (its Edit dialog): the schedule builder with its live preview,
// a payload editor checked against the job type's schema, and each error shown on the field it names.
import { html, useEffect, useState } from "./vendor/htm-preact-standalone.module.js";
import { enc, patch, post } from "./api.js";
import { FieldError, errorsFor, fieldErrorsOf, formError, parseJson } from "./forms.js";
import { ScheduleBuilder, SchedulePreview, sameSchedule } from "./schedule.js";
import { jobTypes, validate } from "./schema.js";
import { ConfirmDialog, ErrorBox, navigate } from "./ui.js";

export function tagsText(tags) {
  return Object.entries(tags || {})
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
}

// "team=data, env=prod" as {team: "data", env: "prod"}, or the field error.
function parseTags(text) {
  const tags = {};
  for (const part of text.split(",").map((p) => p.trim()).filter(Boolean)) {
    const at = part.indexOf("=");
    if (at <= 0) return { value: undefined, errors: [{ field: "tags", message: `"${part}" is not key=value` }] };
    tags[part.slice(0, at).trim()] = part.slice(at + 1).trim();
  }
  return { value: tags, errors: [] };
}

// A text input or textarea with its label and the errors naming `field` under it.
function Field({ label, field, errors, value, onInput, type = "text", textarea, ...rest }) {
  const mine = errorsFor(errors, field);
  const id = `field-${field}`;
  const common = {
    id,
    value,
    "aria-invalid": mine.length > 0,
    "aria-describedby": mine.length ? `${id}-errors` : undefined,
    onInput: (e) => onInput(e.currentTarget.value),
    ...rest,
  };
  return html`<div class="field">
    <label for=${id}>${label}</label>
    ${textarea ? html`<textarea ...${common}></textarea>` : html`<input type=${type} ...${common} />`}
    <${FieldError} id=${`${id}-errors`} errors=${mine} />
  </div>`;
}

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

function useJobTypes() {
  const [types, setTypes] = useState(null);
  useEffect(() => {
    jobTypes().then(setTypes, () => setTypes({}));
  }, []);
  return types;
}

// The schedule builder beside its preview; the preview's 422 shows on the builder's fields.
function ScheduleWithPreview({ initial, schedule, setSchedule, errors }) {
  const [previewErrors, setPreviewErrors] = useState([]);
  const shown = errorsFor(errors, "schedule").length ? errors : previewErrors;
  return html`<div class="schedule-with-preview">
    <${ScheduleBuilder} initial=${initial} onChange=${setSchedule} errors=${shown} />
    ${schedule ? html`<${SchedulePreview} schedule=${schedule} onErrors=${setPreviewErrors} />` : null}
  </div>`;
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
  const shown = [...errors.filter((e) => !e.field.startsWith("payload")), ...typedPayload.errors, ...errors.filter((e) => e.field.startsWith("payload") && !typedPayload.errors.length)];
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    const parsedTags = parseTags(tags);
    const local = [...typedPayload.errors, ...parsedTags.errors];
    if (local.length) {
      setErrors(local);
      setError(formError(local));
      return;
    }
    const body = {
      name: name.trim(),
      type,
      schedule,
      payload: typedPayload.value,
      priority: Number(priority),
      tags: parsedTags.value,
      retry: { max_attempts: Number(attempts) },
    };
    setBusy(true);
    try {
      const job = await post("/v1/jobs", body);
      navigate(`#/jobs/${enc(job.id)}`);
    } catch (err) {
      setErrors(fieldErrorsOf(err));
      setError(err);
    } finally {
      setBusy(false);
    }
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
  const [name, setName] = useState(job.name);
  const [priority, setPriority] = useState(String(job.priority));
  const [schedule, setSchedule] = useState(null);
  const [payload, setPayload] = useState(JSON.stringify(job.payload || {}, null, 2));
  const [tags, setTags] = useState(tagsText(job.tags));
  const [errors, setErrors] = useState([]);
  const typedPayload = payloadChecks(payload, job.type, types);
  const shown = [...errors.filter((e) => !e.field.startsWith("payload")), ...typedPayload.errors, ...errors.filter((e) => e.field.startsWith("payload") && !typedPayload.errors.length)];
  const save = async () => {
    const parsedTags = parseTags(tags);
    const local = [...typedPayload.errors, ...parsedTags.errors];
    setErrors(local);
    if (local.length) throw formError(local);
    const body = {};
    if (name !== job.name) body.name = name;
    if (Number(priority) !== job.priority) body.priority = Number(priority);
    if (schedule && !sameSchedule(schedule, job.schedule)) body.schedule = schedule;
    if (JSON.stringify(typedPayload.value) !== JSON.stringify(job.payload || {})) body.payload = typedPayload.value;
    if (JSON.stringify(parsedTags.value) !== JSON.stringify(job.tags || {})) body.tags = parsedTags.value;
    try {
      if (Object.keys(body).length) await patch(`/v1/jobs/${enc(job.id)}`, body);
    } catch (err) {
      setErrors(fieldErrorsOf(err));
      throw err;
    }
    onSaved();
  };
  return html`<${ConfirmDialog} open=${open} title=${`Edit ${job.name}`} confirmLabel="Save" onConfirm=${save} onClose=${onClose}>
    <div class="form-grid">
      <${Field} label="Name" field="name" errors=${shown} value=${name} onInput=${setName} />
      <${Field} label="Priority (0-9)" field="priority" errors=${shown} value=${priority} onInput=${setPriority} type="number" min="0" max="9" />
      <${Field} label="Tags (key=value, comma-separated)" field="tags" errors=${shown} value=${tags} onInput=${setTags} />
    </div>
    <${ScheduleWithPreview} initial=${job.schedule} schedule=${schedule} setSchedule=${setSchedule} errors=${shown} />
    <${PayloadField} types=${types} type=${job.type} text=${payload} onInput=${setPayload} errors=${shown} />
  <//>`;
}
