/**
 * The route-template grammar of ASP.NET Core routing, which the Functions host uses for HTTP
 * triggers (the route is mapped with `new Route(...)`, which parses it with RoutePatternParser in
 * dotnet/aspnetcore src/Http/Routing/src/Patterns/RoutePatternParser.cs). A template it cannot
 * parse leaves the function in error in Azure; this reports the same messages (Resources.resx of
 * Microsoft.AspNetCore.Routing), so the local host can refuse it first.
 */

const MESSAGES = {
  invalidRouteTemplate: "The route template cannot start with a '~' character unless followed by a '/'.",
  consecutiveSeparators:
    "The route template separator character '/' cannot appear consecutively. It must be separated by either a parameter or a literal value.",
  mismatchedParameter:
    "There is an incomplete parameter in the route template. Check that each '{' character has a matching '}' character.",
  unescapedBrace: "In a route parameter, '{' and '}' must be escaped with '{{' and '}}'.",
  invalidLiteral: (l: string) =>
    `The literal section '${l}' is invalid. Literal sections cannot contain the '?' character.`,
  invalidParameterName: (n: string) =>
    `The route parameter name '${n}' is invalid. Route parameter names must be non-empty and cannot contain these characters: '{', '}', '/'. The '?' character marks a parameter as optional, and can occur only at the end of the parameter. The '*' character marks a parameter as catch-all, and can occur only at the start of the parameter.`,
  repeatedParameter: (n: string) => `The route parameter name '${n}' appears more than one time in the route template.`,
  catchAllCannotBeOptional: 'A catch-all parameter cannot be marked optional.',
  optionalCannotHaveDefault: 'An optional parameter cannot have default value.',
  catchAllMustBeLast: 'A catch-all parameter can only appear as the last segment of the route template.',
  catchAllInMultiSegment:
    'A path segment that contains more than one section, such as a literal section or a parameter, cannot contain a catch-all parameter.',
  consecutiveParameters:
    "A path segment cannot contain two consecutive parameters. They must be separated by a '/' or by a literal string.",
  optionalPrecededBy: (segment: string, name: string, before: string) =>
    `In the segment '${segment}', the optional parameter '${name}' is preceded by an invalid segment '${before}'. Only a period (.) can precede an optional parameter.`,
  optionalNotLast: (segment: string, name: string, after: string) =>
    `An optional parameter must be at the end of the segment. In the segment '${segment}', optional parameter '${name}' is followed by '${after}'.`,
  unknownConstraint: (c: string) =>
    `The inline constraint resolver of type 'DefaultInlineConstraintResolver' was unable to resolve the following inline constraint: '${c}'.`,
};

/** The constraint names ASP.NET Core's DefaultInlineConstraintResolver knows (RouteOptions.ConstraintMap). */
const CONSTRAINTS = new Set([
  'int',
  'bool',
  'datetime',
  'decimal',
  'double',
  'float',
  'guid',
  'long',
  'minlength',
  'maxlength',
  'length',
  'min',
  'max',
  'range',
  'alpha',
  'regex',
  'required',
  'file',
  'nonfile',
]);

type Part = { literal: string; raw: string } | { name: string; optional: boolean; catchAll: boolean; raw: string };

export class RouteTemplateError extends Error {}

/** Throws RouteTemplateError with ASP.NET Core's message when the host could not map `template`. */
export function checkRouteTemplate(template: string): void {
  let t = template;
  if (t.startsWith('~/')) t = t.slice(2);
  else if (t.startsWith('/')) t = t.slice(1);
  else if (t.startsWith('~')) throw new RouteTemplateError(MESSAGES.invalidRouteTemplate);
  const names = new Set<string>();
  const segments: Part[][] = [];
  let i = 0;
  while (i < t.length) {
    if (t[i] === '/') throw new RouteTemplateError(MESSAGES.consecutiveSeparators);
    const parts: Part[] = [];
    while (i < t.length && t[i] !== '/') {
      const part = t[i] === '{' && t[i + 1] !== '{' ? readParameter(t, i) : readLiteral(t, i);
      i = part.end;
      if ('name' in part.part) {
        const key = part.part.name.toLowerCase();
        if (names.has(key)) throw new RouteTemplateError(MESSAGES.repeatedParameter(part.part.name));
        names.add(key);
      }
      parts.push(part.part);
    }
    checkSegment(parts);
    segments.push(parts);
    if (t[i] === '/') i++;
  }
  segments.forEach((parts, s) =>
    parts.forEach((p, j) => {
      if ('name' in p && p.catchAll && (s !== segments.length - 1 || j !== parts.length - 1))
        throw new RouteTemplateError(MESSAGES.catchAllMustBeLast);
    }),
  );
}

