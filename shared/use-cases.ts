/**
 * The façade's use cases and what each needs before it runs, said once. `work`: it counts as work
 * in flight, so the status history does not count its Storage requests as what idling costs.
 * Nothing provisions Storage first: infra/ creates every queue and container in Azure (and the
 * local stack before it serves), so a cold instance's first request is its work. The façade (app.ts) reaches its
 * parts only through UseCaseRunner.run with one of these names, so a new use case cannot skip
 * what its entry says; a type check in app.ts makes every public member of the façade an entry.
 */
import type { AppObserver } from './status/app-observer';

export interface UseCaseNeeds {
  readonly work: boolean;
  /** Makes no request of its own, so it may answer synchronously. */
  readonly local: boolean;
}

/** Reads or changes Storage as part of the pipeline's work. */
const WORK = { work: true, local: false } as const;
/** Reads Storage on a client's or an operator's behalf: watching is not work. */
const READ = { work: false, local: false } as const;
/** Talks to Service Bus only (no Storage), as work. */
const REMOTE = { work: true, local: false } as const;
/** Answers from memory or settings, or manages the process: no request of its own. */
const LOCAL = { work: false, local: true } as const;

export const USE_CASES = {
  submit: WORK,
  status: READ,
  timeline: READ,
  report: READ,
  batchPage: READ,
  // Not counted as work: a sweep that found nothing is what idling costs (it reports work itself).
  sweep: READ,
  statusReport: READ,
  drain: WORK,
  recover: WORK,
  redrive: WORK,
  redriveDeadLetters: REMOTE,
  watchdog: WORK,
  retryDelivery: WORK,
  scale: WORK,
  syphon: WORK,
  // Writes each batch's leftover usage to its manifest now, instead of after its flush delay.
  flushUsage: WORK,
  // A probe to the operator's webhooks: no Storage request, nothing recorded.
  sendTestEvent: LOCAL,
  authorize: LOCAL,
  admitIngest: LOCAL,
  dashboardPage: LOCAL,
  health: LOCAL,
  healthProbe: LOCAL,
  partDown: LOCAL,
  eventKeys: LOCAL,
  storageTransactions: LOCAL,
  maxBodyBytes: LOCAL,
  drainsInProgress: LOCAL,
  beginShutdown: LOCAL,
  cancelIdleContinuations: LOCAL,
  close: LOCAL,
  telemetryDestination: LOCAL,
} as const satisfies Record<string, UseCaseNeeds>;

export type UseCaseName = keyof typeof USE_CASES;

/** The use cases that need nothing: they may answer synchronously. */
export type LocalUseCase = {
  [K in UseCaseName]: (typeof USE_CASES)[K] extends typeof LOCAL ? K : never;
}[UseCaseName];

/** Applies each use case's needs (USE_CASES) before handing it the parts. */
export class UseCaseRunner<P> {
  constructor(
    private readonly parts: P,
    private readonly observer: Pick<AppObserver, 'during'>,
  ) {}

  run<T>(name: UseCaseName, work: (parts: P) => Promise<T>): Promise<T> {
    const needs: UseCaseNeeds = USE_CASES[name];
    return needs.work ? this.observer.during(() => work(this.parts)) : work(this.parts);
  }

  /** A use case that needs nothing, answered at once. */
  local<T>(_name: LocalUseCase, work: (parts: P) => T): T {
    return work(this.parts);
  }
}
