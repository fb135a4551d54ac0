// Wires the screens to the flow and starts (sign.js started the session's first read already).
// The signing screen is imported with this module, as the page's first screen is almost always
// it; the other screens (a host's, the code step, the messages) are imported when first shown,
// and fetched in the background once the first screen is up, so they cost a signer's first load
// nothing (issue 37, P11).
import { app, el, localeSelect } from './dom.js';
import { load, pickLocale, setLocale, setScreenRenderer, show } from './flow.js';
import { redrawOnResize, renderSigning } from './screens/signing.js';
import { state } from './store.js';

/** @import { Locale, MessageScreen } from './types.js' */

const screens = {
  host: () => import('./screens/host.js'),
  verify: () => import('./screens/verify.js'),
  messages: () => import('./screens/messages.js'),
};

/**
 * Renders the current screen once its module is here; a screen changed meanwhile is not drawn
 * (the later render draws its own). `data-screen` names the screen once it is drawn, not while
 * its module is on the line: whoever reads it (the tests, an embedding host's automation) then
 * finds that screen's content, not the previous one's.
 * @template T
 * @param {Promise<T>} loading
 * @param {(module: T) => void} draw
 */
function whenLoaded(loading, draw) {
  const screen = state.screen;
  loading.then(
    (module) => {
      if (state.screen !== screen) return;
      draw(module);
      document.body.dataset.screen = screen;
    },
    () => {
      // The module could not be fetched (the line dropped): said plainly, in the page's language,
      // and `data-screen` says what is shown (the error screen's text).
      if (state.screen !== screen) return;
      app.replaceChildren(el('section', { class: 'state', role: 'alert' }, el('h1', {}, state.t.errorTitle), el('p', {}, state.t.errorText)));
      document.body.dataset.screen = 'error';
    },
  );
}

const firstRead = state.firstRead;

setScreenRenderer(() => {
  const { screen } = state;
  if (screen === 'loading' || screen === 'signing') {
    if (screen === 'loading') app.replaceChildren(el('p', { class: 'loading' }, state.t.loading));
    else renderSigning();
    document.body.dataset.screen = screen;
  } else if (screen === 'host') whenLoaded(screens.host(), (module) => module.renderHost());
  else if (screen === 'hand-back') whenLoaded(screens.host(), (module) => module.renderHandBack());
  else if (screen === 'verify') whenLoaded(screens.verify(), (module) => module.renderVerify());
  else whenLoaded(screens.messages(), (module) => module.renderMessage(/** @type {MessageScreen} */ (screen)));
});

localeSelect.addEventListener('change', () => setLocale(/** @type {Locale} */ (localeSelect.value)));
redrawOnResize();

setLocale(pickLocale(state.embedding.locale));
// A one-use signing URL is opened (sign.js began it); one that cannot open a session here
// (used, expired, unknown) says so at once.
/** @type {Promise<void>} */ (state.opening).then(
  () => {
    if (state.linkGone) show(/** @type {const} */ ({ used: 'used', expired: 'link-expired', unknown: 'invalid' })[state.linkGone]);
    else void load();
  },
  () => show('error'),
);

// The other screens, fetched once the first is up (the browser keeps them for when they are shown),
// not while the session's read is still on the line.
// (Its failure is load's to show: both outcomes only schedule the fetch here.)
const fetchOtherScreens = () =>
  (window.requestIdleCallback ?? setTimeout)(() => {
    for (const loading of Object.values(screens)) loading().catch(() => {});
  });
firstRead?.then(fetchOtherScreens, fetchOtherScreens);
