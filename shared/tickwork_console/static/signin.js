// Sign-in, where the console is hosted by the stack's token API (docs/security.md, "The hosted console") or by
// `tickwork dev --idp`: config.json beside the page names the OIDC issuer and the public client. The OpenID Connect
// authorization-code flow with PKCE (S256): the endpoints from the issuer's discovery document, `state` and `nonce`
// checked, no client secret. The tokens are kept in this page's memory only (never in localStorage, sessionStorage or
// a cookie): a reload signs in again, through the issuer's own session where it keeps one. What must outlive the
// redirect to the issuer and back (the state, the nonce, the code verifier: no token) waits in the tab's
// sessionStorage and is removed as the answer comes back. The API is called with `Authorization: Bearer`.
// Without config.json (`tickwork console`'s signing proxy, `tickwork dev` without --idp) there is no sign-in.
import { html, useEffect, useState } from "./vendor/htm-preact-standalone.module.js";
import { setTenantScope } from "./api.js";

const PENDING_KEY = "tickwork.signin"; // the sign-in under way: {state, nonce, verifier, back}

// mode: "loading", "open" (no sign-in), "signed-out" ({message}: why, if not by choice), "signed-in" ({user,
// token, idToken, expiresAt}).
let session = { mode: "loading" };
const listeners = new Set();
let config = null; // config.json's signin: {issuer, client_id, scopes}
let discovery = null; // the issuer's /.well-known/openid-configuration
let expiryTimer = null;

function update(next) {
  session = next;
  for (const listener of listeners) listener(session);
}

export function useSession() {
  const [current, setCurrent] = useState(session);
  useEffect(() => {
    listeners.add(setCurrent);
    setCurrent(session);
    return () => listeners.delete(setCurrent);
  }, []);
  return current;
}

// The token the API is called with, while signed in.
export const bearerToken = () => (session.mode === "signed-in" ? session.token : null);

const base64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const randomText = (size) => base64url(crypto.getRandomValues(new Uint8Array(size)));
const s256 = async (verifier) => base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
// The console's own URL, as registered with the issuer (…/console/, never …/console/index.html).
const redirectUri = () => `${window.location.origin}${window.location.pathname.replace(/index\.html$/, "")}`;

function claimsOf(token) {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(part), (c) => c.charCodeAt(0))));
  } catch {
    return null;
  }
}

async function loadConfig() {
  const response = await fetch("config.json", { headers: { Accept: "application/json" }, cache: "no-store" });
  if (response.status === 404) return null; // not hosted: no sign-in
  if (!response.ok) throw new Error(`the console's settings (config.json) did not load: HTTP ${response.status}`);
  const body = await response.json();
  return body && body.signin && body.signin.issuer && body.signin.client_id ? body.signin : null;
}

async function discover() {
  const url = `${config.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
  let response;
  try {
    response = await fetch(url, { headers: { Accept: "application/json" } });
  } catch (err) {
    throw new Error(`the issuer ${config.issuer} cannot be reached (${err.message || err})`);
  }
  if (!response.ok) throw new Error(`the issuer's discovery document (${url}) answered HTTP ${response.status}`);
  const document = await response.json();
  if (document.issuer !== config.issuer) throw new Error(`the discovery document names another issuer (${document.issuer})`);
  return document;
}

export async function signIn() {
  try {
    discovery = discovery || (await discover());
    const pending = { state: randomText(16), nonce: randomText(16), verifier: randomText(48), back: window.location.hash };
    window.sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
    const url = new URL(discovery.authorization_endpoint);
    const query = {
      response_type: "code",
      client_id: config.client_id,
      redirect_uri: redirectUri(),
      scope: config.scopes || "openid",
      state: pending.state,
      nonce: pending.nonce,
      code_challenge: await s256(pending.verifier),
      code_challenge_method: "S256",
    };
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    window.location.assign(url.toString());
  } catch (err) {
    update({ mode: "signed-out", message: `Sign-in failed: ${err.message || err}` });
  }
}

