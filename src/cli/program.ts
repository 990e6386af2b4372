// The gcs command line: every command, its options, help and example, in one place. Parsing needs
// nothing else: each action loads its own modules when it runs (require, which behaves the same in the
// TypeScript source under tsx and in dist/), so `gcs --help` stays fast and small, and configuration
// is read only by the commands that use it, after parsing (a bad PORT never hides help).
import { Command, Option } from "commander";
import { ALL_SCOPES } from "../auth/scopes";
import { integer, integerBetween, nonEmpty, scopeList, uuid } from "./args";

/** `gcs simulate`'s bounds: one statement per change; a day at most (said here, where help is built without loading the command). */
const SIMULATE_MAX_RATE = 100;
const SIMULATE_MAX_SECONDS = 86_400;

type Commands = {
  serve: typeof import("./commands/serve");
  deliver: typeof import("./commands/deliver");
  migrate: typeof import("./commands/migrate");
  fixtures: typeof import("./commands/fixtures");
  keys: typeof import("./commands/keys");
  partners: typeof import("./commands/partners");
  secrets: typeof import("./commands/secrets");
  connectors: typeof import("./commands/connectors");
  events: typeof import("./commands/events");
  simulate: typeof import("./commands/simulate");
  rollups: typeof import("./commands/rollups");
  demo: typeof import("./demo");
};
/* eslint-disable @typescript-eslint/no-require-imports */
const load = {
  serve: () => require("./commands/serve") as Commands["serve"],
  deliver: () => require("./commands/deliver") as Commands["deliver"],
  migrate: () => require("./commands/migrate") as Commands["migrate"],
  fixtures: () => require("./commands/fixtures") as Commands["fixtures"],
  keys: () => require("./commands/keys") as Commands["keys"],
  partners: () => require("./commands/partners") as Commands["partners"],
  secrets: () => require("./commands/secrets") as Commands["secrets"],
  connectors: () => require("./commands/connectors") as Commands["connectors"],
  events: () => require("./commands/events") as Commands["events"],
  simulate: () => require("./commands/simulate") as Commands["simulate"],
  rollups: () => require("./commands/rollups") as Commands["rollups"],
  demo: () => require("./demo") as Commands["demo"],
};
/* eslint-enable @typescript-eslint/no-require-imports */

export const EXIT_CODES = `
Exit codes: 0 done, 1 the command failed (database, unknown group, wrong secret…), 2 usage error.
Configuration comes from the environment (DATABASE_URL, PORT, GCS_DATA_DIR…; see docs/operations.md).
Without DATABASE_URL every command uses the embedded database in GCS_DATA_DIR (default .data/pglite):
while \`gcs serve\` runs there, the other commands go through it.`;

/** Run by `gcs serve` in a child process on a data directory not ready to serve (embedded/server.ts). */
export const PREPARE_EMBEDDED_COMMAND = "prepare-embedded";

const example = (...lines: string[]) => `\nExample${lines.length > 1 ? "s" : ""}:\n${lines.map((l) => `  $ ${l}`).join("\n")}`;
const json = () => new Option("--json", "print the result as one line of JSON");
const scopesHelp = () => `\nScopes: ${ALL_SCOPES.join(" ")}`;

