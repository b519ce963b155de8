// The schedule builder (a one-shot at an instant, a cron in a time zone, or a rate) and its live preview: the next
// instants as the API computes them (POST /v1/schedules/preview), with their DST flags.
import { html, useEffect, useRef, useState } from "./vendor/htm-preact-standalone.module.js";
import { post } from "./api.js";
import { FieldError, errorsFor } from "./forms.js";
import { Time, ZoneLabel, instant, useTimeZone, wallValue } from "./ui.js";

const RATE_UNITS = ["seconds", "minutes", "hours", "days"];
const ZONES = ["UTC", ...(Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone").filter((z) => z !== "UTC") : [])];
let builders = 0;

// A stored or submitted schedule as the builder's fields: a one-shot's instant as a wall time in `zone`.
function draftOf(schedule, zone = "UTC") {
  const s = schedule || {};
  const rate = /^\s*(\d+)\s+(second|minute|hour|day)s?\s*$/i.exec(s.rate || "");
  return {
    kind: s.at ? "at" : s.rate ? "rate" : "cron",
    at: s.at ? wallValue(String(s.at), zone) : "",
    cron: s.cron || "",
    rateCount: rate ? rate[1] : "5",
    rateUnit: rate ? `${rate[2].toLowerCase()}s` : "minutes",
    timezone: s.timezone || "UTC",
    start_at: s.start_at || null,
    end_at: s.end_at || null,
  };
}

// The builder's fields as the schedule the API takes: only the fields the kind uses, no nulls.
export function scheduleOf(draft, zone = "UTC") {
  const schedule = {};
  if (draft.kind === "at") {
    // A datetime-local value is a wall time without a zone: the one times are shown in (the switch's), sent as UTC.
    schedule.at = draft.at ? instant(draft.at, zone) : "";
  } else if (draft.kind === "cron") {
    schedule.cron = draft.cron.trim();
    schedule.timezone = draft.timezone.trim() || "UTC";
  } else {
    schedule.rate = `${draft.rateCount} ${draft.rateUnit}`;
  }
  if (draft.start_at) schedule.start_at = draft.start_at;
  if (draft.end_at) schedule.end_at = draft.end_at;
  return schedule;
}

// The same schedule, whichever way it is written (a stored one carries nulls and defaults).
export function sameSchedule(a, b) {
  return JSON.stringify(scheduleOf(draftOf(a))) === JSON.stringify(scheduleOf(draftOf(b)));
}

export function ScheduleBuilder({ initial, onChange, errors }) {
  const { zone } = useTimeZone();
  const [draft, setDraft] = useState(() => draftOf(initial, zone));
  const id = useRef(`schedule-${++builders}`).current;
  const set = (changes) => {
    const next = { ...draft, ...changes };
    setDraft(next);
    onChange(scheduleOf(next, zone));
  };
  useEffect(() => onChange(scheduleOf(draft, zone)), [zone]);
  const mine = errorsFor(errors || [], "schedule");
  const described = mine.length ? `${id}-errors` : undefined;
  const kinds = [
    ["at", "Once"],
    ["cron", "Cron"],
    ["rate", "Rate"],
  ];
  return html`<fieldset class="schedule-builder" aria-describedby=${described}>
    <legend>Schedule</legend>
    <div class="kinds" role="radiogroup" aria-label="Schedule kind">
      ${kinds.map(
        ([kind, label]) => html`<label class="kind"><input type="radio" name=${`${id}-kind`} value=${kind} checked=${draft.kind === kind} onChange=${() => set({ kind })} /> ${label}</label>`,
      )}
    </div>
    ${draft.kind === "at"
      ? html`<label>At <${ZoneLabel} /> <input type="datetime-local" step="1" value=${draft.at} aria-invalid=${errorsFor(mine, "schedule.at").length > 0} onInput=${(e) => set({ at: e.currentTarget.value })} /></label>`
      : null}
    ${draft.kind === "cron"
      ? html`<label>Cron expression <input class="mono" value=${draft.cron} placeholder="0 9 * * MON-FRI" aria-invalid=${errorsFor(mine, "schedule.cron").length > 0} onInput=${(e) => set({ cron: e.currentTarget.value })} /></label>
          <label>Time zone <input list=${`${id}-zones`} value=${draft.timezone} aria-invalid=${errorsFor(mine, "schedule.timezone").length > 0} onInput=${(e) => set({ timezone: e.currentTarget.value })} /></label>
          <datalist id=${`${id}-zones`}>${ZONES.map((z) => html`<option value=${z} />`)}</datalist>`
      : null}
    ${draft.kind === "rate"
      ? html`<div class="rate">
          <label>Every <input type="number" min="1" value=${draft.rateCount} aria-invalid=${errorsFor(mine, "schedule.rate").length > 0} onInput=${(e) => set({ rateCount: e.currentTarget.value })} /></label>
          <label>Unit <select value=${draft.rateUnit} onChange=${(e) => set({ rateUnit: e.currentTarget.value })}>
            ${RATE_UNITS.map((u) => html`<option value=${u}>${u}</option>`)}
          </select></label>
        </div>`
      : null}
    <${FieldError} id=${`${id}-errors`} errors=${mine} />
  </fieldset>`;
}

// The next `count` instants of `schedule`, asked again (after a short pause) whenever it changes. A schedule the
// API refuses shows no instants; its errors go to `onErrors` (the builder shows them on their field).
export function SchedulePreview({ schedule, count = 5, onErrors }) {
  const [state, setState] = useState({ items: null, error: null });
  const key = JSON.stringify(schedule);
  useEffect(() => {
    let stale = false;
    const timer = setTimeout(async () => {
      try {
        const answer = await post("/v1/schedules/preview", { schedule, count });
        if (stale) return;
        setState({ items: answer.items, error: null });
        if (onErrors) onErrors([]);
      } catch (error) {
        if (stale) return;
        setState({ items: null, error });
        if (onErrors) onErrors((error.problem && error.problem.errors) || []);
      }
    }, 250);
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  }, [key]);
  return html`<div class="schedule-preview">
    <h3>Next ${count} instants</h3>
    ${state.items
      ? state.items.length
        ? html`<${Instants} items=${state.items} label=${`Next ${count} instants`} />`
        : html`<p class="muted">No occurrences.</p>`
      : state.error
        ? html`<p class="muted">No preview until the schedule is valid.</p>`
        : html`<p class="muted" aria-live="polite">Previewing…</p>`}
  </div>`;
}

// Instants (in the zone the console shows) with their wall time in the schedule's zone, their DST flag, and what
// becomes of one a calendar or freeze blocks.
export function Instants({ items, label }) {
  const { zone } = useTimeZone();
  return html`<ol class="instants" aria-label=${label}>
    ${items.map(
      (item) => html`<li><${Time} value=${item.at} />${zone === "UTC" ? " UTC" : ""} <span class="muted">· ${item.local}</span>${item.dst ? html` <span class="tag dst">DST ${item.dst}</span>` : null}${item.blocked ? html` <${Blocked} block=${item.blocked} />` : null}</li>`,
    )}
  </ol>`;
}

function Blocked({ block }) {
  const then = block.then === "defer" ? html`runs at <${Time} value=${block.runs_at} />` : "skipped";
  return html`<span class="tag blocked" title=${`blocked by ${block.reason} ${block.by}`}>blocked by ${block.reason}: ${then}</span>`;
}

// The schedule builder beside its preview; the preview's 422 shows on the builder's fields.
export function ScheduleWithPreview({ initial, schedule, setSchedule, errors }) {
  const [previewErrors, setPreviewErrors] = useState([]);
  const shown = errorsFor(errors, "schedule").length ? errors : previewErrors;
  return html`<div class="schedule-with-preview">
    <${ScheduleBuilder} initial=${initial} onChange=${setSchedule} errors=${shown} />
    ${schedule ? html`<${SchedulePreview} schedule=${schedule} onErrors=${setPreviewErrors} />` : null}
  </div>`;
}
