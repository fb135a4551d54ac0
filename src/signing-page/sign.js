// The signing page's entry module (served by src/signing-page/plugin.ts, loaded by the page's one
// <script type="module">). Plain ES modules, no build step, checked by tsc through JSDoc
// (tsconfig.json here): the page reads the link's session through GraphQL (X-Signing-Token = the
// token in this page's URL), draws the documents with pdf.js, overlays this recipient's fields
// and submits values. This module wires the screens to the flow and starts; docs/architecture.md
// lists what each module holds.
import { app, el, localeSelect } from './dom.js';
import { load, pickLocale, setLocale, setScreenRenderer, show } from './flow.js';
import { renderHandBack, renderHost } from './screens/host.js';
import { renderMessage } from './screens/messages.js';
import { redrawOnResize, renderSigning } from './screens/signing.js';
import { renderVerify } from './screens/verify.js';
import { openSigningUrlSession, state } from './store.js';

/** @import { Locale } from './types.js' */

setScreenRenderer(() => {
  const { screen } = state;
  document.body.dataset.screen = screen;
  if (screen === 'loading') app.replaceChildren(el('p', { class: 'loading' }, state.t.loading));
  else if (screen === 'signing') renderSigning();
  else if (screen === 'host') renderHost();
  else if (screen === 'hand-back') renderHandBack();
  else if (screen === 'verify') renderVerify();
  else renderMessage(screen);
});

localeSelect.addEventListener('change', () => setLocale(/** @type {Locale} */ (localeSelect.value)));
redrawOnResize();

setLocale(pickLocale(state.embedding.locale));
// A one-use signing URL is opened now that the page runs; one that cannot open a session here
// (used, expired, unknown) says so at once.
openSigningUrlSession().then(
  () => {
    if (state.linkGone) show(/** @type {const} */ ({ used: 'used', expired: 'link-expired', unknown: 'invalid' })[state.linkGone]);
    else void load();
  },
  () => show('error'),
);
