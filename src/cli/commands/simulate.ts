// `gcs simulate` (the demo, issue 41): activity as a property system's sync would bring it. Each
// change writes the row and its event together (data/stores/simulation.ts), so /v1, the dashboard's
// aggregates, the stream and the webhooks all agree on what happened.
import type { Database } from "../../db/database";
import { firstPropertyGroup } from "../../data/stores/credentials";
import { advanceReservation, changeGuest, propertyGroupList, simulationTargets, type SimulationTargets } from "../../data/stores/simulation";
import { cliConfig, withDatabase } from "../database";
import { stopWithNpmParent } from "../npm-parent";

/** Rows picked at random to change; picked again when the stays run out of next statuses. */
const TARGETS = 200;

export async function simulate(opts: { group?: string; rate: number; seconds?: number }): Promise<void> {
  await withDatabase(cliConfig(), true, async (db) => {
    const group = await simulatedGroup(db, opts.group);
    let targets = await simulationTargets(db.primary, group, TARGETS);
    if (targets.guests.length === 0) throw new Error(`group ${group} has no guests to simulate activity for`);
    let stopped = false;
    const stop = () => (stopped = true);
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    stopWithNpmParent(stop);
    const until = opts.seconds ? `for ${opts.seconds} s` : "until Ctrl-C";
    console.log(`simulating ${opts.rate} changes a second in group ${group} ${until}: reservations move on, guests change`);
    const counts = { reservation: 0, guest_profile: 0 };
    const started = Date.now();
    const stopAt = opts.seconds ? started + opts.seconds * 1000 : Infinity;
    for (let n = 0; !stopped; n++) {
      // Change n is due n/rate seconds after the start: a slow statement is caught up, not dropped.
      const due = started + (n * 1000) / opts.rate;
      if (due >= stopAt) break;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      if (stopped) break;
      if (targets.reservations.length === 0 && n % TARGETS === 0) targets = await simulationTargets(db.primary, group, TARGETS);
      const changed = await changeOne(db, group, targets);
      counts[changed]++;
    }
    console.log(`changed ${counts.reservation} reservations and ${counts.guest_profile} guests, each with its event`);
  });
}

/** Half the changes move a stay on (while one can move), the others change a guest. */
async function changeOne(db: Database, group: string, targets: SimulationTargets): Promise<"reservation" | "guest_profile"> {
  if (Math.random() < 0.5) {
    while (targets.reservations.length > 0) {
      const i = Math.floor(Math.random() * targets.reservations.length);
      if (await advanceReservation(db.primary, group, targets.reservations[i])) return "reservation";
      targets.reservations.splice(i, 1); // checked out already (by another writer): it has no next status
    }
  }
  const pick = <T>(list: T[]) => list[Math.floor(Math.random() * list.length)];
  // A group whose guests have no city yet: they move to the same one.
  await changeGuest(db.primary, group, pick(targets.guests), targets.cities.length > 0 ? pick(targets.cities) : "Lisbon");
  return "guest_profile";
}

/**
 * The named group; else the only one; else, on the embedded database, the demo's group (the one its
 * start banner names, cli/demo.ts), which holds the demo key. A server with several groups needs --group.
 */
async function simulatedGroup(db: Database, given?: string): Promise<string> {
  const groups = await propertyGroupList(db.primary);
  if (given) {
    if (!groups.some((g) => g.id === given.toLowerCase())) throw new Error(`no property group ${given} (see the start banner or gcs keys list)`);
    return given.toLowerCase();
  }
  if (groups.length === 0) throw new Error("the database holds no property group: load the test tenants with gcs fixtures --out manifest.json");
  if (groups.length === 1) return groups[0].id;
  if (db.embedded) return (await firstPropertyGroup(db.primary)).id;
  throw new Error(`--group is required when the database holds more than one property group: ${groups.map((g) => `${g.id} (${g.name})`).join(", ")}`);
}
