/**
 * Settings as a zod schema over the environment: each whole-number setting is declared once, with
 * its name, default and range, and the schema gives the type, the defaults, the checks and the
 * error that names the setting.
 */
import { z } from 'zod';

import { ConfigError } from '../errors';
import type { Env } from './connections';

/** A whole-number setting as declared: its name in the environment, its default and range. */
export interface NamedLimit<K extends string = string> {
  key: K;
  setting: string;
  def: number;
  min: number;
  max: number;
}

const declared = z.registry<Omit<NamedLimit, 'key'>>();

/** A whole-number setting's default and inclusive range. */
export type Limit = Pick<NamedLimit, 'def' | 'min' | 'max'>;

/**
 * A whole number read from `setting`: unset or blank is `def`; anything but digits, or a value
 * outside min–max, is an error that says what it got.
 */
export function wholeNumber(setting: string, { def, min, max }: Limit) {
  const range = {
    error: (issue: { input: unknown }) => `must be between ${min} and ${max}, got ${String(issue.input)}`,
  };
  const schema = z.preprocess(
    (raw) => (typeof raw === 'string' && raw.trim() === '' ? undefined : raw),
    z
      .string()
      .regex(/^\s*\d+\s*$/, { error: (issue) => `must be a whole number, got "${String(issue.input)}"` })
      .transform((raw) => Number(raw.trim()))
      .pipe(z.number().min(min, range).max(max, range))
      .default(def),
  );
  return schema.register(declared, { setting, def, min, max });
}

type Shape = Record<string, z.ZodType>;

function declaration(shape: Shape, key: string): Omit<NamedLimit, 'key'> {
  const found = shape[key] && declared.get(shape[key]);
  if (!found) throw new Error(`${key} is not declared with wholeNumber()`);
  return found;
}

/** The declarations of a schema's settings, in its order (the docs and infra/ are checked against them). */
export function namedLimits<T extends Shape>(schema: z.ZodObject<T>): NamedLimit<Extract<keyof T, string>>[] {
  return Object.keys(schema.shape).map((key) => ({
    key: key as Extract<keyof T, string>,
    ...declaration(schema.shape, key),
  }));
}

/**
 * Reads the schema's settings from `env` (only those: nothing else is looked up) and validates
 * them; the first problem throws a ConfigError that names its setting.
 */
export function parseEnv<T extends Shape>(schema: z.ZodObject<T>, env: Env): z.output<z.ZodObject<T>> {
  const raw = Object.fromEntries(
    Object.keys(schema.shape).map((key) => [key, env[declaration(schema.shape, key).setting]]),
  );
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  // Fields come before cross-field rules, in declaration order: the first issue is the one to report.
  const issue = parsed.error.issues[0];
  const key = issue?.path[0];
  if (typeof key !== 'string') throw new Error(`settings schema: ${parsed.error.message}`);
  throw new ConfigError(declaration(schema.shape, key).setting, issue?.message ?? 'is invalid');
}
