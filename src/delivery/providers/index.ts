// Provider slug + configuration + API key → client. The only place that knows the provider list.
import { DestinationError, type DestinationClient } from "./client";
import { klaviyoClient } from "./klaviyo";
import { mailchimpBaseUrlForKey, mailchimpClient } from "./mailchimp";

export * from "./client";
export { klaviyoClient, KLAVIYO_REVISION } from "./klaviyo";
export { mailchimpClient, mailchimpBaseUrlForKey, subscriberHash } from "./mailchimp";

export interface DestinationEndpoint {
  /** Unset: the provider's production API (Mailchimp's data centre is read from the key). */
  baseUrl?: string;
}

export interface DestinationsConfig {
  mailchimp?: DestinationEndpoint;
  klaviyo?: DestinationEndpoint;
  /** The built-in stand-in (standin.ts), when one runs: where stand-in keys go without a base URL. */
  standInUrl?: string;
}

export interface ClientSettings {
  fetch?: typeof fetch;
  timeoutMs?: number;
}

const KLAVIYO_PRODUCTION = "https://a.klaviyo.com";

/**
 * The API keys of demo and test data (`gcs fixtures`) start with this. Like a payment provider's
 * test-mode keys, a stand-in key is never sent to the provider on the internet: its connection goes
 * to the configured base URL, else to the built-in stand-in, else it fails.
 */
export const STAND_IN_KEY_PREFIX = "gcs_standin_";

/** Where a connection's calls go; a stand-in key never reaches the provider's own API. */
export function destinationBaseUrl(provider: "mailchimp" | "klaviyo", apiKey: string, destinations: DestinationsConfig): string {
  const configured = destinations[provider]?.baseUrl;
  if (configured) return configured;
  if (apiKey.startsWith(STAND_IN_KEY_PREFIX)) {
    if (destinations.standInUrl) return destinations.standInUrl;
    throw new DestinationError("permanent", `${provider}: demo data's stand-in key is never sent to the provider, and no stand-in runs here (set GCS_${provider.toUpperCase()}_BASE_URL)`);
  }
  if (provider === "klaviyo") return KLAVIYO_PRODUCTION;
  const fromKey = mailchimpBaseUrlForKey(apiKey);
  if (!fromKey) throw new DestinationError("permanent", "mailchimp: API key has no data centre suffix");
  return fromKey;
}

/** A client for the binding's provider; an unknown provider or unusable key is permanent. */
export function destinationClient(
  provider: string,
  apiKey: string,
  destinations: DestinationsConfig,
  settings: ClientSettings = {},
): DestinationClient {
  switch (provider) {
    case "mailchimp":
      return mailchimpClient({ baseUrl: destinationBaseUrl(provider, apiKey, destinations), apiKey, ...settings });
    case "klaviyo":
      return klaviyoClient({ baseUrl: destinationBaseUrl(provider, apiKey, destinations), apiKey, ...settings });
    default:
      throw new DestinationError("permanent", `unknown destination provider ${provider}`);
  }
}