export function buildProgram(version: string): Command {
  const program = new Command("gcs")
    .description("The Guest Context Service: run the API and manage its database and credentials.")
    .version(version, "-V, --version", "print the version")
    .helpOption("-h, --help", "show help")
    .helpCommand("help [command]", "show help for a command")
    // Settings set here are inherited by every command added below.
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(`gcs: ${text.replace(/^error: /, "")}`) })
    .showHelpAfterError("(add --help for usage)")
    .showSuggestionAfterError()
    .addHelpText("after", EXIT_CODES);

  program
    .command("serve")
    .description("run the API on PORT (DATABASE_URL; the embedded database when it is unset)")
    .addHelpText("after", example("gcs serve", "PORT=8080 DATABASE_URL=postgresql://gcs@db/gcs gcs serve"))
    .action(() => load.serve().serve());

  program
    .command(`${PREPARE_EMBEDDED_COMMAND} <dataDir>`, { hidden: true })
    .description("prepare an embedded data directory for gcs serve (run by gcs serve itself)")
    .action((dataDir: string) => load.demo().prepareEmbeddedDemo(dataDir));

  program
    .command("deliver")
    .description("run only the destination delivery and webhook workers")
    .option("--once", "one pass over the due deliveries and webhook endpoints, then exit")
    .addHelpText("after", example("gcs deliver --once"))
    .action((opts: { once?: boolean }) => load.deliver().deliver(opts));

  program
    .command("migrate")
    .description("apply pending database migrations (also done at every start)")
    .addOption(json())
    .addHelpText("after", example("gcs migrate --json"))
    .action((opts: { json?: boolean }) => load.migrate().migrate(opts));

  program
    .command("fixtures")
    .description("replace the fixture tenants and write their manifest (with credentials) to a file")
    .requiredOption("--out <file>", "where to write the manifest (JSON, mode 600)")
    .option("--seed <n>", "seed: the same seed gives the same ids and rows", integer("--seed", 0), 1)
    .option("--guests <n>", "guests per property group", "300")
    .addHelpText("after", example("gcs fixtures --out manifest.json", "gcs fixtures --out big.json --seed 7 --guests 1000000"))
    .action((opts: { out: string; seed: number; guests: string }) => load.fixtures().fixtures(opts));

  const keys = program.command("keys").description("personal API keys: create, list, revoke");
  keys
    .command("create")
    .description("create an API key for a property group (the key is shown once)")
    .requiredOption("--group <uuid>", "the property group (its id is in the start banner and `gcs keys list`)", uuid("--group"))
    .requiredOption("--name <name>", "a name to recognise the key by", nonEmpty("--name"))
    .requiredOption("--scopes <s1,s2>", "comma-separated scopes", scopeList)
    .option("--property <uuid>", "pin the key to one property of the group", uuid("--property"))
    .addOption(json())
    .addHelpText("after", example(`gcs keys create --group 0b6f…e1 --name "CRM sync" --scopes read:guests,read:reservations`))
    .addHelpText("after", scopesHelp)
    .action((opts: { group: string; name: string; scopes: string[]; property?: string; json?: boolean }) => load.keys().create(opts));
  keys
    .command("list")
    .description("list API keys (never their secrets)")
    .option("--group <uuid>", "only this property group's keys", uuid("--group"))
    .addOption(json())
    .addHelpText("after", example("gcs keys list --group 0b6f…e1 --json"))
    .action((opts: { group?: string; json?: boolean }) => load.keys().list(opts));
  keys
    .command("revoke")
    .description("revoke an API key at once")
    .argument("<key-id>", "the key's id (from `gcs keys create` or `gcs keys list`)", uuid("<key-id>"))
    .addOption(json())
    .addHelpText("after", example("gcs keys revoke 5d2c…9a"))
    .action((id: string, opts: { json?: boolean }) => load.keys().revoke(id, opts));

  const partners = program.command("partners").description("partner (client-credentials) clients: create, issue a token");
  partners
    .command("create")
    .description("create a partner client for a property group (the secret is shown once)")
    .requiredOption("--group <uuid>", "the property group", uuid("--group"))
    .requiredOption("--name <name>", "the partner's name", nonEmpty("--name"))
    .requiredOption("--scopes <s1,s2>", "comma-separated scopes", scopeList)
    .addOption(json())
    .addHelpText("after", example(`gcs partners create --group 0b6f…e1 --name "Agent Co" --scopes read:guests`))
    .addHelpText("after", scopesHelp)
    .action((opts: { group: string; name: string; scopes: string[]; json?: boolean }) => load.partners().create(opts));
  partners
    .command("token")
    .description("exchange a partner's client id and secret for an access token")
    .requiredOption("--client-id <id>", "the partner's client id")
    .requiredOption("--client-secret <secret>", "the partner's client secret")
    .option("--ttl <seconds>", "lifetime of the token", integer("--ttl", 60), 3600)
    .addOption(json())
    .addHelpText("after", example("gcs partners token --client-id partner_4f… --client-secret gcsps_… --ttl 600 --json"))
    .action((opts: { clientId: string; clientSecret: string; ttl: number; json?: boolean }) => load.partners().token(opts));

  const secrets = program.command("secrets").description("destination connection secrets");
  secrets
    .command("rotate")
    .description("re-seal destination secrets under GCS_DELIVERY_SECRET_KEY (prints counts, never secrets)")
    .addOption(json())
    .addHelpText("after", example("GCS_DELIVERY_SECRET_KEY=… GCS_DELIVERY_SECRET_KEY_PREVIOUS=… gcs secrets rotate --json"))
    .action((opts: { json?: boolean }) => load.secrets().rotate(opts));

  const connectors = program.command("connectors").description("MCP connectors: the AI clients people approved on the consent page");
  connectors
    .command("list")
    .description("list connectors (client, group, scopes, approving key; never a token)")
    .option("--group <uuid>", "only this property group's connectors", uuid("--group"))
    .addOption(json())
    .addHelpText("after", example("gcs connectors list --group 0b6f…e1 --json"))
    .action((opts: { group?: string; json?: boolean }) => load.connectors().list(opts));
  connectors
    .command("revoke")
    .description("end a connector at once: its access and refresh tokens stop working")
    .argument("<connector-id>", "the connector's id (from `gcs connectors list`)", uuid("<connector-id>"))
    .addOption(json())
    .addHelpText("after", example("gcs connectors revoke 7a41…c3"))
    .action((id: string, opts: { json?: boolean }) => load.connectors().revoke(id, opts));

  // Issue 29: adding events to the log (backfill, tests) and making the demo move.
  const events = program.command("events").description("the event log: append events (NDJSON)");
  events
    .command("append")
    .description("append events from NDJSON (one event a line; every line is validated first, and one bad line appends nothing)")
    .option("--group <uuid>", "the property group (default: the only one)", uuid("--group"))
    .option("--file <path>", "read this file instead of stdin")
    .addOption(json())
    .addHelpText("after", example(`echo '{"entity_type":"guest_profile","entity_id":"3f1c…","operation":"update","delta":{"vip_code":"VIP2"}}' | gcs events append --group 0b6f…e1`))
    .action((opts: { group?: string; file?: string; json?: boolean }) => load.events().append(opts));
  program
    .command("simulate")
    .description("change reservations and guests of a group as a property system would, each change with its event (the demo)")
    .option("--group <uuid>", "the property group (default: the only one; on the embedded database, the demo's)", uuid("--group"))
    .option("--rate <n>", `changes per second, 1 to ${SIMULATE_MAX_RATE}`, integerBetween("--rate", 1, SIMULATE_MAX_RATE), 5)
    .option("--seconds <n>", `stop after this many seconds, 1 to ${SIMULATE_MAX_SECONDS} (default: until Ctrl-C)`, integerBetween("--seconds", 1, SIMULATE_MAX_SECONDS))
    .addHelpText("after", example("gcs simulate --rate 5", "gcs simulate --group 0b6f…e1 --rate 20 --seconds 60"))
    .action((opts: { group?: string; rate: number; seconds?: number }) => load.simulate().simulate(opts));

  // Issue 44: the refresher applies what each write touched; a whole rebuild is the repair path.
  const rollups = program.command("rollups").description("the dashboard rollups (docs/aggregates.md)");
  rollups
    .command("rebuild")
    .description("rebuild (group, aggregate) rollups whole from the live tables: the repair path (the refresher applies each write's changes)")
    .option("--group <uuid>", "only this property group (default: every group)", uuid("--group"))
    .addOption(new Option("--aggregate <name>", "only this aggregate (default: all four)").choices(["stays", "guests", "consent", "reviews"]))
    .addOption(json())
    .addHelpText("after", example("gcs rollups rebuild", "gcs rollups rebuild --group 0b6f…e1 --aggregate stays --json"))
    .action((opts: { group?: string; aggregate?: "stays" | "guests" | "consent" | "reviews"; json?: boolean }) => load.rollups().rebuild(opts));

  requiredAfterUnknown(program);
  return program;
}

/**
 * Commander checks required options before unknown ones, so `--scope read:guests` (a typo of
 * --scopes) would report "required option '--scopes' not specified". Required options are checked
 * here instead, just before the action, after commander has reported an unknown option (with its
 * suggestion: "Did you mean --scopes?"). The message is commander's own.
 */
function requiredAfterUnknown(program: Command): void {
  const required = new Map<Command, Option[]>();
  const walk = (command: Command) => {
    const options = command.options.filter((o) => o.mandatory);
    for (const o of options) o.mandatory = false;
    if (options.length) required.set(command, options);
    command.commands.forEach(walk);
  };
  walk(program);
  program.hook("preAction", (_program, action) => {
    for (const o of required.get(action) ?? []) {
      if (action.getOptionValue(o.attributeName()) === undefined) {
        action.error(`error: required option '${o.flags}' not specified`, { code: "commander.missingMandatoryOptionValue", exitCode: 1 });
      }
    }
  });
}
