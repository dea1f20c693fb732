/**
 * Secrets never leave the server: store URLs and store error messages pass through here
 * before they are logged, served as JSON or shown on the page.
 */
import { redactUrl } from '../stores/kit/url.js';

const USERINFO = /\b([a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\s:@/"'<>]*):[^\s@/"'<>]*@/g;
const SECRET_PARAM = /([?&;](?:password|passwd|pass|pwd|secret|token|key|auth)=)[^&\s"'<>]*/gi;

/**
 * scrubSecrets hides passwords in any URLs inside `text` (userinfo passwords and secret-looking
 * query parameters), wherever they appear — e.g. inside an SDK's error message.
 */
export function scrubSecrets(text: string): string {
  return redactUrl(String(text)).replace(USERINFO, '$1:***@').replace(SECRET_PARAM, '$1***');
}
