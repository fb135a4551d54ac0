import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, updatedAtColumn } from '../../db/columns.ts';
import { Envelope } from '../envelope/envelope.entity.ts';
import { Recipient } from '../recipient/recipient.entity.ts';

/**
 * A signer's advanced or qualified signature through a trust service provider (issue 35,
 * docs/artefacts.md "Signature levels"): one row per recipient, from the moment its values are
 * saved and it is sent to the provider until its PAdES signature is embedded. `status` moves by
 * guarded updates only (signing/trust-signing.ts, artefact/signer-signature.service.ts):
 * `service_authorizing` (the browser is at the provider to let the service read the credential),
 * `preparing` (one callback took that code and prepares the documents), `credential_authorizing`
 * (the documents are prepared and their hashes are being authorized), `signing` (one callback took
 * the code: no other may), `signed`, or `failed` (retryable: the values stay saved). `stateHash` is the SHA-256 of the
 * OAuth `state` now out; `returnToken` the signing link, encrypted, to bring the browser back.
 */
export const SignerSignatureSchema = defineEntity({
  name: 'SignerSignature',
  tableName: 'signer_signature',
  properties: {
    ...baseColumns(),
    updatedAt: updatedAtColumn(),
    envelope: () => p.manyToOne(Envelope).ref().deleteRule('cascade').index(),
    recipient: () => p.manyToOne(Recipient).ref().deleteRule('cascade').unique(),
    agentId: p.uuid(),
    tokenId: p.uuid(),
    personIndex: p.integer().default(0),
    level: p.string().length(16),
    trustServiceId: p.string().length(64),
    status: p.string().length(24),
    stateHash: p.string().length(64).nullable().unique(),
    returnToken: p.text().nullable(),
    credentialId: p.text().nullable(),
    /** The signer's certificates (base64 DER, the signer's first), as the provider's credentials/info gave them. */
    certificates: p.json<string[]>().nullable(),
    /** The signer's certificate as the certificate of completion and verify name it. */
    certificate: p.json<Record<string, unknown>>().nullable(),
    /** Per document: the file it was prepared from, the prepared file, and the fields drawn into it. */
    prepared: p.json<Record<string, unknown>[]>().nullable(),
    consent: p.text().nullable(),
    /** The last failure: `{ name, reason, message }`. */
    error: p.json<Record<string, unknown>>().nullable(),
    signedAt: p.datetime().nullable(),
  },
});

export class SignerSignature extends SignerSignatureSchema.class {}
SignerSignatureSchema.setClass(SignerSignature);
