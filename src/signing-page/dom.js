// Building the page's elements: el() and the two elements of the HTML every screen writes into.

/** @typedef {Node | string | null | undefined | false} Child */
/** @typedef {string | number | boolean | null | undefined | ((event: Event) => unknown)} Attribute */

/** The main region every screen replaces (the page's HTML has it: plugin.ts). */
export const app = /** @type {HTMLElement} */ (document.getElementById('app'));

/** The language picker in the header. */
export const localeSelect = /** @type {HTMLSelectElement} */ (document.getElementById('locale'));

/**
 * An element with attributes (`class`; `on…` adds that event's listener; true is an empty
 * attribute; false, null and undefined leave it out) and children (arrays one level deep).
 * @template {keyof HTMLElementTagNameMap} Tag
 * @param {Tag} tag
 * @param {Record<string, Attribute>} [attributes]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[Tag]}
 */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') node.className = String(value);
    else if (name.startsWith('on')) node.addEventListener(name.slice(2), /** @type {EventListener} */ (value));
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) node.append(child);
  return node;
}

/**
 * A field's box on the page, by the field's identifier.
 * @param {string} identifier
 * @returns {HTMLElement | null}
 */
export function fieldBox(identifier) {
  return app.querySelector(`[data-field="${CSS.escape(identifier)}"]`);
}
