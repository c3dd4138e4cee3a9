export {
  type AppendEventInput,
  appendEvent,
  EVENTS_CHANNEL,
  latestEventId,
  parseEventId,
  readEventsAfter,
  type StoredEvent,
  StreamConflictError,
} from './event-repository.ts';
export {
  createEventHub,
  EVENT_HUB_DEFAULTS,
  type EventHub,
  type EventHubOptions,
  type EventHubStatus,
  type NoticeObserver,
  type SubscribeOptions,
} from './event-service.ts';
export type { RevocationNotice } from './notice.ts';
export type { CloseReason, HubMessage, Subscription } from './subscription.ts';
