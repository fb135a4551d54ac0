/**
 * Create a draft envelope from a template for one signer, checking it with a dry run first.
 *
 *   ENVELOPE_API_KEY=… node examples/create-from-template.ts TEMPLATE_ID "Ada Lovelace" ada@example.com
 */
import { graphql as gql } from './generated/graphql/index.ts';
import { graphql, report } from './shared.ts';

const Template = gql(`
  query ExampleTemplate($id: ID!) {
    template(id: $id) { id name recipients { id identifier roleName type fixed } }
  }
`);

const Jumpstart = gql(`
  mutation ExampleJumpstart($templateId: ID!, $input: JumpstartEnvelopeInput!, $dryRun: Boolean) {
    jumpstartEnvelope(templateId: $templateId, input: $input, dryRun: $dryRun) {
      id name status
      recipients { identifier roleName agents { info { name email } } }
      dryRun { wouldSend problems { name description } }
    }
  }
`);

const [templateId, name, email] = process.argv.slice(2);
if (!templateId || !name || !email) {
  console.error('usage: node examples/create-from-template.ts TEMPLATE_ID NAME EMAIL');
  process.exit(1);
}

const { template } = await graphql(Template, { id: templateId });
if (!template) throw new Error(`no template ${templateId}`);
// The first role that takes a person from the request (a fixed role brings its own).
const role = template.recipients.find((recipient) => !recipient.fixed);
if (!role) throw new Error('the template has no role to fill');
const input = { name: `${template.name}: ${name}`, recipients: [{ identifier: role.identifier, agents: [{ info: { name, email } }] }] };

// The dry run answers the envelope the jumpstart would make and whether it could be sent as it is.
const preview = await graphql(Jumpstart, { templateId, input, dryRun: true });
report('checked', { wouldSend: preview.jumpstartEnvelope?.dryRun?.wouldSend, problems: preview.jumpstartEnvelope?.dryRun?.problems.map((problem) => problem.name) });

const { jumpstartEnvelope: envelope } = await graphql(Jumpstart, { templateId, input, dryRun: false });
report('created', { envelopeId: envelope?.id, name: envelope?.name, status: envelope?.status, role: role.identifier });
