/**
 * The PDF's own form (AcroForm): its text, checkbox, radio group and signature fields with their
 * widgets, read for import as fields, and removed from the file once imported, so that only our
 * drawing of the value remains (a value is never drawn twice). Runs in a PDF worker thread
 * (pdf/worker.ts); imports only pdf-lib and the modules beside it.
 */
import { PDFCheckBox, PDFDict, PDFDocument, PDFDropdown, PDFName, PDFOptionList, PDFRadioGroup, PDFRef, PDFSignature, PDFTextField } from 'pdf-lib';
import { visibleBoxOf } from './render.ts';
import { type DisplayedBox, toDisplayed } from './text-tags.ts';

/** `choice`: a combo box or a single-select list box (issue 32: imported as a dropdown). */
export type FormFieldKind = 'text' | 'checkbox' | 'radio' | 'choice' | 'signature' | 'other';

export type FoundFormField = {
  name: string;
  kind: FormFieldKind;
  required: boolean;
  readOnly: boolean;
  /** text: the text; checkbox: checked; radio: the selected export value; choice: the selected option. */
  value: string | boolean | null;
  /** Radio groups: their export values; choices: their options. */
  options: string[];
  multiline: boolean;
  maxLength: number | null;
  /** Each widget's box on its page, in points from the displayed top-left. */
  widgets: { page: number; box: DisplayedBox }[];
};

/** Where each widget annotation sits: the page whose /Annots name it. */
function widgetPages(pdf: PDFDocument): Map<string, number> {
  const pages = new Map<string, number>();
  pdf.getPages().forEach((page, index) => {
    const annots = page.node.Annots();
    if (annots === undefined) return;
    for (let item = 0; item < annots.size(); item++) {
      const ref = annots.get(item);
      if (ref instanceof PDFRef) pages.set(ref.toString(), index);
    }
  });
  return pages;
}

/** Every field of the document's form, with its widgets as displayed. */
export function readFormFields(pdf: PDFDocument): FoundFormField[] {
  const form = pdf.getForm();
  const pageOfWidget = widgetPages(pdf);
  const pages = pdf.getPages();
  return form.getFields().map((field) => {
    const kind: FormFieldKind =
      field instanceof PDFTextField
        ? 'text'
        : field instanceof PDFCheckBox
          ? 'checkbox'
          : field instanceof PDFRadioGroup
            ? 'radio'
            : field instanceof PDFDropdown || (field instanceof PDFOptionList && !field.acroField.hasFlag(1 << 21))
              ? 'choice'
              : field instanceof PDFSignature
                ? 'signature'
                : 'other';
    const widgets: FoundFormField['widgets'] = [];
    for (const widget of field.acroField.getWidgets()) {
      const ref = pdf.context.getObjectRef(widget.dict);
      let page = ref === undefined ? undefined : pageOfWidget.get(ref.toString());
      if (page === undefined) {
        const pageRef = widget.P();
        page = pageRef === undefined ? undefined : pages.findIndex((candidate) => candidate.ref === pageRef);
      }
      if (page === undefined || page < 0) continue;
      const rect = widget.getRectangle();
      const view = visibleBoxOf(pages[page]!);
      const corners = [toDisplayed(view, rect.x, rect.y), toDisplayed(view, rect.x + rect.width, rect.y + rect.height)];
      const x = Math.min(corners[0]![0], corners[1]![0]);
      const y = Math.min(corners[0]![1], corners[1]![1]);
      widgets.push({ page, box: { x, y, width: Math.abs(corners[0]![0] - corners[1]![0]), height: Math.abs(corners[0]![1] - corners[1]![1]) } });
    }
    let value: FoundFormField['value'] = null;
    let options: string[] = [];
    let multiline = false;
    let maxLength: number | null = null;
    if (field instanceof PDFTextField) {
      value = field.getText() ?? null;
      multiline = field.isMultiline();
      maxLength = field.getMaxLength() ?? null;
    } else if (field instanceof PDFCheckBox) {
      value = field.isChecked();
    } else if (field instanceof PDFRadioGroup) {
      value = field.getSelected() ?? null;
      options = field.getOptions();
    } else if (kind === 'choice' && (field instanceof PDFDropdown || field instanceof PDFOptionList)) {
      // A multiple-selection list (flag bit 22, MultiSelect) stays 'other': a dropdown selects one.
      value = field.getSelected()[0] ?? null;
      options = field.getOptions();
    }
    return { name: field.getName(), kind, required: field.isRequired(), readOnly: field.isReadOnly(), value, options, multiline, maxLength, widgets };
  });
}

/**
 * Removes the named fields, their widgets and their appearances from the document (in place).
 * pdf-lib's own `removeField` needs every widget to have an appearance, which a form need not
 * have (an empty signature field has none): the references are removed here directly.
 */
export function removeFormFields(pdf: PDFDocument, names: string[]): void {
  const form = pdf.getForm();
  const wanted = new Set(names);
  const pages = pdf.getPages();
  for (const field of form.getFields()) {
    if (!wanted.has(field.getName())) continue;
    for (const widget of field.acroField.getWidgets()) {
      const ref = pdf.context.getObjectRef(widget.dict);
      if (ref === undefined) continue;
      for (const page of pages) page.node.removeAnnot(ref);
      pdf.context.delete(ref);
    }
    form.acroForm.removeField(field.acroField);
    if (field.ref !== undefined) pdf.context.delete(field.ref);
  }
  // Without fields left, the form goes: no viewer then offers to fill in what we now draw.
  if (form.acroForm.getAllFields().length === 0) pdf.catalog.delete(PDFName.of('AcroForm'));
  else pdf.catalog.lookupMaybe(PDFName.of('AcroForm'), PDFDict)?.delete(PDFName.of('NeedAppearances'));
}
