// Calendars (docs/operations.md#calendars): the list, one calendar, creating one and deleting one. A calendar's
// windows are edited as the API takes them (JSON), each error shown on the field it names.
import { html, useState } from "./vendor/htm-preact-standalone.module.js";
import { del, enc, get } from "./api.js";
import { Attribution } from "./audit.js";
import { Field, FieldError, createFrom, errorsFor, parseJson } from "./forms.js";
import { Cell, ConfirmDialog, ErrorBox, Loading, Time, ZoneLabel, navigate, useLoad } from "./ui.js";

const MODES = [
  ["exclude", "exclude (a blackout)"],
  ["include", "include (only inside)"],
];
const WINDOWS_EXAMPLE = JSON.stringify([{ dates: ["2026-12-25", "2026-12-26"] }], null, 2);

function windowText(window) {
  if (window.dates) return `dates ${window.dates.join(", ")}`;
  if (window.cron) return `from cron ${window.cron} for ${window.duration_minutes} min`;
  if (window.from) return `from ${window.from} to ${window.to}`;
  return JSON.stringify(window);
}

export function CalendarsPage() {
  const calendars = useLoad(() => get("/v1/calendars"), [], 30000);
  const items = calendars.data ? calendars.data.items : [];
  return html`<section>
    <h1 tabindex="-1">Calendars</h1>
    <p class="muted">A job's calendars say when it may run: an exclude calendar blocks its windows, an include calendar allows only its windows. A blocked occurrence is skipped, or runs when allowed (the job's on_blocked).</p>
    <div class="toolbar"><a class="button primary" href="#/calendars/new">New calendar</a></div>
    <${ErrorBox} error=${calendars.error} />
    ${calendars.data
      ? html`<table class="list">
          <caption class="visually-hidden">Calendars</caption>
          <thead><tr><th>Name</th><th>Mode</th><th>Time zone</th><th>Windows</th><th>Updated <${ZoneLabel} /></th></tr></thead>
          <tbody>
            ${items.length === 0
              ? html`<tr><td colspan="5" class="muted">No calendars yet.</td></tr>`
              : items.map(
                  (c) => html`<tr>
                    <${Cell} label="Name"><a href=${`#/calendars/${enc(c.id)}`}>${c.name}</a><//>
                    <${Cell} label="Mode">${c.mode}<//>
                    <${Cell} label="Time zone">${c.timezone}<//>
                    <${Cell} label="Windows">${c.windows.length}<//>
                    <${Cell} label="Updated"><${Time} value=${c.updated_at} /><//>
                  </tr>`,
                )}
          </tbody>
        </table>`
      : calendars.error
        ? null
        : html`<${Loading} what="calendars" />`}
  </section>`;
}

export function CalendarPage({ id }) {
  const calendar = useLoad(() => get(`/v1/calendars/${enc(id)}`), [id]);
  const [confirming, setConfirming] = useState(false);
  if (calendar.error && !calendar.data) return html`<section><h1 tabindex="-1">Calendar</h1><${ErrorBox} error=${calendar.error} /></section>`;
  if (!calendar.data) return html`<${Loading} what="the calendar" />`;
  const c = calendar.data;
  return html`<section>
    <p class="crumbs"><a href="#/calendars">Calendars</a> /</p>
    <h1 tabindex="-1">${c.name}</h1>
    <div class="toolbar"><button type="button" class="danger" onClick=${() => setConfirming(true)}>Delete</button></div>
    <dl class="facts">
      <dt>Id</dt><dd class="mono">${c.id}</dd>
      <dt>Mode</dt><dd>${c.mode}</dd>
      <dt>Time zone</dt><dd>${c.timezone}</dd>
      <dt>Windows</dt><dd><ul class="plain" aria-label="Windows">${c.windows.map((w) => html`<li class="mono">${windowText(w)}</li>`)}</ul></dd>
      <dt>Version</dt><dd>${c.version}</dd>
      <${Attribution} item=${c} />
    </dl>
    <${ConfirmDialog}
      open=${confirming}
      title="Delete this calendar?"
      confirmLabel="Delete"
      danger=${true}
      onConfirm=${async () => { await del(`/v1/calendars/${enc(id)}`); navigate("#/calendars"); }}
      onClose=${() => setConfirming(false)}
    >
      <p>${c.name} is deleted. A job that still names it then runs as if it did not: the calendar blocks nothing.</p>
    <//>
  </section>`;
}

export function NewCalendarPage() {
  const [name, setName] = useState("");
  const [timezone, setTimezone] = useState("UTC");
  const [mode, setMode] = useState("exclude");
  const [windows, setWindows] = useState(WINDOWS_EXAMPLE);
  const [errors, setErrors] = useState([]);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = (event) => {
    event.preventDefault();
    const parsed = parseJson(windows, "windows");
    createFrom({
      path: "/v1/calendars",
      body: { name: name.trim(), timezone: timezone.trim() || "UTC", mode, windows: parsed.value },
      local: parsed.errors,
      pageOf: (created) => `#/calendars/${enc(created.id)}`,
      setErrors,
      setError,
      setBusy,
    });
  };
  return html`<section>
    <p class="crumbs"><a href="#/calendars">Calendars</a> /</p>
    <h1 tabindex="-1">New calendar</h1>
    <form class="job-form" onSubmit=${submit} aria-label="New calendar" novalidate>
      <${Field} label="Name" field="name" errors=${errors} value=${name} onInput=${setName} />
      <${Field} label="Time zone" field="timezone" errors=${errors} value=${timezone} onInput=${setTimezone} />
      <div class="field">
        <label for="calendar-mode">Mode</label>
        <select id="calendar-mode" value=${mode} onChange=${(e) => setMode(e.currentTarget.value)}>
          ${MODES.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
        </select>
        <${FieldError} errors=${errorsFor(errors, "mode")} />
      </div>
      <${Field} label="Windows (JSON)" field="windows" errors=${errors} value=${windows} onInput=${setWindows} textarea=${true} rows="6" class="mono" spellcheck="false" />
      <p class="muted hint wrap-anywhere">Each window: <span class="mono">{"dates": ["2026-12-25"]}</span> (whole days in the calendar's zone), <span class="mono">{"cron": "0 22 * * FRI", "duration_minutes": 600}</span>, or <span class="mono">{"from": "...", "to": "..."}</span>.</p>
      <${ErrorBox} error=${error} />
      <div class="actions"><button type="submit" class="primary" disabled=${busy}>Create calendar</button></div>
    </form>
  </section>`;
}
