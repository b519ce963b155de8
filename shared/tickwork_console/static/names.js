// Names for ids: a run's job (or, for a workflow step's run, its workflow), read once per page load and
// remembered, so the DLQ and the breadcrumbs show names rather than ids.
import { html, useEffect, useState } from "./vendor/htm-preact-standalone.module.js";
import { enc, get } from "./api.js";

const known = new Map(); // id -> Promise of its name (the id itself if it cannot be read)

// A job id starts with j, a workflow id with w (tickwork.model.ids).
export function nameOf(id) {
  if (!known.has(id)) {
    const path = id.startsWith("w") ? `/v1/workflows/${enc(id)}` : `/v1/jobs/${enc(id)}`;
    known.set(id, get(path).then((item) => item.name, () => id));
  }
  return known.get(id);
}

// The name of `id` once read; the id until then.
export function useName(id) {
  const [name, setName] = useState(null);
  useEffect(() => {
    let stale = false;
    setName(null);
    if (id) nameOf(id).then((n) => !stale && setName(n));
    return () => {
      stale = true;
    };
  }, [id]);
  return name || id;
}

// A link to a job's (or a workflow's) page, named by its name, its id in the title.
export function JobLink({ id }) {
  const name = useName(id);
  const href = id.startsWith("w") ? `#/workflows/${enc(id)}` : `#/jobs/${enc(id)}`;
  return html`<a href=${href} title=${id}>${name}</a>`;
}