// The issuer's answer (?code=&state=, or ?error=): the code exchanged for the tokens, which are checked.
async function finishSignIn(params) {
  let pending = null;
  try {
    pending = JSON.parse(window.sessionStorage.getItem(PENDING_KEY) || "null");
  } catch {
    pending = null;
  }
  window.sessionStorage.removeItem(PENDING_KEY);
  // The code leaves the address bar (and the history) at once.
  window.history.replaceState(null, "", redirectUri() + ((pending && pending.back) || ""));
  if (params.get("error")) {
    throw new Error(`the issuer refused: ${params.get("error")}${params.get("error_description") ? ` (${params.get("error_description")})` : ""}`);
  }
  if (!pending || params.get("state") !== pending.state) {
    throw new Error("the issuer's answer is not for a sign-in started here (its state does not match)");
  }
  const form = new URLSearchParams({
    grant_type: "authorization_code",
    code: params.get("code") || "",
    redirect_uri: redirectUri(),
    client_id: config.client_id,
    code_verifier: pending.verifier,
  });
  let response;
  try {
    response = await fetch(discovery.token_endpoint, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
      body: form,
    });
  } catch (err) {
    throw new Error(`the issuer's token endpoint cannot be reached (${err.message || err})`);
  }
  const tokens = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(`the issuer refused the code: ${tokens.error || `HTTP ${response.status}`}${tokens.error_description ? ` (${tokens.error_description})` : ""}`);
  }
  const claims = tokens.id_token ? claimsOf(tokens.id_token) : null;
  if (!claims) throw new Error("the issuer sent no ID token");
  if (claims.nonce !== pending.nonce) throw new Error("the ID token is not for this sign-in (its nonce does not match)");
  if (claims.iss !== config.issuer) throw new Error("the ID token is another issuer's");
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audiences.includes(config.client_id)) throw new Error("the ID token is for another client");
  // The access token where it is a JWT (API Gateway verifies it), else the ID token (an issuer whose access tokens
  // are opaque: Google's).
  const token = tokens.access_token && claimsOf(tokens.access_token) ? tokens.access_token : tokens.id_token;
  const expiresAt = Math.min(claims.exp, claimsOf(token).exp || claims.exp) * 1000;
  if (expiresAt <= Date.now()) throw new Error("the tokens have expired already (is this machine's clock right?)");
  const user = claims.preferred_username || claims.email || claims.name || claims.sub;
  update({ mode: "signed-in", user, token, idToken: tokens.id_token, expiresAt });
  clearTimeout(expiryTimer);
  expiryTimer = setTimeout(() => expire("Your sign-in has expired: sign in again."), expiresAt - Date.now());
}

// The tokens dropped, for a reason shown on the sign-in page (they expired, or the API refused them).
export function expire(message) {
  if (session.mode !== "signed-in") return;
  clearTimeout(expiryTimer);
  update({ mode: "signed-out", message });
}

export function signOut() {
  const idToken = session.idToken;
  clearTimeout(expiryTimer);
  setTenantScope(""); // an admin's tenant choice is not the next user's
  update({ mode: "signed-out", message: null, signedOut: true });
  if (discovery && discovery.end_session_endpoint) {
    const url = new URL(discovery.end_session_endpoint);
    url.searchParams.set("client_id", config.client_id);
    url.searchParams.set("post_logout_redirect_uri", redirectUri());
    if (idToken) url.searchParams.set("id_token_hint", idToken);
    window.location.assign(url.toString());
  } else if (config && config.logout_endpoint) {
    // Cognito's sign-out, which its discovery does not name: its own parameters.
    const url = new URL(config.logout_endpoint);
    url.searchParams.set("client_id", config.client_id);
    url.searchParams.set("logout_uri", redirectUri());
    window.location.assign(url.toString());
  }
}

// Called once, before the console is drawn: no sign-in (no config.json), the issuer's answer, or the sign-in page.
export async function startSession() {
  try {
    config = await loadConfig();
    if (!config) {
      update({ mode: "open" });
      return;
    }
    discovery = await discover();
    const params = new URLSearchParams(window.location.search);
    if (params.has("code") || params.has("error")) {
      await finishSignIn(params);
      return;
    }
    update({ mode: "signed-out", message: null });
  } catch (err) {
    update({ mode: "signed-out", message: `Sign-in failed: ${err.message || err}` });
  }
}

export function SignInPage({ message, signedOut }) {
  const where = config ? new URL(config.issuer).host : "your identity provider";
  return html`<main id="main" tabindex="-1">
    <section class="signin">
      <h1 tabindex="-1">Sign in to Tickwork</h1>
      ${message ? html`<div class="error" role="alert"><p class="error-title">${message}</p></div>` : null}
      ${signedOut ? html`<p role="status">You have signed out.</p>` : null}
      <p>This console signs you in with ${where}. Your tokens stay in this page: reloading it signs you in again.</p>
      <button type="button" class="primary" onClick=${signIn}>Sign in</button>
    </section>
  </main>`;
}

export function SessionStatus() {
  const current = useSession();
  if (current.mode !== "signed-in") return null;
  return html`<div class="session">
    <span>Signed in as <strong>${current.user}</strong></span>
    <button type="button" onClick=${signOut}>Sign out</button>
  </div>`;
}
