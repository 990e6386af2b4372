import { deliverySecretKey } from "../../delivery/run";
import { rotateSecrets } from "../../delivery/rotate";
import { cliConfig, printJson, withDatabase } from "../database";

export async function rotate(opts: { json?: boolean }): Promise<void> {
  const config = cliConfig();
  const r = await withDatabase(config, true, async (db) => rotateSecrets(db.primary, await deliverySecretKey(config, db.primary)));
  if (opts.json) return printJson(r);
  console.log(`destination secrets under key ${r.kid}: ${r.rotated} rotated, ${r.current} already current, ${r.failed} failed to open`);
  for (const id of r.failedConnectionIds) console.log(`failed to open: connection ${id} (left as it is)`);
  const w = r.webhookSecrets;
  console.log(`webhook signing secrets: ${w.rotated} rotated, ${w.current} already current, ${w.failed} failed to open`);
  for (const id of w.failedEndpointIds) console.log(`failed to open: webhook endpoint ${id} (left as it is)`);
}
