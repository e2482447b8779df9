/**
 * What the Azure Functions host refuses when it indexes functions, applied to the captured
 * registrations so that `npm start` fails where Azure would leave a function in error (and every
 * call to it a 404). Each rule names where in the host it comes from; the messages are the host's,
 * prefixed as the host logs a function error ("The 'x' function is in error: …").
 */
import { checkRouteTemplate, RouteTemplateError } from './route-template';
import { isTimerSchedule, unrecognisedSchedule } from './timer-schedule';

/** The shape the host receives; handlers play no part in validation. */
export interface RegisteredFunction {
  name: string;
  bindings: Record<string, { type: string; direction: string; [key: string]: unknown }>;
}

export interface RuleContext {
  /** Functions registered before this one (conflicts are checked in registration order, as the host does). */
  earlier: readonly RegisteredFunction[];
  /** App settings for `%NAME%` expressions; without them such values are not checked. */
  settings?: Readonly<Record<string, string | undefined>>;
}

export interface HostRule {
  id: string;
  /** Where the host enforces it (Azure/azure-functions-host unless another repository is named). */
  source: string;
  /** The host's message when `f` breaks the rule. */
  check(f: RegisteredFunction, context: RuleContext): string | undefined;
}

export interface Refusal {
  functionName: string;
  rule: string;
  message: string;
}

// Utility.FunctionNameValidationRegex: a letter, then letters, digits, '_' or '-'; 128 at most; not "host".
const FUNCTION_NAME = /^[a-z][a-z0-9_-]{0,127}$/i;
// Utility.BindingNameValidationRegex.
const BINDING_NAME = /^([a-zA-Z][a-zA-Z0-9]{0,127}|\$return)$/;

const triggers = (f: RegisteredFunction) =>
  Object.values(f.bindings).filter((b) => b.direction === 'in' && b.type.toLowerCase().endsWith('trigger'));
const triggerOf = (f: RegisteredFunction) => triggers(f)[0];
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function httpTriggerOf(f: RegisteredFunction): { route: string; methods: string[] } | undefined {
  const t = triggerOf(f);
  if (t?.type !== 'httpTrigger') return undefined;
  // ScriptHost.ValidateHttpFunction: an empty route defaults to the function's name.
  const route = str(t.route)?.trim() ? (t.route as string) : f.name;
  const methods = Array.isArray(t.methods) ? (t.methods as unknown[]).map((m) => String(m).toUpperCase()) : [];
  return { route, methods };
}

/** `%NAME%` resolves from app settings; an unset one is the WebJobs SDK's DefaultNameResolver error. */
type Resolved = { value: string } | { error: string } | undefined;
function resolve(value: string, settings: RuleContext['settings']): Resolved {
  if (!value.includes('%')) return { value };
  if (!settings) return undefined;
  let missing: string | undefined;
  const out = value.replace(/%([^%]+)%/g, (whole, name: string) => {
    const v = settings[name];
    if (v === undefined || v === '') missing ??= whole;
    return v ?? '';
  });
  return missing ? { error: `'${missing}' does not resolve to a value.` } : { value: out };
}