function readLiteral(t: string, start: number): { part: Part; end: number } {
  let i = start;
  while (i < t.length && t[i] !== '/') {
    if (t[i] === '{') {
      if (t[i + 1] !== '{') break; // a parameter starts here
      i += 2;
      continue;
    }
    if (t[i] === '}') {
      if (t[i + 1] !== '}') throw new RouteTemplateError(MESSAGES.mismatchedParameter);
      i += 2;
      continue;
    }
    i++;
  }
  const raw = t.slice(start, i);
  const literal = raw.replaceAll('}}', '}').replaceAll('{{', '{');
  if (literal.includes('?')) throw new RouteTemplateError(MESSAGES.invalidLiteral(literal));
  return { part: { literal, raw }, end: i };
}

function readParameter(t: string, start: number): { part: Part; end: number } {
  let i = start + 1;
  for (;;) {
    if (i >= t.length) throw new RouteTemplateError(MESSAGES.mismatchedParameter);
    if (t[i] === '{') {
      if (i + 1 >= t.length) throw new RouteTemplateError(MESSAGES.mismatchedParameter);
      if (t[i + 1] !== '{') throw new RouteTemplateError(MESSAGES.unescapedBrace);
      i += 2;
      continue;
    }
    if (t[i] === '}') {
      if (t[i + 1] === '}') {
        i += 2;
        continue;
      }
      break;
    }
    i++;
  }
  const raw = t.slice(start, i + 1);
  const inside = raw.slice(1, -1).replaceAll('}}', '}').replaceAll('{{', '{');
  if (inside === '') throw new RouteTemplateError(MESSAGES.invalidParameterName(''));
  if (inside.startsWith('*') && inside.endsWith('?')) throw new RouteTemplateError(MESSAGES.catchAllCannotBeOptional);
  const catchAll = inside.startsWith('*');
  let rest = inside.replace(/^\*{1,2}/, '');
  const optional = rest.endsWith('?');
  if (optional) rest = rest.slice(0, -1);
  // name[:constraint[(args)]…][=default]; a constraint's arguments may hold ':' or '='.
  const nameEnd = rest.search(/[:=]/);
  const name = nameEnd < 0 ? rest : rest.slice(0, nameEnd);
  const tail = nameEnd < 0 ? '' : rest.slice(nameEnd);
  const { constraints, hasDefault } = splitTail(tail);
  if (optional && hasDefault) throw new RouteTemplateError(MESSAGES.optionalCannotHaveDefault);
  if (name === '' || /[/{}?*]/.test(name)) throw new RouteTemplateError(MESSAGES.invalidParameterName(name));
  for (const c of constraints)
    if (!CONSTRAINTS.has(c.replace(/\(.*$/s, '').toLowerCase()))
      throw new RouteTemplateError(MESSAGES.unknownConstraint(c));
  return { part: { name, optional, catchAll, raw }, end: i + 1 };
}

/** `:a:b(x:y)=d` → constraints `a`, `b(x:y)` and whether a default follows (outside parentheses). */
function splitTail(tail: string): { constraints: string[]; hasDefault: boolean } {
  const constraints: string[] = [];
  let depth = 0;
  let current: string | undefined;
  for (const ch of tail) {
    if (depth === 0 && ch === '=') {
      if (current !== undefined) constraints.push(current);
      return { constraints, hasDefault: true };
    }
    if (depth === 0 && ch === ':') {
      if (current !== undefined) constraints.push(current);
      current = '';
      continue;
    }
    if (ch === '(') depth++;
    if (ch === ')') depth = Math.max(0, depth - 1);
    current = (current ?? '') + ch;
  }
  if (current !== undefined) constraints.push(current);
  return { constraints, hasDefault: false };
}

function checkSegment(parts: Part[]): void {
  const segment = parts.map((p) => p.raw).join('');
  if (parts.length > 1 && parts.some((p) => 'name' in p && p.catchAll))
    throw new RouteTemplateError(MESSAGES.catchAllInMultiSegment);
  parts.forEach((p, i) => {
    if (!('name' in p) || !p.optional || parts.length === 1) return;
    const next = parts[i + 1];
    if (next) throw new RouteTemplateError(MESSAGES.optionalNotLast(segment, p.name, next.raw));
    const before = parts[i - 1];
    if (before && (!('literal' in before) || before.literal !== '.'))
      throw new RouteTemplateError(MESSAGES.optionalPrecededBy(segment, p.name, before.raw));
  });
  parts.forEach((p, i) => {
    const prev = parts[i - 1];
    if ('name' in p && prev && 'name' in prev) throw new RouteTemplateError(MESSAGES.consecutiveParameters);
  });
}
