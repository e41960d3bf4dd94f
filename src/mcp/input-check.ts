import type { JsonSchemaType, JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../json-depth.js';

/** Compiled input schemas by their JSON: tools are rebuilt at each request, their schemas rarely change. */
const MAX_COMPILED = 256;
let validators = new AjvJsonSchemaValidator();
const compiled = new Map<string, JsonSchemaValidator<unknown> | null>();

/** Keywords whose values map names to schemas: their keys are names, never keywords. */
const NAMED_SCHEMAS = new Set(['properties', '$defs', 'definitions', 'dependentSchemas']);
/**
 * Keywords left out of the check: a pattern is a regular expression of the bundle's author, which Node runs with
 * backtracking, so a pattern such as `^(a+)+$` and a crafted argument would hold the service's event loop (every
 * organization's requests) for minutes. The run's own validation (Pydantic's, in the runner's sandbox) still applies it.
 */
const UNCHECKED = new Set(['pattern', 'patternProperties']);
/** Keywords whose values are data, kept as they are. */
const DATA = new Set(['enum', 'const', 'default', 'examples']);

/** The schema without its UNCHECKED keywords; null when it nests deeper than crewd takes JSON. */
function checkable(schema: Record<string, unknown>): Record<string, unknown> | null {
  if (nestedDeeperThan(schema, MAX_JSON_DEPTH)) return null;
  const strip = (value: unknown, names = false): unknown => {
    if (Array.isArray(value)) return value.map((item) => strip(item));
    if (typeof value !== 'object' || value === null) return value;
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([key]) => names || !UNCHECKED.has(key))
      .map(([key, inner]) => {
        if (names) return [key, strip(inner)];
        return [key, DATA.has(key) ? inner : strip(inner, NAMED_SCHEMAS.has(key))];
      });
    return Object.fromEntries(entries);
  };
  return strip(schema) as Record<string, unknown>;
}

function validatorOf(original: Record<string, unknown>): JsonSchemaValidator<unknown> | null {
  const schema = checkable(original);
  if (!schema) return null;
  const key = JSON.stringify(schema);
  const known = compiled.get(key);
  if (known !== undefined) return known;
  if (compiled.size >= MAX_COMPILED) {
    // Ajv keeps what it compiled as long as it lives: a new one lets the old schemas go.
    compiled.clear();
    validators = new AjvJsonSchemaValidator();
  }
  let validator: JsonSchemaValidator<unknown> | null;
  try {
    validator = validators.getValidator(schema as JsonSchemaType);
  } catch {
    // A schema Ajv cannot compile (a build's own) checks nothing rather than refusing every call.
    validator = null;
  }
  compiled.set(key, validator);
  return validator;
}

/**
 * Why the arguments do not fit the tool's input schema, or null. A call that does not fit is answered as a tool
 * error (SEP-1303, revision 2025-11-25), so that the model reads why and calls again.
 */
export function argumentsProblem(toolName: string, schema: Record<string, unknown>, args: unknown): string | null {
  const validator = validatorOf(schema);
  if (!validator) return null;
  const checked = validator(args);
  return checked.valid
    ? null
    : `Input validation error: invalid arguments for tool ${toolName}: ${checked.errorMessage}`;
}
