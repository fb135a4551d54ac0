import { advanceSandboxClock, voidEnvelope } from '../../domain/signing/closing.service.ts';
import { sendEnvelope } from '../../domain/signing/send.service.ts';
import { readJsonObject } from '../body.ts';
import type { RestRoute } from '../router.ts';

/** Spec §3.1/§4.1 send, contract §5 void and §8 sandbox clock. Signing itself is GraphQL only (contract §7). */
export const workflowRoutes: RestRoute[] = [
  {
    method: 'PUT',
    path: '/envelopes/:envelopeId/send',
    async handler({ params, context }) {
      await sendEnvelope(context, { envelopeId: params.envelopeId });
      return { completed: true };
    },
  },
  {
    method: 'POST',
    path: '/envelopes/:envelopeId/void',
    async handler({ request, params, context }) {
      await voidEnvelope(context, { envelopeId: params.envelopeId, input: await readJsonObject(request) });
      return { voided: true };
    },
  },
  {
    method: 'POST',
    path: '/sandbox/clock',
    async handler({ request, context }) {
      return advanceSandboxClock(context, { input: await readJsonObject(request) });
    },
  },
];
