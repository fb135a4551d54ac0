import type { PdfInspection, PdfInspectionFailureReason } from './pdf-inspector.ts';

/** What the pool sends a PDF worker: one task at a time. Rendering and sealing will add kinds. */
export type PdfTask = { id: number; kind: 'inspect'; path: string };

/** What a worker answers, always with the task's id. */
export type PdfTaskAnswer =
  | { id: number; outcome: 'done'; inspection: PdfInspection }
  | { id: number; outcome: 'refused'; reason: PdfInspectionFailureReason; detail: string }
  | { id: number; outcome: 'failed'; message: string; code: string | undefined };
