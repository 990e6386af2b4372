// contactPermission (the check_contact_permission MCP tool): may we contact this e-mail or phone
// for this purpose? The answer is spec 1.5 applied by consent/precedence.ts to every observation of
// the contact and purpose in the caller's property group, with the rule in words and the evidence.
import type { RequestContext } from "../../context";
import { effectiveConsent, normaliseContact, type EffectiveStatus } from "../../consent/precedence";
import { invalidRequest, notFound } from "../../errors";
import { isStorableText, unstorableDetail } from "../text";
import { evidence } from "./guest-context";

const OBSERVATIONS_SHOWN = 10;

interface ContactPermissionArgs {
  email?: string | null;
  phone?: string | null;
  purpose: string;
  propertyId?: string | null;
}

const ANSWER: Record<EffectiveStatus, "allowed" | "not_allowed" | "unknown"> = {
  granted: "allowed",
  withdrawn: "not_allowed",
  denied: "not_allowed",
  unknown: "unknown",
};

/** The contact point as observations store it (normaliseContact): lower-case e-mail or E.164 phone. */
function contactOf(args: ContactPermissionArgs): { type: "email" | "phone"; value: string } {
  if ((args.email == null) === (args.phone == null)) throw invalidRequest("give exactly one of email or phone");
  if (args.email != null) {
    const value = normaliseContact("email", args.email);
    if (!value || !/^[^\s@]+@[^\s@]+$/.test(value)) throw invalidRequest("email must be an e-mail address, e.g. olivia.smith@example.com");
    return { type: "email", value };
  }
  const value = normaliseContact("phone", args.phone!);
  if (!value) throw invalidRequest("phone must be an international number with its country code, e.g. +44 7700 900123");
  return { type: "phone", value };
}

/** At most this many of the group's purposes are named in a refusal. */
const PURPOSES_LISTED = 50;

/** A purpose the group never records consent for (a typo, another name): refused, listing the ones it does. */
async function unknownPurpose(ctx: RequestContext, name: string, purpose: string) {
  const { purposes, total } = await ctx.data.consents.purposes(PURPOSES_LISTED);
  const more = total > purposes.length ? ` …and ${total - purposes.length} more` : "";
  return invalidRequest(`${name} ${JSON.stringify(purpose)} is not one this property group records consent for; known purposes: ${purposes.join(", ")}${more}`);
}

/**
 * A purpose as every consent question takes it (contactPermission, lookupGuests, Table.reachability, the
 * consent lists, effective consent and the consent aggregates on every door: a typo is an error, never a
 * silent "no rows"): trimmed, not empty, and one the group records consent for when it records any.
 * One statement of two index probes; the group's purposes are read only to word a refusal. `name` is
 * the argument's, for the message (MCP tools rename it to their own).
 */
export async function checkedPurpose(ctx: RequestContext, raw: string, name = "purpose"): Promise<string> {
  const purpose = purposeText(raw, name);
  await recordedPurpose(ctx, purpose, name);
  return purpose;
}

/** A purpose's text: storable, trimmed, not empty (checkedPurpose's first half, no statement). */
function purposeText(raw: string, name: string): string {
  if (!isStorableText(raw)) throw invalidRequest(unstorableDetail(name));
  const purpose = raw.trim();
  if (!purpose) throw invalidRequest(`${name} must not be empty, e.g. email_marketing`);
  return purpose;
}

/** checkedPurpose's second half: refused when the group records consent, but never for this purpose. */
async function recordedPurpose(ctx: RequestContext, purpose: string, name: string): Promise<void> {
  const { known, any } = await ctx.data.consents.purposeKnown(purpose);
  if (any && !known) throw await unknownPurpose(ctx, name, purpose);
}

function ruleText(status: EffectiveStatus, count: number, restrictive: number): string {
  switch (status) {
    case "unknown":
      return "No consent observation for this contact and purpose in the property group: unknown, which is never permission (spec 1.5).";
    case "granted":
      return `Only granted observations (${count}), none withdrawn or denied: allowed; the latest granted one is the evidence (spec 1.5).`;
    default:
      return `A withdrawn or denied observation beats any granted one, whatever their order (spec 1.5): ${restrictive} of ${count} observations are restrictive; the latest of them decides.`;
  }
}

async function contactPermission(_: unknown, args: ContactPermissionArgs, ctx: RequestContext) {
  for (const name of ["email", "phone"] as const) {
    const value = args[name];
    if (value != null && !isStorableText(value)) throw invalidRequest(unstorableDetail(name));
  }
  const contact = contactOf(args);
  const purpose = purposeText(args.purpose, "purpose");
  if (args.propertyId != null && !(await ctx.loaders.property.load(args.propertyId))) throw notFound("property", args.propertyId);

  // Precedence is group-wide: a withdrawal at any property of the group decides, even for a request
  // narrowed to one property.
  const [decision] = await ctx.data.consents.decide([contact.value], { purpose, contactType: contact.type });
  const observations = decision?.observations ?? [];
  // No observation: unknown for a purpose the group records consent for; a purpose it never records
  // (a typo, another name) is an error listing the ones it does, rather than a silent unknown.
  if (observations.length === 0) await recordedPurpose(ctx, purpose, "purpose");
  const effective = decision?.effective ?? effectiveConsent([]);
  const shown = observations.slice(0, OBSERVATIONS_SHOWN);
  const ids = [...new Set(shown.map((o) => o.propertyId).filter((id): id is string => id !== null))];
  const properties = await ctx.loaders.property.loadMany(ids);
  const names = new Map(properties.flatMap((p) => (p && !(p instanceof Error) ? [[p.id, p.name] as [string, string]] : [])));
  const decidedBy = effective.decidedBy ? observations.find((o) => o.id === effective.decidedBy!.id)! : null;
  return {
    answer: ANSWER[effective.status],
    contactType: contact.type,
    contactValue: contact.value,
    purpose,
    status: effective.status,
    rule: ruleText(effective.status, observations.length, observations.filter((o) => o.status !== "granted").length),
    decidedBy: decidedBy && evidence(decidedBy, names),
    observations: shown.map((o) => evidence(o, names)),
    observationCount: observations.length,
  };
}

export const contactPermissionResolvers = { Query: { contactPermission } };
