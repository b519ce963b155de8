// Pieces the create and edit forms share: field errors (the API's 422 `errors[]`, or the form's own checks) shown
// under the field they name, and JSON text fields.
import { html } from "./vendor/htm-preact-standalone.module.js";
import { api, patch } from "./api.js";
import { navigate } from "./ui.js";

// The field errors of an API error (a 422's errors[]), or none.
export function fieldErrorsOf(error) {
  return (error && error.problem && error.problem.errors) || [];
}

// The errors of `errors` that name `field` or a field inside it (`schedule` takes `schedule.cron`).
export function errorsFor(errors, field) {
  return errors.filter((e) => e.field === field || e.field.startsWith(`${field}.`) || e.field.startsWith(`${field}[`));
}

// The messages under a field; `id` is what the field's aria-describedby names.
export function FieldError({ id, errors }) {
  if (!errors || !errors.length) return null;
  return html`<ul class="field-error" id=${id} role="alert">
    ${errors.map((e) => html`<li><code>${e.field}</code> ${e.message}</li>`)}
  </ul>`;
}

// An error thrown by a form before it sends anything, shown as the API's own would be.
export function formError(errors) {
  const err = new Error("Not sent");
  err.problem = { title: "Not sent: fix the fields marked", errors };
  return err;
}

// `text` as JSON, or a field error naming `field`.
export function parseJson(text, field) {
  try {
    return { value: JSON.parse(text), errors: [] };
  } catch (err) {
    return { value: undefined, errors: [{ field, message: `is not valid JSON (${err.message})` }] };
  }
}

export function tagsText(tags) {
  return Object.entries(tags || {})
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
}

// "team=data, env=prod" as {team: "data", env: "prod"}, or the field error.
export function parseTags(text) {
  const tags = {};
  for (const part of text.split(",").map((p) => p.trim()).filter(Boolean)) {
    const at = part.indexOf("=");
    if (at <= 0) return { value: undefined, errors: [{ field: "tags", message: `"${part}" is not key=value` }] };
    tags[part.slice(0, at).trim()] = part.slice(at + 1).trim();
  }
  return { value: tags, errors: [] };
}

// A text input or textarea with its label and the errors naming `field` under it.
export function Field({ label, field, errors, value, onInput, type = "text", textarea, ...rest }) {
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

// PATCHes `path` with the fields of `edited` that differ from `original` (an undefined one is unchanged), if any;
// a 422's field errors go to `setErrors` before the error is thrown on (the dialog shows its summary).
export async function patchChanges(path, original, edited, setErrors) {
  const body = {};
  for (const [field, value] of Object.entries(edited)) {
    if (value !== undefined && JSON.stringify(value) !== JSON.stringify(original[field])) body[field] = value;
  }
  try {
    if (Object.keys(body).length) await patch(path, body);
  } catch (err) {
    setErrors(fieldErrorsOf(err));
    throw err;
  }
}

// Sends a New form (or, `method` PUT, an Edit form that replaces its item whole): with errors of its own (`local`)
// it shows them and sends nothing; otherwise it sends `body` to `path` and opens the page `pageOf(answer)`, or shows
// the API's errors on the fields they name.
export async function createFrom({ method = "POST", path, body, local, pageOf, setErrors, setError, setBusy }) {
  setError(null);
  setErrors(local);
  if (local.length) {
    setError(formError(local));
    return;
  }
  setBusy(true);
  try {
    navigate(pageOf(await api(method, path, { body })));
  } catch (err) {
    setErrors(fieldErrorsOf(err));
    setError(err);
  } finally {
    setBusy(false);
  }
}
