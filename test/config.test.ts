import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';

function problemFor(environment: Record<string, string>): string {
  try {
    loadConfig(environment);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected the configuration to be refused');
}

describe('configuration', () => {
  it('has documented defaults', () => {
    const config = loadConfig({});
    expect(config.port).toBe(4000);
    expect(config.publicUrl).toBe('http://localhost:4000');
    expect(config.databaseUrl).toBeUndefined();
    expect(config.dataDir).toBe(path.resolve('./.data'));
    expect(config.logLevel).toBe('info');
    expect(config.restErrorsHttp200).toBe(false);
    expect(config.sandboxClock).toBe(false);
  });

  it('derives PUBLIC_URL from PORT and strips a trailing slash from an explicit one', () => {
    expect(loadConfig({ PORT: '8080' }).publicUrl).toBe('http://localhost:8080');
    expect(loadConfig({ PUBLIC_URL: 'https://sign.example.com/' }).publicUrl).toBe('https://sign.example.com');
  });

  it('listens on every interface unless HOST names an address', () => {
    expect(loadConfig({}).host).toBeUndefined();
    expect(loadConfig({ HOST: '127.0.0.1' }).host).toBe('127.0.0.1');
    expect(loadConfig({ HOST: '::' }).host).toBe('::');
    expect(loadConfig({ HOST: 'localhost' }).host).toBe('localhost');
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '' }).port).toBe(4000);
  });

  it.each([
    [{ PORT: 'abc' }, /^Invalid configuration: PORT must be an integer between 0 and 65535 \(got "abc"\)$/],
    [{ PORT: '70000' }, /^Invalid configuration: PORT /],
    [{ HOST: 'http://0.0.0.0' }, /^Invalid configuration: HOST must be an IP address or a host name/],
    [{ PUBLIC_URL: 'ftp://x' }, /^Invalid configuration: PUBLIC_URL must be an absolute http\(s\) URL/],
    [{ DATABASE_URL: 'mysql://x' }, /^Invalid configuration: DATABASE_URL must be a postgres:\/\//],
    [{ LOG_LEVEL: 'loud' }, /^Invalid configuration: LOG_LEVEL must be one of/],
    [{ REST_ERRORS_HTTP_200: 'maybe' }, /^Invalid configuration: REST_ERRORS_HTTP_200 must be one of true, false/],
    [{ SMTP_URL: 'http://mail' }, /^Invalid configuration: SMTP_URL /],
    [{ SEAL_P12: '/tmp/seal.p12' }, /^Invalid configuration: SEAL_P12_PASSWORD must be set when SEAL_P12 is set$/],
    [{ TSA_URL: 'tsa.example.com' }, /^Invalid configuration: TSA_URL must be an absolute http\(s\) URL of an RFC 3161 timestamp authority/],
    [{ OUTBOX_WORKER: 'sometimes' }, /^Invalid configuration: OUTBOX_WORKER must be one of true, false/],
    [{ MAIL_FROM: 'a@b.c\r\nBcc: x@y.z' }, /^Invalid configuration: MAIL_FROM must be one line/],
    [{ SMS_PROVIDER_URL: 'sms.example.com' }, /^Invalid configuration: SMS_PROVIDER_URL must be an absolute http\(s\) URL/],
    [{ SMS_PROVIDER_BODY: '{"to": {{to}}}' }, /^Invalid configuration: SMS_PROVIDER_BODY must be a JSON template/],
    // A secret is never repeated.
    [{ SMS_PROVIDER_AUTHORIZATION: 'Bearer s3cret\nx' }, /^Invalid configuration: SMS_PROVIDER_AUTHORIZATION must be one line \(the Authorization header value\)$/],
    [{ API_KEY_CACHE_TTL_MS: '0' }, /^Invalid configuration: API_KEY_CACHE_TTL_MS must be an integer from 100 to 300000 \(milliseconds\)/],
    [{ API_KEY_CACHE_TTL_MS: '5s' }, /^Invalid configuration: API_KEY_CACHE_TTL_MS must be an integer from 100 to 300000 \(milliseconds\)/],
    [{ METRICS_PORT: 'nine' }, /^Invalid configuration: METRICS_PORT must be an integer between 0 and 65535 \(got "nine"\)$/],
    [{ METRICS_PORT: '70000' }, /^Invalid configuration: METRICS_PORT /],
    [{ PORT: '9100', METRICS_PORT: '9100' }, /^Invalid configuration: METRICS_PORT must differ from PORT \(both are 9100\)$/],
    [{ METRICS_TOKEN: 'short' }, /^Invalid configuration: METRICS_TOKEN must be 16 to 256 characters[^"]*$/],
    [{ METRICS_TOKEN: 'a secret with spaces in it' }, /^Invalid configuration: METRICS_TOKEN must be 16 to 256 characters[^"]*$/],
  ])('refuses %o with one line naming the variable', (environment, expected) => {
    const message = problemFor(environment);
    expect(message).toMatch(expected);
    expect(message).not.toContain('\n');
  });

  it('trusts a verified API key for 5 s unless API_KEY_CACHE_TTL_MS says otherwise', () => {
    expect(loadConfig({}).apiKeyCacheTtlMs).toBe(5_000);
    expect(loadConfig({ API_KEY_CACHE_TTL_MS: '60000' }).apiKeyCacheTtlMs).toBe(60_000);
  });

  it('leaves metrics off unless METRICS_PORT or METRICS_TOKEN is set', () => {
    expect(loadConfig({})).toMatchObject({ metricsPort: undefined, metricsToken: undefined });
    const token = 'b7f3c1d2e4a5968778695a4b3c2d1e0f';
    expect(loadConfig({ METRICS_PORT: '9464', METRICS_TOKEN: token })).toMatchObject({ metricsPort: 9464, metricsToken: token });
    expect(loadConfig({ METRICS_PORT: '', METRICS_TOKEN: '' })).toMatchObject({ metricsPort: undefined, metricsToken: undefined });
  });

  it('never repeats METRICS_TOKEN in its refusal', () => {
    const message = problemFor({ METRICS_TOKEN: 'not-valid because of spaces' });
    expect(message).not.toContain('not-valid');
  });

  it('reads boolean flags', () => {
    expect(loadConfig({ REST_ERRORS_HTTP_200: 'true', SANDBOX_CLOCK: '1' })).toMatchObject({ restErrorsHttp200: true, sandboxClock: true, outboxWorker: true });
    expect(loadConfig({ OUTBOX_WORKER: 'false' })).toMatchObject({ outboxWorker: false });
  });
});

describe('traces', () => {
  it('are on when an OTLP endpoint is named, unless OTEL_SDK_DISABLED; the service name defaults to envelope-service', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing).toEqual({ serviceName: 'envelope-service' });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces', OTEL_SERVICE_NAME: 'sign-eu' }).tracing).toEqual({ serviceName: 'sign-eu' });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined();
    expect(problemFor({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toMatch(/^Invalid configuration: OTEL_EXPORTER_OTLP_ENDPOINT must be an absolute http\(s\) URL/);
  });
});

describe('the blob store', () => {
  it('defaults to files under DATA_DIR/blobs, with a 1 GiB cache and no redirects', () => {
    const config = loadConfig({});
    expect(config.blobStore).toEqual({ kind: 'file' });
    expect(config.blobCacheBytes).toBe(1024 ** 3);
    expect(config.downloadRedirect).toBe(false);
    expect(loadConfig({ BLOB_STORE_URL: 'file:' }).blobStore).toEqual({ kind: 'file' });
  });

  it('reads s3://BUCKET[/PREFIX] with the S3 variables', () => {
    expect(loadConfig({ BLOB_STORE_URL: 's3://envelope-blobs' }).blobStore).toEqual({
      kind: 's3',
      bucket: 'envelope-blobs',
      prefix: '',
      endpoint: undefined,
      region: 'us-east-1',
      forcePathStyle: false,
      deadlines: { connectMs: 5_000, requestMs: 60_000, operationMs: 120_000 },
    });
    const config = loadConfig({
      BLOB_STORE_URL: 's3://envelope-blobs/prod/files/',
      S3_ENDPOINT: 'http://minio:9000',
      S3_REGION: 'eu-central-1',
      S3_FORCE_PATH_STYLE: 'true',
      BLOB_CACHE_BYTES: '1048576',
      DOWNLOAD_REDIRECT: 'true',
      S3_CONNECT_TIMEOUT_MS: '2000',
      S3_REQUEST_TIMEOUT_MS: '10000',
      S3_OPERATION_TIMEOUT_MS: '60000',
    });
    expect(config.blobStore).toEqual({
      kind: 's3',
      bucket: 'envelope-blobs',
      prefix: 'prod/files/',
      endpoint: 'http://minio:9000',
      region: 'eu-central-1',
      forcePathStyle: true,
      deadlines: { connectMs: 2_000, requestMs: 10_000, operationMs: 60_000 },
    });
    expect(config.blobCacheBytes).toBe(1048576);
    expect(config.downloadRedirect).toBe(true);
  });

  it('refuses a bad store URL, endpoint or cache size, and DOWNLOAD_REDIRECT without an object store', () => {
    expect(problemFor({ BLOB_STORE_URL: 'https://bucket' })).toContain('BLOB_STORE_URL must be file: (files under DATA_DIR/blobs) or s3://BUCKET[/PREFIX]');
    expect(problemFor({ BLOB_STORE_URL: 's3://Bad_Bucket' })).toContain('BLOB_STORE_URL');
    expect(problemFor({ S3_ENDPOINT: 'minio:9000' })).toContain('S3_ENDPOINT must be an absolute http(s) URL');
    expect(problemFor({ BLOB_CACHE_BYTES: '-1' })).toContain('BLOB_CACHE_BYTES must be an integer number of bytes');
    expect(problemFor({ S3_REQUEST_TIMEOUT_MS: '0' })).toContain('S3_REQUEST_TIMEOUT_MS must be an integer from 100 to 600000 (milliseconds)');
    expect(problemFor({ S3_OPERATION_TIMEOUT_MS: 'soon' })).toContain('S3_OPERATION_TIMEOUT_MS must be an integer');
    expect(problemFor({ DOWNLOAD_REDIRECT: 'true' })).toContain('DOWNLOAD_REDIRECT needs an object store (BLOB_STORE_URL=s3://BUCKET)');
    expect(problemFor({ DOWNLOAD_REDIRECT: 'true', BLOB_STORE_URL: 'file:' })).toContain('DOWNLOAD_REDIRECT');
  });
});

describe('the client address behind proxies', () => {
  it('takes the entry the trusted hops point at, never one the client could have written', async () => {
    const { clientAddress } = await import('../src/http/request-metadata.ts');
    expect(clientAddress('::ffff:10.0.0.2', null, 0)).toBe('10.0.0.2');
    expect(clientAddress('10.0.0.2', '1.1.1.1', 0)).toBe('10.0.0.2');
    expect(clientAddress('10.0.0.2', '6.6.6.6, 1.1.1.1', 1)).toBe('1.1.1.1');
    expect(clientAddress('10.0.0.2', '6.6.6.6, 1.1.1.1, 10.0.0.1', 2)).toBe('1.1.1.1');
    expect(clientAddress('10.0.0.2', '1.1.1.1', 5)).toBe('1.1.1.1');
    expect(clientAddress(undefined, null, 0)).toBeNull();
    expect(loadConfig({ TRUST_PROXY_HOPS: '2' }).trustedProxyHops).toBe(2);
    expect(() => loadConfig({ TRUST_PROXY_HOPS: '11' })).toThrow(/^Invalid configuration: TRUST_PROXY_HOPS must be an integer from 0 to 10/);
  });
});
