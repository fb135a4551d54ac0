import { MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { createOrmConfig } from '../mikro-orm.config.ts';

const expectedTables = [
  'agent',
  'api_key',
  'approval',
  'audit_event',
  'bulk_send',
  'bulk_send_row',
  'contact',
  'contact_group',
  'contact_group_member',
  'document',
  'envelope',
  'field',
  'field_attachment',
  'field_view',
  'idempotency_record',
  'outbox_message',
  'phone_message',
  'public_link',
  'public_link_visit',
  'rate_limit',
  'recipient',
  'sandbox_clock',
  'shared_secret_fingerprint',
  'signer_signature',
  'signing_otp',
  'signing_token',
  'signing_url',
  'team',
  'team_user',
  'template',
  'template_recipient',
  'webhook_attempt',
  'webhook_delivery',
  'webhook_endpoint',
  'workspace',
];

describe.skipIf(inject('databaseKind') === 'embedded')('migrations', () => {
  it('apply to an empty database, match the entities, and roll back cleanly', async () => {
    const serverUrl = new URL(inject('databaseUrl'));
    const databaseName = `envelope_migrations_${Date.now()}_${process.pid}`;
    const adminUrl = new URL(serverUrl);
    adminUrl.pathname = '/postgres';
    const admin = new pg.Client({ connectionString: adminUrl.toString() });
    await admin.connect();
    await admin.query(`create database ${databaseName}`);
    const url = new URL(serverUrl);
    url.pathname = `/${databaseName}`;
    const orm = await MikroORM.init(createOrmConfig({ clientUrl: url.toString(), poolMax: 2 }));
    try {
      const applied = await orm.migrator.up();
      expect(applied.length).toBeGreaterThan(0);
      const tables = await orm.em
        .fork()
        .getConnection()
        .execute<{ table_name: string }[]>(`select table_name from information_schema.tables where table_schema = 'public' and table_name <> 'mikro_orm_migrations' order by table_name`);
      expect(tables.map((row) => row.table_name)).toEqual(expectedTables);
      // The committed migrations describe the entities exactly: nothing left to generate.
      expect(await orm.schema.getUpdateSchemaSQL({ wrap: false })).toBe('');
      await orm.migrator.down({ to: 0 });
      const remaining = await orm.em
        .fork()
        .getConnection()
        .execute<{ count: string }[]>(`select count(*) from information_schema.tables where table_schema = 'public' and table_name <> 'mikro_orm_migrations'`);
      expect(Number(remaining[0].count)).toBe(0);
    } finally {
      await orm.close(true);
      await admin.query(`drop database if exists ${databaseName} with (force)`);
      await admin.end();
    }
  });
});
