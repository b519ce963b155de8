// Pieces the create and edit forms share: field errors (the API's 422 `errors[]`, or the form's own checks) shown
// under the field they name, and JSON text fields.
import { html } from "./vendor/htm-preact-standalone.module.js";

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
