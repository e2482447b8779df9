/**
 * An app and the parts it was composed from. The façade keeps its parts private; a test that
 * drives or inspects one step composes the app itself and keeps the parts, as the bench does.
 */
import { PushdrainApp } from '../../shared/app';
import type { AppOptions } from '../../shared/compose/app-options';
import type { AppParts } from '../../shared/compose/app-parts';
import type { Settings } from '../../shared/config/settings';
import { composeApp } from '../../shared/create-app';

export interface ComposedApp {
  app: PushdrainApp;
  parts: AppParts;
}

export function composedApp(settings: Settings, options: AppOptions = {}): ComposedApp {
  const parts = composeApp(settings, options);
  return { app: new PushdrainApp(parts), parts };
}
