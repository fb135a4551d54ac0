#!/bin/sh
# Makes the text-tag fixtures of test/place-fields.test.ts with LibreOffice (Debian's
# libreoffice-writer-nogui; needed only to regenerate them, never by the tests or CI):
#   1. writes flat ODF sources (.fodt) for an A4 and a US Letter document carrying text tags,
#      some of them split across differently formatted runs, as word processors write them;
#   2. converts them to the committed sources: tags-a4.odt and tags-letter.docx;
#   3. converts those to PDF with `soffice --headless --convert-to pdf`;
#   4. makes tags-rotated.pdf: the A4 PDF with its page turned by /Rotate 90 (qpdf).
# Run from the repository root: sh scripts/make-tag-fixtures.sh
set -eu
out=test/fixtures/tags
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

fodt() { # name width height body
  cat > "$work/$1.fodt" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
  xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"
  xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
  xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
  office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
 <office:font-face-decls>
  <style:font-face style:name="Liberation Serif" svg:font-family="'Liberation Serif'" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"/>
 </office:font-face-decls>
 <office:styles>
  <style:default-style style:family="paragraph">
   <style:text-properties style:font-name="Liberation Serif" fo:font-size="12pt"/>
  </style:default-style>
 </office:styles>
 <office:automatic-styles>
  <style:page-layout style:name="pm1">
   <style:page-layout-properties fo:page-width="$2" fo:page-height="$3" fo:margin-top="2cm" fo:margin-bottom="2cm" fo:margin-left="2cm" fo:margin-right="2cm"/>
  </style:page-layout>
  <style:style style:name="B" style:family="text"><style:text-properties fo:font-weight="bold"/></style:style>
  <style:style style:name="I" style:family="text"><style:text-properties fo:font-style="italic"/></style:style>
  <style:style style:name="Big" style:family="paragraph"><style:text-properties fo:font-size="16pt"/></style:style>
 </office:automatic-styles>
 <office:master-styles>
  <style:master-page style:name="Standard" style:page-layout-name="pm1"/>
 </office:master-styles>
 <office:body><office:text>
$4
 </office:text></office:body>
</office:document>
XML
}

body='  <text:p>Purchase agreement between the buyer and the seller.</text:p>
  <text:p>Buyer signs here: {{sig;role=buyer;id=buyer-signature}}</text:p>
  <text:p>Full name: {{text;role=buyer;id=buyer-name;required=true;label=Full name;w=180}}</text:p>
  <text:p>I have read the terms {{check;role=<text:span text:style-name="B">buyer</text:span>;id=terms}} and agree.</text:p>
  <text:p text:style-name="Big">Seller: <text:span text:style-name="I">{{bio;</text:span>role=seller;h=40}}</text:p>
  <text:p>Decision: {{choice;role=seller;id=decision}}</text:p>
  <text:p>Unknown: {{stamp;role=seller}}</text:p>
  <text:p>Nobody: {{text;role=notary;id=notary-note}}</text:p>'

fodt tags-a4 21cm 29.7cm "$body"
fodt tags-letter 8.5in 11in "$body"

(cd "$work" && soffice --headless --convert-to odt tags-a4.fodt >/dev/null && soffice --headless --convert-to docx tags-letter.fodt >/dev/null)
cp "$work/tags-a4.odt" "$work/tags-letter.docx" "$out/"
(cd "$work" && soffice --headless --convert-to pdf tags-a4.odt >/dev/null && soffice --headless --convert-to pdf tags-letter.docx >/dev/null)
cp "$work/tags-a4.pdf" "$work/tags-letter.pdf" "$out/"
qpdf "$out/tags-a4.pdf" --rotate=+90:1 "$out/tags-rotated.pdf"
ls -l "$out"
