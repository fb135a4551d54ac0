import { Migration } from '@mikro-orm/migrations';

/**
 * The W3C `traceparent` of the span that enqueued a message (null with tracing off, or when no
 * span was active): the worker continues that trace when it runs the job (docs/decisions.md, "Traces").
 */
export class Migration20261126130000_outbox_trace_context extends Migration {
  override name = 'Migration20261126130000_outbox_trace_context';

  override up(): void | Promise<void> {
    this.addSql(`alter table "outbox_message" add "trace_parent" varchar(100) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "outbox_message" drop column "trace_parent";`);
  }
}
