/**
 * Another instance of the service's seal in a process of its own (test/seal-pkcs11.test.ts,
 * test/seal-csc.test.ts): opens the seal from the environment as src/main.ts does (SEAL_SIGNER=pkcs11
 * or csc, its start-up probe included), signs `argv[2]` digests eight at a time and checks each under the certificate, and
 * prints `{ fingerprint, signed, verified }`.
 */
import { constants, createHash, publicDecrypt, randomBytes, X509Certificate } from 'node:crypto';
import { loadConfig } from '../../src/config.ts';
import { openSeal } from '../../src/domain/artefact/seal-certificate.ts';
import { digestInfoOf } from '../../src/domain/artefact/seal-signer.ts';

const count = Number(process.argv[2] ?? '20');
const seal = await openSeal(loadConfig());
const publicKey = new X509Certificate(seal.certificates[0]!).publicKey;
let verified = 0;
for (let start = 0; start < count; start += 8) {
  await Promise.all(
    Array.from({ length: Math.min(8, count - start) }, async () => {
      const digest = createHash('sha256').update(randomBytes(16)).digest();
      const signature = await seal.signer.signDigest(digest);
      if (publicDecrypt({ key: publicKey, padding: constants.RSA_PKCS1_PADDING }, signature).equals(digestInfoOf(digest))) verified += 1;
    }),
  );
}
await seal.signer.close();
console.log(JSON.stringify({ fingerprint: seal.fingerprintSha256, signed: count, verified }));
