// The signing page's entry module (served by src/signing-page/plugin.ts, loaded by the page's one
// <script type="module">). Plain ES modules, no build step, checked by tsc through JSDoc
// (tsconfig.json here): the page reads the link's session through GraphQL (X-Signing-Token = the
// token in this page's URL), overlays this recipient's fields on the documents' pages (drawn with
// pdf.js as they come near the screen) and submits values; docs/architecture.md lists what each
// module holds.
//
// This module only starts the session's first read (a one-use signing URL is opened first), so
// that it travels while the browser is still fetching the screens' modules (preloaded by the
// HTML), then hands over to start.js, which wires the screens. On a slow line this saves the
// request's round trip before the first field works (issue 37, P11).
import { readSession } from './api.js';
import { openSigningUrlSession, state } from './store.js';

state.opening = openSigningUrlSession();
state.firstRead = state.opening.then(() => (state.linkGone ? null : readSession()));
// Whoever takes the first read handles its failure (flow.js's load); this only keeps an unread one quiet.
state.firstRead.catch(() => {});
await import('./start.js');
