import { envelopeOwner } from './envelope-owner.ts';
import type { ContentOwner } from './owner.ts';
import type { OwnerKind } from './owner-ref.ts';
import { templateOwner } from './template-owner.ts';

const OWNERS: Record<OwnerKind, ContentOwner> = { envelope: envelopeOwner, template: templateOwner };

/** The adapter of an owner kind (owner.ts): what the content rules need to know of it. */
export function contentOwner(kind: OwnerKind): ContentOwner {
  return OWNERS[kind];
}
