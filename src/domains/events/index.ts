export {
  type AppendEventInput,
  appendEvent,
  appendUncheckedEvent,
  EVENTS_CHANNEL,
  latestEventId,
  parseEventId,
  readEventsAfter,
  type StoredEvent,
  type StreamAppendInput,
  StreamConflictError,
  type UncheckedEventInput,
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
