import type { EnvelopeEvent } from '../../domain/live/envelope-event.ts';
import { type LiveItem, subscribeEnvelopeEvents, subscribeEnvelopeStatusChanged, subscribeSigningSessionChanged } from '../../domain/live/live.service.ts';
import { builder } from '../builder.ts';
import { EnvelopeStatusEnum } from './envelope.ts';

const EnvelopeEventType = builder.objectRef<EnvelopeEvent>('EnvelopeEvent').implement({
  description: 'One audit event of an envelope as it was appended, for live watchers.',
  fields: (t) => ({
    envelopeId: t.id({ resolve: (event) => event.envelopeId }),
    sequence: t.exposeInt('sequence', {
      description: 'The event’s seq in the envelope’s audit trail: grows by one per event. Pass the last one you saw as afterSequence to resume.',
    }),
    type: t.exposeString('type', { description: 'The audit event type, e.g. envelope.sent, recipient.activated, signing.viewed, envelope.finalized.' }),
    status: t.field({
      type: EnvelopeStatusEnum,
      nullable: true,
      description: 'The envelope’s status after this event; null after envelope.deleted (a deleted draft).',
      resolve: (event) => event.status,
    }),
    at: t.field({ type: 'DateTime', resolve: (event) => event.at }),
    revision: t.int({
      nullable: true,
      description: 'For envelope.corrected: the envelope revision the correction made (also in its webhook’s data.revision); null for every other event.',
      resolve: (event) => event.revision ?? null,
    }),
  }),
});

/** The last item of an ended subscription carries its error: raised here, it reaches the client by name. */
function eventOf(item: LiveItem): EnvelopeEvent {
  if ('ended' in item) throw item.ended;
  return item;
}

builder.subscriptionField('envelopeStatusChanged', (t) =>
  t.field({
    type: EnvelopeEventType,
    description:
      'One event per status change (created as draft, sent, finalized, voided, expired, deleted) of this envelope, or of every envelope of your team when no id is given, from now on. A foreign or unknown id: Envelope.NotFound.',
    args: { envelopeId: t.arg.id({ required: false }) },
    subscribe: (_root, args, context) => subscribeEnvelopeStatusChanged(context, { envelopeId: args.envelopeId === null || args.envelopeId === undefined ? null : String(args.envelopeId) }),
    resolve: (item: LiveItem) => eventOf(item),
  }),
);

builder.subscriptionField('envelopeEvents', (t) =>
  t.field({
    type: EnvelopeEventType,
    description:
      'Every audit event of one envelope as it is appended. With afterSequence, first every event after it (from the stored trail), then live ones: nothing lost, nothing twice. A foreign or unknown id: Envelope.NotFound.',
    args: {
      envelopeId: t.arg.id({ required: true }),
      afterSequence: t.arg.int({ required: false, description: 'The last sequence you saw (0: from the start).' }),
    },
    subscribe: (_root, args, context) => subscribeEnvelopeEvents(context, { envelopeId: String(args.envelopeId), afterSequence: args.afterSequence }),
    resolve: (item: LiveItem) => eventOf(item),
  }),
);

builder.subscriptionField('signingSessionChanged', (t) =>
  t.field({
    type: EnvelopeEventType,
    description:
      'For a signing page (X-Signing-Token, no team key): its envelope’s status changes, turns (recipient.activated) and corrections (envelope.corrected, with the new revision) from now on; when the envelope closes (finalized, voided, expired) that event arrives and the subscription completes. Refused as signingSession refuses.',
    subscribe: (_root, _args, context) => subscribeSigningSessionChanged(context),
    resolve: (item: LiveItem) => eventOf(item),
  }),
);
