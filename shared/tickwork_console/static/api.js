// The API, called on this page's own origin: `tickwork dev` serves /v1 beside /console, and `tickwork console`
// forwards /v1 to the deployed API, signing each call there (the browser never holds credentials). The hosted
// console (and `tickwork dev --idp`) sends the signed-in user's token instead (signin.js).
import { bearerToken, expire } from "./signin.js";

export class ApiError extends Error {
  // A non-2xx answer. `problem` is the RFC 9457 body (title, detail, errors[]) when the API sent one.
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

function queryString(query) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

export async function api(method, path, { query, body } = {}) {
  const init = { method, headers: { Accept: "application/json" } };
  const token = bearerToken();
  if (token) init.headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(`${path}${queryString(query)}`, init);
  } catch (err) {
    throw new ApiError(0, { title: "The API cannot be reached", detail: String(err.message || err) });
  }
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (response.status === 401 && token) {
    // The token API's authorizer refused the token (expired, or revoked): back to the sign-in page, saying so.
    expire("Your sign-in has expired or was refused by the API: sign in again.");
  }
  if (!response.ok) {
    let problem = parsed && typeof parsed === "object" ? parsed : {};
    // API Gateway's own errors are {"message": ...}, not problem details.
    if (!problem.title && problem.message) problem = { title: problem.message };
    if (!problem.title) problem = { ...problem, title: `HTTP ${response.status} ${response.statusText}`.trim() };
    throw new ApiError(response.status, problem);
  }
  return parsed;
}

// An admin's tenant switcher's choice (tenancy.js): whose items every read shows, sent as `tenant` on each GET that
// names none of its own. "" (the caller's own), a tenant's name, or "*" (every tenant's). Kept for the tab's session.
const SCOPE_KEY = "tickwork.tenant";
let readScope = "";
try {
  readScope = window.sessionStorage.getItem(SCOPE_KEY) || "";
} catch {
  readScope = "";
}

export const tenantScope = () => readScope;

export function setTenantScope(tenant) {
  readScope = tenant || "";
  try {
    if (readScope) window.sessionStorage.setItem(SCOPE_KEY, readScope);
    else window.sessionStorage.removeItem(SCOPE_KEY);
  } catch {
    // No session storage (a private window's policy): the choice lasts until the page is reloaded.
  }
}

export const get = (path, query) =>
  api("GET", path, { query: readScope && !(query && query.tenant) ? { tenant: readScope, ...query } : query });
export const post = (path, body) => api("POST", path, { body });
export const patch = (path, body) => api("PATCH", path, { body });
export const del = (path) => api("DELETE", path);
export const enc = encodeURIComponent;

// A bulk action's every page: `body` POSTed again with each answer's next_cursor as `cursor`, until there is none;
// the answers' items, in order.
export async function postEveryPage(path, body) {
  const items = [];
  let cursor;
  do {
    const answer = await post(path, cursor ? { ...body, cursor } : body);
    items.push(...answer.items);
    cursor = answer.next_cursor;
  } while (cursor);
  return items;
}
