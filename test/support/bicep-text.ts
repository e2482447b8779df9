/**
 * Reads Bicep files as text, for offline checks where no Bicep compiler is available.
 * Not a Bicep parser: a lexer that blanks comments and string contents (keeping the code inside
 * `${…}` interpolations), plus small scanners for declarations, blocks and object keys built on it.
 * Everything works on a masked copy of the same length, so an index in it is an index in the source.
 */
import { dirname, relative, resolve } from 'node:path';

import { repoFiles, repoRoot } from './repo';

/** Every .bicep file under infra/, as repo-relative paths with forward slashes. */
export const bicepFiles = (): string[] => repoFiles().filter((f) => f.startsWith('infra/') && f.endsWith('.bicep'));

/**
 * Same text with comments and string contents replaced by spaces (newlines kept). Quote marks stay,
 * `${` and its closing `}` become spaces, and the expression inside an interpolation stays as code.
 */
export function mask(src: string): string {
  const out = src.split('');
  const n = src.length;
  const blank = (i: number): void => {
    if (out[i] !== '\n') out[i] = ' ';
  };

  // Returns the index of the `}` that closes an interpolation (when inInterpolation), else n.
  const lexCode = (start: number, inInterpolation: boolean): number => {
    let i = start;
    let depth = 0;
    while (i < n) {
      if (src.startsWith('//', i)) {
        while (i < n && src[i] !== '\n') blank(i++);
        continue;
      }
      if (src.startsWith('/*', i)) {
        const end = src.indexOf('*/', i + 2);
        const stop = end < 0 ? n : end + 2;
        while (i < stop) blank(i++);
        continue;
      }
      if (src.startsWith("'''", i)) {
        const end = src.indexOf("'''", i + 3);
        const stop = end < 0 ? n : end;
        for (i += 3; i < stop; i++) blank(i);
        i = Math.min(n, stop + 3);
        continue;
      }
      if (src[i] === "'") {
        i = lexString(i);
        continue;
      }
      if (inInterpolation) {
        if (src[i] === '{') depth++;
        if (src[i] === '}') {
          if (depth === 0) return i;
          depth--;
        }
      }
      i++;
    }
    return n;
  };

  // Starts on the opening quote; returns the index after the closing quote.
  const lexString = (start: number): number => {
    let i = start + 1;
    while (i < n) {
      const c = src[i];
      if (c === '\\') {
        blank(i);
        if (i + 1 < n) blank(i + 1);
        i += 2;
        continue;
      }
      if (c === "'") return i + 1;
      if (c === '$' && src[i + 1] === '{') {
        blank(i);
        blank(i + 1);
        const close = lexCode(i + 2, true);
        if (close < n) blank(close);
        i = close + 1;
        continue;
      }
      blank(i);
      i++;
    }
    return n;
  };

  lexCode(0, false);
  return out.join('');
}

/** 1-based line of an index. */
export function lineOf(src: string, index: number): number {
  return src.slice(0, index).split('\n').length;
}

/** Index of the bracket that closes the one at `open` (any of {[( in masked code). */
export function matchingBracket(code: string, open: number): number {
  const pairs: Record<string, string> = { '{': '}', '[': ']', '(': ')' };
  const stack: string[] = [];
  for (let i = open; i < code.length; i++) {
    const c = code[i]!;
    if (c in pairs) stack.push(pairs[c]!);
    else if (c === '}' || c === ']' || c === ')') {
      if (stack.pop() !== c) throw new Error(`unbalanced ${c} at ${i}`);
      if (stack.length === 0) return i;
    }
  }
  throw new Error(`no closing bracket for ${code[open]} at ${open}`);
}

/** First `{` after `from` that is not inside parentheses (skips `if (…)` and loop sources). */
function bodyOpen(code: string, from: number): number {
  let parens = 0;
  for (let i = from; i < code.length; i++) {
    const c = code[i];
    if (c === '(') parens++;
    else if (c === ')') parens--;
    else if (c === '{' && parens === 0) return i;
  }
  throw new Error(`no body after ${from}`);
}

export interface Block {
  /** Source text between the braces (exclusive). */
  text: string;
  /** Masked text of the same span. */
  code: string;
  open: number;
  close: number;
}

function blockAt(src: string, code: string, open: number): Block {
  const close = matchingBracket(code, open);
  return { text: src.slice(open + 1, close), code: code.slice(open + 1, close), open, close };
}

