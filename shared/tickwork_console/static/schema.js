// The job types and what each one's payload must be, as the API's OpenAPI document says (JobSpec's oneOf: one
// branch per type), and a small JSON Schema check of a payload against it, so a form names a bad field before
// anything is sent. The server checks again; its 422 is the last word.
import { get } from "./api.js";

let loaded = null;

// {type name: payload schema}, read once per page load.
export function jobTypes() {
  if (!loaded) {
    loaded = get("/v1/openapi.json").then((doc) => {
      const spec = ((doc.components || {}).schemas || {}).JobSpec || {};
      const types = {};
      for (const branch of spec.oneOf || []) {
        const props = branch.properties || {};
        if (props.type && props.type.const) types[props.type.const] = props.payload || { type: "object" };
      }
      return types;
    });
    loaded.catch(() => {
      loaded = null; // asked again next time
    });
  }
  return loaded;
}

const TYPE_CHECKS = {
  object: (v) => v !== null && typeof v === "object" && !Array.isArray(v),
  array: Array.isArray,
  string: (v) => typeof v === "string",
  integer: Number.isInteger,
  number: (v) => typeof v === "number" && Number.isFinite(v),
  boolean: (v) => typeof v === "boolean",
  null: (v) => v === null,
};

function typeMatches(schema, value) {
  const wanted = schema.type;
  if (!wanted) return true;
  return (Array.isArray(wanted) ? wanted : [wanted]).some((t) => (TYPE_CHECKS[t] || (() => true))(value));
}

// The errors of `value` against `schema`, each {field, message}, fields as the API names them (`payload.url`).
export function validate(schema, value, path = "payload") {
  const errors = [];
  if (!schema || typeof schema !== "object") return errors;
  const add = (message) => errors.push({ field: path, message });
  if (schema.anyOf) {
    if (!schema.anyOf.some((s) => validate(s, value, path).length === 0)) add("matches none of the allowed forms");
    return errors;
  }
  if (!typeMatches(schema, value)) {
    add(`must be ${Array.isArray(schema.type) ? schema.type.join(" or ") : schema.type === "object" ? "an object" : `a ${schema.type}`}`);
    return errors;
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) add(`must be one of ${schema.enum.join(", ")}`);
  if (schema.const !== undefined && value !== schema.const) add(`must be ${schema.const}`);
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) add(`must be at least ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) add(`must be at most ${schema.maximum}`);
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) add(`must be more than ${schema.exclusiveMinimum}`);
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) add(`must be less than ${schema.exclusiveMaximum}`);
  }
  if (typeof value === "string") {
    if (schema.minLength !== undefined && value.length < schema.minLength) add(`must have at least ${schema.minLength} characters`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength) add(`must have at most ${schema.maxLength} characters`);
    if (schema.pattern && !new RegExp(schema.pattern).test(value)) add(`must match ${schema.pattern}`);
  }
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems) add(`must have at most ${schema.maxItems} items`);
    if (schema.items) value.forEach((item, i) => errors.push(...validate(schema.items, item, `${path}[${i}]`)));
  }
  if (TYPE_CHECKS.object(value)) {
    const props = schema.properties || {};
    for (const name of schema.required || []) if (!(name in value)) errors.push({ field: `${path}.${name}`, message: "is required" });
    for (const [name, item] of Object.entries(value)) {
      if (props[name]) errors.push(...validate(props[name], item, `${path}.${name}`));
      else if (schema.additionalProperties === false) errors.push({ field: `${path}.${name}`, message: "is not a field of this type" });
    }
  }
  return errors;
}
