import type { JsonSchemaType, JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

/** Compiled input schemas by their JSON: tools are rebuilt at each request, their schemas rarely change. */
const MAX_COMPILED = 256;
let validators = new AjvJsonSchemaValidator();
const compiled = new Map<string, JsonSchemaValidator<unknown> | null>();

function validatorOf(schema: Record<string, unknown>): JsonSchemaValidator<unknown> | null {
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