export interface Decorator {
  name: string;
  /** Source text of the arguments, without the parentheses. */
  args: string;
}

export interface Declaration {
  kind: 'param' | 'var' | 'resource' | 'module' | 'output' | 'type' | 'func';
  name: string;
  index: number;
  decorators: Decorator[];
}

const DECL = /^[ \t]*(param|var|resource|module|output|type|func)[ \t]+([A-Za-z_]\w*)/gm;

/** Top-level and nested declarations, each with the decorators written above it. */
export function declarations(src: string): Declaration[] {
  const code = mask(src);
  const found: Declaration[] = [];
  let pending: Decorator[] = [];
  let lastEnd = 0;
  for (const m of code.matchAll(DECL)) {
    pending = decoratorsBetween(src, code, lastEnd, m.index);
    found.push({ kind: m[1] as Declaration['kind'], name: m[2]!, index: m.index + m[0].indexOf(m[1]!), decorators: pending });
    lastEnd = m.index + m[0].length;
  }
  return found;
}

/** Decorators in [from, to) that are not followed by anything but more decorators. */
function decoratorsBetween(src: string, code: string, from: number, to: number): Decorator[] {
  // Walk back line by line from the declaration over decorator lines (multi-line args included).
  const result: Decorator[] = [];
  const re = /^[ \t]*@([A-Za-z_][\w.]*)\s*\(/gm;
  re.lastIndex = from;
  let m: RegExpExecArray | null;
  let expectedNext = -1;
  while ((m = re.exec(code)) !== null && m.index < to) {
    const open = m.index + m[0].length - 1;
    const close = matchingBracket(code, open);
    if (expectedNext >= 0 && code.slice(expectedNext, m.index).trim() !== '') result.length = 0;
    result.push({ name: m[1]!, args: src.slice(open + 1, close) });
    expectedNext = close + 1;
    re.lastIndex = close + 1;
  }
  if (expectedNext >= 0 && code.slice(expectedNext, to).trim() !== '') return [];
  return result;
}

export interface Param {
  name: string;
  type: string;
  /** Source text of the default value, trimmed; undefined when the parameter has none. */
  defaultText: string | undefined;
  /** Nullable (`type?`) or has a default: callers may omit it. */
  optional: boolean;
  decorators: Decorator[];
}

export function params(src: string): Param[] {
  const code = mask(src);
  return declarations(src)
    .filter((d) => d.kind === 'param')
    .map((d) => {
      const lineEnd = code.indexOf('\n', d.index);
      const codeLine = code.slice(d.index, lineEnd < 0 ? undefined : lineEnd);
      const m = /^param\s+\w+\s+([A-Za-z_][\w.]*(?:\[\])?\??)\s*(=\s*)?/.exec(codeLine);
      if (!m) throw new Error(`cannot read param at line ${lineOf(src, d.index)}`);
      const type = m[1]!;
      let defaultText: string | undefined;
      if (m[2] !== undefined) {
        const start = d.index + m[0].length;
        const first = code[start];
        const end = first === '{' || first === '[' ? matchingBracket(code, start) + 1 : lineEnd < 0 ? src.length : lineEnd;
        defaultText = stripComment(src.slice(start, end), code.slice(start, end));
      }
      return { name: d.name, type, defaultText, optional: type.endsWith('?') || defaultText !== undefined, decorators: d.decorators };
    });
}

/** Removes trailing comments, whole comment lines included (the masked copy tells where code ends). */
function stripComment(text: string, code: string): string {
  let end = code.length;
  while (end > 0 && /\s/.test(code[end - 1]!) && text[end - 1] !== "'") end--;
  return text.slice(0, end).trim();
}

export function decoratorNumber(p: Param, name: string): number | undefined {
  const d = p.decorators.find((x) => x.name === name);
  return d === undefined ? undefined : Number(d.args.trim());
}

export interface Resource {
  symbol: string;
  /** e.g. Microsoft.Web/sites (or a child's short type such as config, for nested declarations). */
  type: string;
  apiVersion: string | undefined;
  existing: boolean;
  /** Line of the declaration, 1-based. */
  line: number;
  body: Block;
}

const RESOURCE = /\bresource\s+([A-Za-z_]\w*)\s+'([^'@]+)(?:@([^']+))?'\s*(existing\s*)?=/g;

export function resources(src: string): Resource[] {
  const code = mask(src);
  const found: Resource[] = [];
  for (const m of src.matchAll(RESOURCE)) {
    if (code.slice(m.index, m.index + 8) !== 'resource') continue; // inside a comment or string
    const body = blockAt(src, code, bodyOpen(code, m.index + m[0].length));
    found.push({ symbol: m[1]!, type: m[2]!, apiVersion: m[3], existing: m[4] !== undefined, line: lineOf(src, m.index), body });
  }
  return found;
}

export interface Module {
  symbol: string;
  path: string;
  line: number;
  body: Block;
  /** Keys of the `params: { … }` object (empty when there is none). */
  paramKeys: string[];
  paramsBlock: Block | undefined;
}

const MODULE = /\bmodule\s+([A-Za-z_]\w*)\s+'([^']+)'\s*=/g;

export function modules(src: string): Module[] {
  const code = mask(src);
  const found: Module[] = [];
  for (const m of src.matchAll(MODULE)) {
    if (code.slice(m.index, m.index + 6) !== 'module') continue;
    const body = blockAt(src, code, bodyOpen(code, m.index + m[0].length));
    const paramsEntry = entries(src, body).find((e) => e.key === 'params');
    const paramsBlock = paramsEntry ? blockAt(src, code, code.indexOf('{', paramsEntry.valueStart)) : undefined;
    const paramKeys = paramsBlock ? entries(src, paramsBlock).map((e) => e.key) : [];
    found.push({ symbol: m[1]!, path: m[2]!, line: lineOf(src, m.index), body, paramKeys, paramsBlock });
  }
  return found;
}

export interface Entry {
  /** Key without quotes. */
  key: string;
  /** Source text of the value, trimmed (whole nested object or array included). */
  value: string;
  /** Absolute index where the value starts. */
  valueStart: number;
}

/** Top-level `key: value` entries of an object block (keys may be quoted). */
export function entries(src: string, block: Block): Entry[] {
  const code = mask(src);
  const found: { key: string; valueStart: number; keyStart: number }[] = [];
  let depth = 0;
  let lineStart = true;
  for (let i = block.open + 1; i < block.close; i++) {
    const c = code[i]!;
    if (c === '\n' || c === ',') {
      lineStart = true;
      continue;
    }
    if (lineStart && depth === 0 && c !== ' ' && c !== '\t') {
      lineStart = false;
      const m = /^('[^'\n]*'|[A-Za-z_$][\w$]*)\s*:/.exec(src.slice(i, block.close));
      if (m) {
        found.push({ key: m[1]!.replace(/^'|'$/g, ''), keyStart: i, valueStart: i + m[0].length });
      }
    } else if (c !== ' ' && c !== '\t') {
      lineStart = false;
    }
    if (c === '{' || c === '[' || c === '(') depth++;
    if (c === '}' || c === ']' || c === ')') depth--;
  }
  return found.map((f, k) => {
    const end = k + 1 < found.length ? found[k + 1]!.keyStart : block.close;
    return { key: f.key, valueStart: f.valueStart, value: stripComment(src.slice(f.valueStart, end), code.slice(f.valueStart, end)).replace(/,$/, '').trim() };
  });
}

/** The object block an entry's value opens (`key: {…}`), or undefined for a scalar value. */
export function entryBlock(src: string, entry: Entry): Block | undefined {
  const code = mask(src);
  const open = code.slice(entry.valueStart).search(/\S/) + entry.valueStart;
  return code[open] === '{' ? blockAt(src, code, open) : undefined;
}

/** The value of a nested property path such as ['properties', 'siteConfig', 'minTlsVersion']. */
export function propertyAt(src: string, block: Block, path: readonly string[]): string | undefined {
  let current: Block | undefined = block;
  for (let k = 0; k < path.length; k++) {
    if (!current) return undefined;
    const entry = entries(src, current).find((e) => e.key === path[k]);
    if (!entry) return undefined;
    if (k === path.length - 1) return entry.value;
    current = entryBlock(src, entry);
  }
  return undefined;
}

/** Every `for x in` / `for (x, i) in` loop variable and every lambda parameter. */
function boundNames(code: string): Set<string> {
  const names = new Set<string>();
  for (const m of code.matchAll(/\bfor\s+(?:([A-Za-z_]\w*)|\(\s*([A-Za-z_]\w*)\s*,\s*([A-Za-z_]\w*)\s*\))\s+in\b/g)) {
    for (const g of [m[1], m[2], m[3]]) if (g) names.add(g);
  }
  for (const m of code.matchAll(/\(([\w\s,]*)\)\s*=>/g)) {
    for (const part of m[1]!.split(',')) if (part.trim()) names.add(part.trim());
  }
  for (const m of code.matchAll(/\b([A-Za-z_]\w*)\s*=>/g)) names.add(m[1]!);
  return names;
}

const KEYWORDS = new Set([
  'targetScope', 'param', 'var', 'resource', 'module', 'output', 'existing', 'if', 'for', 'in',
  'true', 'false', 'null', 'import', 'type', 'func', 'metadata', 'using', 'extension', 'with', 'as',
  'string', 'int', 'bool', 'object', 'array',
]);

/** Bicep's own functions (https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions). */
export const BICEP_FUNCTIONS = new Set([
  'any', 'array', 'bool', 'int', 'string', 'json', 'base64', 'base64ToJson', 'base64ToString', 'concat',
  'contains', 'dataUri', 'dataUriToString', 'empty', 'endsWith', 'first', 'format', 'guid', 'indexOf',
  'join', 'last', 'lastIndexOf', 'length', 'newGuid', 'padLeft', 'replace', 'skip', 'split', 'startsWith',
  'substring', 'take', 'toLower', 'toUpper', 'trim', 'uniqueString', 'uri', 'uriComponent',
  'uriComponentToString', 'utcNow', 'min', 'max', 'range', 'intersection', 'union', 'flatten', 'filter',
  'map', 'mapValues', 'reduce', 'sort', 'toObject', 'items', 'objectKeys', 'groupBy', 'shallowMerge',
  'tryGet', 'environment', 'deployment', 'deployer', 'subscription', 'resourceGroup', 'tenant',
  'managementGroup', 'subscriptionResourceId', 'resourceId', 'tenantResourceId', 'extensionResourceId',
  'managementGroupResourceId', 'reference', 'pickZones', 'providers', 'loadJsonContent', 'loadTextContent',
  'loadFileAsBase64', 'loadYamlContent', 'dateTimeAdd', 'dateTimeFromEpoch', 'dateTimeToEpoch', 'parseCidr',
  'cidrSubnet', 'cidrHost', 'coalesce', 'equals', 'not', 'and', 'or', 'buildUri', 'parseUri',
]);

export interface Unresolved {
  name: string;
  line: number;
  what: 'symbol' | 'function';
}

/**
 * Identifiers used as values that nothing in the file declares: a misspelt parameter, a variable
 * that was renamed, an unknown function. Property names (after `.`, before `:` as an object key),
 * decorator names and the type after `param x` / `output x` are not references.
 */
export function unresolvedIdentifiers(src: string): Unresolved[] {
  const code = mask(src);
  const declared = new Set([...declarations(src).map((d) => d.name), ...boundNames(code)]);
  const typePositions = new Set<number>();
  for (const m of code.matchAll(/\b(?:param|output)\s+[A-Za-z_]\w*\s+([A-Za-z_]\w*)/g)) {
    typePositions.add(m.index + m[0].length - m[1]!.length);
  }
  const found: Unresolved[] = [];
  for (const m of code.matchAll(/[A-Za-z_]\w*/g)) {
    const name = m[0];
    const at = m.index;
    if (at > 0 && /[\w$]/.test(code[at - 1]!)) continue; // tail of a longer token (e.g. a number)
    if (typePositions.has(at) || KEYWORDS.has(name)) continue;
    const before = code.slice(0, at).replace(/[ \t]+$/, '');
    const prev = before.slice(-1);
    if (prev === '@' || prev === '.' || before.endsWith('.?') || before.endsWith('::')) continue;
    const after = code.slice(at + name.length);
    const next = /^[ \t]*(\S)/.exec(after)?.[1];
    if (next === ':' && (prev === '{' || prev === ',' || prev === '\n' || prev === '')) continue; // object key
    if (next === '(') {
      if (!BICEP_FUNCTIONS.has(name) && !declared.has(name)) found.push({ name, line: lineOf(src, at), what: 'function' });
      continue;
    }
    if (!declared.has(name)) found.push({ name, line: lineOf(src, at), what: 'symbol' });
  }
  return found;
}

/** `x.outputs.y` references in a file, with the module symbol and output name. */
export function moduleOutputRefs(src: string): { symbol: string; output: string; line: number }[] {
  const code = mask(src);
  return [...code.matchAll(/\b([A-Za-z_]\w*)\.\??outputs\.\??([A-Za-z_]\w*)/g)].map((m) => ({
    symbol: m[1]!,
    output: m[2]!,
    line: lineOf(src, m.index),
  }));
}

/** Resolves a module path relative to the Bicep file that references it. */
export function resolveFrom(bicepRelPath: string, target: string): string {
  return relative(repoRoot(), resolve(repoRoot(), dirname(bicepRelPath), target)).split('\\').join('/');
}

/** The end of an expression that starts at `start`: the first newline outside brackets (masked code). */
function expressionEnd(code: string, start: number): number {
  let depth = 0;
  for (let i = start; i < code.length; i++) {
    const c = code[i];
    if (c === '{' || c === '[' || c === '(') depth++;
    else if (c === '}' || c === ']' || c === ')') depth--;
    else if (c === '\n' && depth === 0) return i;
  }
  return code.length;
}

/** Indexes of `chars` in [start, end) outside brackets; a `?` of `?.`, `.?` or `??` is not a ternary. */
function topLevel(code: string, start: number, end: number, char: string): number[] {
  const found: number[] = [];
  let depth = 0;
  for (let i = start; i < end; i++) {
    const c = code[i];
    if (c === '{' || c === '[' || c === '(') depth++;
    else if (c === '}' || c === ']' || c === ')') depth--;
    else if (c === char && depth === 0) {
      if (c === '?' && (code[i + 1] === '.' || code[i + 1] === '?' || code[i - 1] === '?' || code[i - 1] === '.')) continue;
      found.push(i);
    }
  }
  return found;
}

export interface AppSetting {
  key: string;
  /** Source text of the value expression. */
  value: string;
  file: string;
  line: number;
  /** Set only in one branch of a `cond ? … : …`, so not on every deployment. */
  conditional: boolean;
}

/**
 * The app settings the function app is deployed with, followed through the template from the
 * `Microsoft.Web/sites/config` resource named 'appsettings': union(…), `cond ? a : b`, object
 * literals, vars, and a module param back to the value its caller passes. Anything else
 * throws, naming the expression, so that a restructured template is noticed, not misread.
 */
export function functionAppSettings(read: (file: string) => string, files: readonly string[] = bicepFiles()): AppSetting[] {
  const configs = files.flatMap((file) =>
    resources(read(file))
      .filter((r) => r.type === 'Microsoft.Web/sites/config' && propertyAt(read(file), r.body, ['name']) === "'appsettings'")
      .map((r) => ({ file, r })),
  );
  if (configs.length !== 1) throw new Error(`expected one Microsoft.Web/sites/config 'appsettings' resource, found ${configs.length}`);
  const { file, r } = configs[0]!;
  const src = read(file);
  const entry = entries(src, r.body).find((e) => e.key === 'properties');
  if (!entry) throw new Error(`${file}:${r.line} the appsettings resource has no properties`);
  const out: AppSetting[] = [];
  const start = entry.valueStart + (src.slice(entry.valueStart).length - src.slice(entry.valueStart).trimStart().length);
  follow(file, start, start + entry.value.length, false);
  return out;

  function follow(file: string, start: number, end: number, conditional: boolean): void {
    const src = read(file);
    const code = mask(src);
    while (start < end && /\s/.test(code[start]!)) start++;
    while (end > start && /\s/.test(code[end - 1]!)) end--;
    const text = code.slice(start, end);
    const where = `${file}:${lineOf(src, start)}`;
    const q = topLevel(code, start, end, '?')[0];
    if (q !== undefined) {
      const colon = topLevel(code, q + 1, end, ':')[0];
      if (colon === undefined) throw new Error(`${where}: "?" without ":" in ${src.slice(start, end)}`);
      follow(file, q + 1, colon, true);
      follow(file, colon + 1, end, true);
      return;
    }
    if (code[start] === '(' && matchingBracket(code, start) === end - 1) return follow(file, start + 1, end - 1, conditional);
    const call = /^union\s*\(/.exec(text);
    if (call) {
      const open = start + call[0].length - 1;
      if (matchingBracket(code, open) !== end - 1) throw new Error(`${where}: cannot follow ${src.slice(start, end)}`);
      let from = open + 1;
      for (const comma of [...topLevel(code, open + 1, end - 1, ','), end - 1]) {
        follow(file, from, comma, conditional);
        from = comma + 1;
      }
      return;
    }
    if (code[start] === '{' && matchingBracket(code, start) === end - 1) {
      for (const e of entries(src, { text: '', code: '', open: start, close: end - 1 })) {
        out.push({ key: e.key, value: e.value, file, line: lineOf(src, e.valueStart), conditional });
      }
      return;
    }
    if (/^[A-Za-z_]\w*$/.test(text)) {
      const decl = new RegExp(`^[ \\t]*var[ \\t]+${text}[ \\t]*=[ \\t]*`, 'm').exec(code);
      if (decl) {
        const from = decl.index + decl[0].length;
        return follow(file, from, expressionEnd(code, from), conditional);
      }
      if (params(src).some((p) => p.name === text)) {
        const callers = files.flatMap((f) =>
          modules(read(f))
            .filter((m) => resolveFrom(f, m.path) === file && m.paramsBlock)
            .flatMap((m) => entries(read(f), m.paramsBlock!).filter((e) => e.key === text).map((e) => ({ f, e }))),
        );
        if (callers.length === 0) throw new Error(`${where}: no module passes param ${text} of ${file}`);
        for (const { f, e } of callers) {
          const s = read(f);
          const at = e.valueStart + (s.slice(e.valueStart).length - s.slice(e.valueStart).trimStart().length);
          follow(f, at, at + e.value.length, conditional);
        }
        return;
      }
    }
    throw new Error(`${where}: cannot follow app settings through ${src.slice(start, end)}`);
  }
}

/** `var x = loadJsonContent('path')` declarations, with the path resolved against the file. */
export function jsonContentLoads(bicepRelPath: string, src: string): { symbol: string; path: string; line: number }[] {
  const code = mask(src);
  return [...src.matchAll(/\bvar\s+(\w+)\s*=\s*loadJsonContent\('([^']+)'\)/g)]
    .filter((m) => code.slice(m.index, m.index + 3) === 'var')
    .map((m) => ({ symbol: m[1]!, path: resolveFrom(bicepRelPath, m[2]!), line: lineOf(src, m.index) }));
}

/** Containers in storage-account.bicep's `var appContainers = [ … ]` (the deployment container is separate). */
export function provisionedContainers(storageBicep: string): string[] {
  const list = /var appContainers = \[([^\]]*)\]/.exec(storageBicep);
  if (!list) throw new Error('storage-account.bicep: expected var appContainers = [ … ]');
  return [...list[1]!.matchAll(/'([^']+)'/g)].map((m) => m[1]!);
}

/**
 * Queues storage-account.bicep provisions for a partition count, read from its vars: input queues
 * `map(range(0, partitions), p => '…${p}…')`, the results queue appended, a poison twin of each.
 */
export function provisionedQueues(storageBicep: string, partitions: number): string[] {
  const code = storageBicep;
  const input = /var baseQueues = concat\(map\(range\(0, partitions\), (\w+) => '([a-z0-9-]*)\$\{\1\}([a-z0-9-]*)'\)/.exec(code);
  if (!input) throw new Error("storage-account.bicep: input queues should be map(range(0, partitions), p => '…${p}…')");
  const extra = /concat\(map\(range\(0, partitions\)[^)]*\)\s*,\s*\[\s*'([a-z0-9-]+)'\s*\]\)/.exec(code);
  if (!extra) throw new Error('storage-account.bicep: the results queue should be appended to the input queues');
  const twin = /var queueNames = flatten\(map\(baseQueues, (\w+) => \[\s*\1\s+'\$\{\1\}([a-z0-9-]+)'\s*\]\)\)/.exec(code);
  if (!twin) throw new Error("storage-account.bicep: poison twins should be map(baseQueues, q => [q, '${q}-…'])");
  if (!/for queue in queueNames:/.test(code)) throw new Error('storage-account.bicep: queues should loop over queueNames');
  const [prefix, suffix, results, poison] = [input[2]!, input[3]!, extra[1]!, twin[2]!];
  const bases = [...Array.from({ length: partitions }, (_, p) => `${prefix}${p}${suffix}`), results];
  return bases.flatMap((q) => [q, `${q}${poison}`]);
}
