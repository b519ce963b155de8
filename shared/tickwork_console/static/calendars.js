// Calendars (docs/operations.md#calendars): the list, one calendar with what it blocks this week, creating one,
// editing one (PUT: the calendar whole) and deleting one. A calendar's windows are edited as the API takes them
// (JSON), each error shown on the field it names.
import { html, useState } from "./vendor/htm-preact-standalone.module.js";
import { del, enc, get } from "./api.js";
import { Attribution } from "./audit.js";
import { Field, FieldError, createFrom, errorsFor, parseJson } from "./forms.js";
import { Cell, ConfirmDialog, ErrorBox, Loading, Time, ZoneLabel, instantOfWall, navigate, useLoad, useTimeZone, wallParts } from "./ui.js";

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
    <div class="toolbar">
      <a class="button" href=${`#/calendars/${enc(id)}/edit`}>Edit</a>
      <button type="button" class="danger" onClick=${() => setConfirming(true)}>Delete</button>
    </div>
    <dl class="facts">
      <dt>Id</dt><dd class="mono">${c.id}</dd>
      <dt>Mode</dt><dd>${c.mode}</dd>
      <dt>Time zone</dt><dd>${c.timezone}</dd>
      <dt>Windows</dt><dd><ul class="plain" aria-label="Windows">${c.windows.map((w) => html`<li class="mono">${windowText(w)}</li>`)}</ul></dd>
      <dt>Version</dt><dd>${c.version}</dd>
      <${Attribution} item=${c} />
    </dl>
    <${BlockedWeek} id=${id} version=${c.version} />
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

const DAY_MS = 24 * 60 * 60 * 1000;
const DAYS_SHOWN = 7;
const hhmm = (ms, zone) => {
  const w = wallParts(ms, zone);
  return `${String(w.hour).padStart(2, "0")}:${String(w.minute).padStart(2, "0")}`;
};

// The next 7 days in the zone times are shown in, a row a day from its midnight, each blocked span drawn where it
// falls: one request (GET /v1/calendars/{id}/blocked from today's midnight, 7 days; bounded by the API).
export function BlockedWeek({ id, version }) {
  const { zone } = useTimeZone();
  const today = wallParts(Date.now(), zone);
  const starts = Array.from({ length: DAYS_SHOWN + 1 }, (_, i) => instantOfWall(today.year, today.month, today.day + i, 0, 0, 0, zone));
  const from = new Date(starts[0]).toISOString();
  const blocked = useLoad(() => get(`/v1/calendars/${enc(id)}/blocked`, { from, days: DAYS_SHOWN }), [id, version, from]);
  const spans = blocked.data ? blocked.data.spans.map((span) => [Date.parse(span.from), Date.parse(span.until)]) : [];
  const label = (start) => new Intl.DateTimeFormat("en-GB", { timeZone: zone, weekday: "short", day: "numeric", month: "short" }).format(new Date(start));
  return html`<section aria-labelledby="blocked-title">
    <h2 id="blocked-title">Blocked this week <${ZoneLabel} /></h2>
    <${ErrorBox} error=${blocked.error} />
    ${blocked.data
      ? html`<ol class="week-strip" aria-label="Blocked this week">
          ${starts.slice(0, DAYS_SHOWN).map((start, i) => {
            const end = starts[i + 1];
            const length = end - start || DAY_MS;
            const mine = spans.filter(([a, b]) => a < end && b > start).map(([a, b]) => [Math.max(a, start), Math.min(b, end)]);
            const said = mine.map(([a, b]) => `${hhmm(a, zone)}–${b === end ? "24:00" : hhmm(b, zone)}`).join(", ");
            return html`<li aria-label=${`${label(start)}: ${said ? `blocked ${said}` : "nothing blocked"}`}>
              <span class="week-day">${label(start)}</span>
              <span class="week-bar">
                ${mine.map(([a, b]) => html`<span class="week-blocked" title=${`blocked ${hhmm(a, zone)}–${b === end ? "24:00" : hhmm(b, zone)}`} style=${`left:${((a - start) / length) * 100}%;width:${((b - a) / length) * 100}%`}></span>`)}
              </span>
            </li>`;
          })}
        </ol>
        ${blocked.data.complete ? null : html`<p class="muted">More windows than the preview holds: the strip shows the first ${spans.length}.</p>`}`
      : blocked.error
        ? null
        : html`<${Loading} what="the blocked windows" />`}
  </section>`;
}

// The fields of a calendar, for New (POST) and Edit (PUT, the calendar whole): `initial` fills them.
function CalendarForm({ title, initial, method, path, submitLabel }) {
  const [name, setName] = useState(initial.name);
  const [timezone, setTimezone] = useState(initial.timezone);
  const [mode, setMode] = useState(initial.mode);
  const [windows, setWindows] = useState(initial.windows);
  const [errors, setErrors] = useState([]);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = (event) => {
    event.preventDefault();
    const parsed = parseJson(windows, "windows");
    createFrom({
      method,
      path,
      body: { name: name.trim(), timezone: timezone.trim() || "UTC", mode, windows: parsed.value },
      local: parsed.errors,
      pageOf: (saved) => `#/calendars/${enc(saved.id)}`,
      setErrors,
      setError,
      setBusy,
    });
  };
  return html`<form class="job-form" onSubmit=${submit} aria-label=${title} novalidate>
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
    <div class="actions"><button type="submit" class="primary" disabled=${busy}>${submitLabel}</button></div>
  </form>`;
}

export function NewCalendarPage() {
  return html`<section>
    <p class="crumbs"><a href="#/calendars">Calendars</a> /</p>
    <h1 tabindex="-1">New calendar</h1>
    <${CalendarForm}
      title="New calendar"
      initial=${{ name: "", timezone: "UTC", mode: "exclude", windows: WINDOWS_EXAMPLE }}
      method="POST"
      path="/v1/calendars"
      submitLabel="Create calendar"
    />
  </section>`;
}

// Edit: the calendar replaced whole (PUT); the occurrences not yet claimed follow it.
export function EditCalendarPage({ id }) {
  const calendar = useLoad(() => get(`/v1/calendars/${enc(id)}`), [id]);
  if (calendar.error && !calendar.data) return html`<section><h1 tabindex="-1">Edit calendar</h1><${ErrorBox} error=${calendar.error} /></section>`;
  if (!calendar.data) return html`<${Loading} what="the calendar" />`;
  const c = calendar.data;
  return html`<section>
    <p class="crumbs"><a href="#/calendars">Calendars</a> / <a href=${`#/calendars/${enc(id)}`}>${c.name}</a> /</p>
    <h1 tabindex="-1">Edit calendar</h1>
    <p class="muted">Saved, it applies to the occurrences not yet claimed; a run already claimed (up to 2 minutes ahead) keeps what its claim decided.</p>
    <${CalendarForm}
      title="Edit calendar"
      initial=${{ name: c.name, timezone: c.timezone, mode: c.mode, windows: JSON.stringify(c.windows, null, 2) }}
      method="PUT"
      path=${`/v1/calendars/${enc(id)}`}
      submitLabel="Save calendar"
    />
  </section>`;
}
