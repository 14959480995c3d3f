// `node --import ./test/helpers/record-modules.mjs ...`: appends the URL of every ES module the
// process loads (static and dynamic imports alike) to the file $VMAF_TEST_MODULES_OUT, one a
// line, through a module-customization hook (node:module register), which sees every load.
import { register } from 'node:module';

const hooks = `
import { appendFileSync } from 'node:fs';
const out = process.env.VMAF_TEST_MODULES_OUT;
export async function load(url, context, next) {
  if (out) appendFileSync(out, url + '\\n');
  return next(url, context);
}
`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
