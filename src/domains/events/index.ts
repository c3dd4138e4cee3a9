export { streamTenantEvents } from '../../http/event-stream.ts';
export {
  type AppendEventInput,
  appendEvent,
  latestEventId,
  parseEventId,
  readEventsAfter,
  type StoredEvent,
  StreamConflictError,
} from './event-repository.ts';
export {
  createEventHub,
  EVENT_HUB_DEFAULTS,
  EVENTS_CHANNEL,
  type EventHub,
  type EventHubOptions,
  type EventHubStatus,
  type SubscribeOptions,
} from './hub.ts';
export type { CloseReason, HubMessage, Subscription } from './subscription.ts';