export const HOST_RULES: readonly HostRule[] = [
  {
    id: 'function-name',
    source:
      'src/WebJobs.Script/Utility.cs ValidateName / IsValidFunctionName, called by WorkerFunctionMetadataProvider.ValidateMetadata',
    check: (f) =>
      FUNCTION_NAME.test(f.name) && f.name.toLowerCase() !== 'host'
        ? undefined
        : `'${f.name}' is not a valid function name.`,
  },
  {
    id: 'unique-name',
    source:
      'src/WebJobs.Script/Host/ScriptHost.cs ValidateFunction (HTTP functions, this message); src/WebJobs.Script/Host/FunctionMetadataManager.cs refuses duplicate metadata names across providers',
    check: (f, { earlier }) =>
      earlier.some((e) => e.name.toLowerCase() === f.name.toLowerCase())
        ? `The function or proxy name '${f.name}' must be unique within the function app.`
        : undefined,
  },
  {
    id: 'binding-name',
    source: 'src/WebJobs.Script/Utility.cs ValidateBinding, called by WorkerFunctionMetadataProvider.ValidateBindings',
    check: (f) => {
      const bad = Object.keys(f.bindings).find((n) => !BINDING_NAME.test(n));
      return bad === undefined
        ? undefined
        : `The binding name ${bad} is invalid. Please assign a valid name to the binding.`;
    },
  },
  {
    id: 'one-trigger',
    source: 'src/WebJobs.Script/Description/FunctionDescriptorProvider.cs ValidateFunction',
    check: (f) => {
      const n = triggers(f).length;
      if (n === 0) return 'No trigger binding specified. A function must have a trigger input binding.';
      if (n > 1) return 'Multiple trigger bindings defined. A function can only have a single trigger binding.';
      return undefined;
    },
  },
  {
    id: 'reserved-route',
    source: 'src/WebJobs.Script/Host/ScriptHost.cs ValidateHttpFunction',
    check: (f) => {
      const http = httpTriggerOf(f);
      if (!http) return undefined;
      // Starts with, not "first segment is": `administration/x` and `runtimes` are refused too.
      const route = http.route.replace(/^\/+|\/+$/g, '').toLowerCase();
      return route.startsWith('admin') || route.startsWith('runtime')
        ? 'The specified route conflicts with one or more built in routes.'
        : undefined;
    },
  },
  {
    id: 'route-template',
    source:
      'src/WebJobs.Script.WebHost/WebScriptHostHttpRoutesManager.cs InitializeHttpFunctionRoutes → ASP.NET Core RoutePatternParser.Parse (dotnet/aspnetcore)',
    check: (f) => {
      const http = httpTriggerOf(f);
      if (!http) return undefined;
      try {
        checkRouteTemplate(http.route);
        return undefined;
      } catch (e) {
        if (e instanceof RouteTemplateError) return e.message;
        throw e;
      }
    },
  },
  {
    id: 'route-conflict',
    source: 'src/WebJobs.Script/Host/ScriptHost.cs ValidateFunction / HttpRoutesConflict',
    check: (f, { earlier }) => {
      const http = httpTriggerOf(f);
      if (!http) return undefined;
      const trim = (r: string): string => r.replace(/^\/+|\/+$/g, '').toLowerCase();
      // Same route text (case-insensitive, '/' trimmed) and a method in common; no methods means all.
      const other = earlier.find((e) => {
        const o = httpTriggerOf(e);
        if (!o || trim(o.route) !== trim(http.route)) return false;
        return o.methods.length === 0 || http.methods.length === 0 || o.methods.some((m) => http.methods.includes(m));
      });
      return other ? `The route specified conflicts with the route defined by function '${other.name}'.` : undefined;
    },
  },
  {
    id: 'timer-schedule',
    source:
      'Azure/azure-webjobs-sdk-extensions src/WebJobs.Extensions/Extensions/Timers/Scheduling/TimerSchedule.cs Create (CronSchedule.TryCreate, then TimeSpan.TryParse)',
    check: (f, { settings }) => {
      const t = triggerOf(f);
      if (t?.type !== 'timerTrigger') return undefined;
      const raw = str(t.schedule);
      if (raw === undefined || raw.trim() === '') return unrecognisedSchedule(raw ?? '');
      const r = resolve(raw, settings);
      if (!r) return undefined;
      if ('error' in r) return r.error;
      return isTimerSchedule(r.value) ? undefined : unrecognisedSchedule(r.value);
    },
  },
  {
    id: 'service-bus-entity',
    source:
      "Azure/azure-sdk-for-net Microsoft.Azure.WebJobs.Extensions.ServiceBus ServiceBusTriggerAttribute (a queue, or a topic and its subscription) and the host's listener start-up",
    check: (f, { settings }) => {
      const t = triggerOf(f);
      if (t?.type !== 'serviceBusTrigger') return undefined;
      const queue = str(t.queueName)?.trim();
      const topic = str(t.topicName)?.trim();
      const subscription = str(t.subscriptionName)?.trim();
      if (queue && topic)
        return `The function sets both queueName and topicName; a Service Bus trigger listens to one entity.`;
      if (!queue && !topic) return `A Service Bus trigger needs a queueName, or a topicName and a subscriptionName.`;
      if (topic && !subscription)
        return `The listener for function 'Functions.${f.name}' was unable to start: topic '${topic}' has no subscriptionName, and a topic trigger receives from a subscription.`;
      for (const v of [queue, topic, subscription]) {
        const r = v === undefined ? undefined : resolve(v, settings);
        if (r && 'error' in r) return r.error;
      }
      return undefined;
    },
  },
];

/** Every refusal, in registration order; `rules` defaults to all of HOST_RULES. */
export function refusals(
  functions: readonly RegisteredFunction[],
  settings?: RuleContext['settings'],
  rules: readonly HostRule[] = HOST_RULES,
): Refusal[] {
  const out: Refusal[] = [];
  functions.forEach((f, i) => {
    const context: RuleContext = { earlier: functions.slice(0, i), ...(settings ? { settings } : {}) };
    for (const rule of rules) {
      const message = rule.check(f, context);
      if (message !== undefined) out.push({ functionName: f.name, rule: rule.id, message });
    }
  });
  return out;
}

class FunctionsRefused extends Error {
  constructor(readonly refused: Refusal[]) {
    super(
      `the Azure Functions host would refuse ${refused.length} function(s):\n` +
        refused.map((r) => `  The '${r.functionName}' function is in error: ${r.message} [${r.rule}]`).join('\n'),
    );
    this.name = 'FunctionsRefused';
  }
}

/** Throws FunctionsRefused, listing every refusal, when the host would refuse any function. */
export function assertHostAccepts(functions: readonly RegisteredFunction[], settings?: RuleContext['settings']): void {
  const refused = refusals(functions, settings);
  if (refused.length > 0) throw new FunctionsRefused(refused);
}
