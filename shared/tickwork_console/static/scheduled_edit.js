// What the Edit dialogs of a job and a workflow share: name, priority, tags and the schedule (builder and
// preview), checked here, then PATCHed with only what changed.
import { html, useState } from "./vendor/htm-preact-standalone.module.js";
import { Field, formError, parseTags, patchChanges, tagsText } from "./forms.js";
import { ScheduleWithPreview, sameSchedule } from "./schedule.js";

// The shared fields' state, started from `item` (a job or a workflow).
export function useScheduledEdit(item) {
  const [name, setName] = useState(item.name);
  const [priority, setPriority] = useState(String(item.priority));
  const [tags, setTags] = useState(tagsText(item.tags));
  const [schedule, setSchedule] = useState(null);
  const [errors, setErrors] = useState([]);
  return { item, name, setName, priority, setPriority, tags, setTags, schedule, setSchedule, errors, setErrors };
}

// Checks the shared fields and `own` ({field: value}, with `ownErrors` from the dialog's own checks), then PATCHes
// `path` with what changed; a refusal's field errors land on their fields and the error is thrown on.
export async function saveScheduledEdit(edit, path, own, ownErrors) {
  const parsedTags = parseTags(edit.tags);
  const local = [...ownErrors, ...parsedTags.errors];
  edit.setErrors(local);
  if (local.length) throw formError(local);
  const edited = {
    name: edit.name,
    priority: Number(edit.priority),
    schedule: edit.schedule && !sameSchedule(edit.schedule, edit.item.schedule) ? edit.schedule : undefined,
    tags: parsedTags.value,
    ...own,
  };
  await patchChanges(path, edit.item, edited, edit.setErrors);
}

export function ScheduledEditFields({ edit, errors }) {
  return html`<div class="form-grid">
      <${Field} label="Name" field="name" errors=${errors} value=${edit.name} onInput=${edit.setName} />
      <${Field} label="Priority (0-9)" field="priority" errors=${errors} value=${edit.priority} onInput=${edit.setPriority} type="number" min="0" max="9" />
      <${Field} label="Tags (key=value, comma-separated)" field="tags" errors=${errors} value=${edit.tags} onInput=${edit.setTags} />
    </div>
    <${ScheduleWithPreview} initial=${edit.item.schedule} schedule=${edit.schedule} setSchedule=${edit.setSchedule} errors=${errors} />`;
}
