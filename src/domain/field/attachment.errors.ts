import { DomainError } from '../../shared/errors.ts';

/*
 * The refusals of the attachment field type (issue 32, docs/fields.md#attachment). Each leaves
 * nothing behind: no row, no object in the store (an upload is staged locally and stored only
 * once it passed every check).
 */

function mebibytes(bytes: number): string {
  return `${Math.round((bytes / (1024 * 1024)) * 100) / 100} MiB`;
}

/** `Attachment.TooLarge` (413): the file is over the field's `maxBytes`; refused while it streamed, nothing stored. */
export class AttachmentTooLargeError extends DomainError {
  constructor(limitBytes: number) {
    super('Attachment.TooLarge', `The file is larger than this field allows (${limitBytes} bytes, ${mebibytes(limitBytes)}); nothing was stored.`, { limitBytes });
  }
}

/** `Attachment.TooManyFiles` (422): the recipient already uploaded the field's `maxFiles` files. */
export class AttachmentTooManyFilesError extends DomainError {
  constructor(fieldId: string, maxFiles: number) {
    super(
      'Attachment.TooManyFiles',
      `This field takes at most ${maxFiles} file${maxFiles === 1 ? '' : 's'} and you have uploaded that many; remove one (removeSigningAttachment) first. Nothing was stored.`,
      { fieldId, maxFiles },
    );
  }
}

/** `Attachment.UnsupportedType` (415): by its bytes the file is not a PDF, PNG or JPEG, whatever its name says. */
export class AttachmentUnsupportedTypeError extends DomainError {
  constructor() {
    super('Attachment.UnsupportedType', 'The file is not a PDF, PNG or JPEG (judged from its content, not its name or declared type); nothing was stored.');
  }
}

/** `Attachment.TypeNotAccepted` (415): the file's type (from its bytes) is not one of the field's `accept`. */
export class AttachmentTypeNotAcceptedError extends DomainError {
  constructor(contentType: string, accept: readonly string[]) {
    super('Attachment.TypeNotAccepted', `The file is ${contentType} (judged from its content, not its name); this field accepts ${accept.join(', ')}. Nothing was stored.`, {
      contentType,
      accept: [...accept],
    });
  }
}

/** `Attachment.ImageTooLarge` (422): the image's header claims more pixels than an attachment may have (a decompression bomb, or a huge scan). */
export class AttachmentImageTooLargeError extends DomainError {
  constructor(width: number, height: number, limits: { maxSide: number; maxPixels: number }) {
    super(
      'Attachment.ImageTooLarge',
      `The image is ${width} × ${height} pixels; an attachment may be at most ${limits.maxSide} pixels wide and high and ${limits.maxPixels} pixels in all. Nothing was stored.`,
      {
        width,
        height,
        maxSide: limits.maxSide,
        maxPixels: limits.maxPixels,
      },
    );
  }
}

/** `Attachment.InvalidImage` (422): it starts like a PNG or JPEG but is damaged or cut short; `context.detail`. */
export class AttachmentInvalidImageError extends DomainError {
  constructor(contentType: string, detail: string) {
    super('Attachment.InvalidImage', `The ${contentType === 'image/png' ? 'PNG' : 'JPEG'} image is damaged or incomplete (${detail}); nothing was stored.`, { contentType, detail });
  }
}

/**
 * `Attachment.InvalidPdf` (422): the PDF failed the inspection every document passes (damaged,
 * encrypted, too costly to read); `context.reason` (`invalid`, `encrypted`, `too_complex`,
 * `inspection_limit`), `context.detail` where there is one.
 */
export class AttachmentInvalidPdfError extends DomainError {
  constructor(reason: 'invalid' | 'encrypted' | 'too_complex' | 'inspection_limit', detail?: string) {
    const why = {
      invalid: 'is damaged or incomplete',
      encrypted: 'is encrypted or password-protected',
      too_complex: 'would cost more to read than a document may',
      inspection_limit: 'took more time or memory to read than a document may',
    }[reason];
    super('Attachment.InvalidPdf', `The PDF ${why}; nothing was stored. Upload an unprotected, re-saved copy.`, { reason, ...(detail ? { detail } : {}) });
  }
}

/** `Attachment.UploadIncomplete` (400): the multipart body broke off before the whole file arrived. */
export class AttachmentUploadIncompleteError extends DomainError {
  constructor() {
    super('Attachment.UploadIncomplete', 'The upload ended before the whole file arrived; nothing was stored. Send it again.');
  }
}

/** `Attachment.NotAttachmentField` (422): `uploadSigningAttachment` for a field of another type. */
export class AttachmentNotAttachmentFieldError extends DomainError {
  constructor(fieldId: string, type: string) {
    super('Attachment.NotAttachmentField', `The field is of type ${type}; files can only be uploaded to attachment fields.`, { fieldId, type });
  }
}

/**
 * `Attachment.UnknownFile` (422): a submitted attachment value (or `removeSigningAttachment`)
 * names a file this recipient did not upload for this field of this envelope: another
 * recipient's, another field's, another envelope's, or none. `context.fileIds`.
 */
export class AttachmentUnknownFileError extends DomainError {
  constructor(fileIds: string[]) {
    super('Attachment.UnknownFile', 'These files were not uploaded by you for this field: ' + fileIds.join(', ') + '. Upload them with uploadSigningAttachment first.', { fileIds });
  }
}

/** `Attachment.NotPrefillable` (422): a sender (field write, template, bulk-send CSV) gave an attachment field a value; only its signer uploads files. */
export class AttachmentNotPrefillableError extends DomainError {
  constructor(path: string) {
    super('Attachment.NotPrefillable', 'An attachment field cannot be pre-filled: only its signer uploads its files. Leave its value out.', { path });
  }
}

/** `Attachment.NotFound` (404): no attachment with this id on this envelope (or the envelope is another team's, or the file was never submitted). */
export class AttachmentNotFoundError extends DomainError {
  constructor(fileId: string) {
    super('Attachment.NotFound', 'No attachment with this id on this envelope.', { fileId });
  }
}
