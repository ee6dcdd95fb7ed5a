// cli-highlight for Pi's bundle: highlight.js registers its ~190 languages only when something is
// first highlighted (Pi's interactive rendering), never at a json or rpc start. The real module
// is bundled under the private name `pi-lazy:cli-highlight` (see bundle.py).
let real;
const load = () => (real ??= require("pi-lazy:cli-highlight"));
export const highlight = (...args) => load().highlight(...args);
export const supportsLanguage = (...args) => load().supportsLanguage(...args);
