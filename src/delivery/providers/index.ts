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
}

export interface ClientSettings {
  fetch?: typeof fetch;
  timeoutMs?: number;
}

const KLAVIYO_PRODUCTION = "https://a.klaviyo.com";

/** A client for the binding's provider; an unknown provider or unusable key is permanent. */
export function destinationClient(
  provider: string,
  apiKey: string,
  destinations: DestinationsConfig,
  settings: ClientSettings = {},
): DestinationClient {
  switch (provider) {
    case "mailchimp": {
      const baseUrl = destinations.mailchimp?.baseUrl ?? mailchimpBaseUrlForKey(apiKey);
      if (!baseUrl) throw new DestinationError("permanent", "mailchimp: API key has no data centre suffix");
      return mailchimpClient({ baseUrl, apiKey, ...settings });
    }
    case "klaviyo":
      return klaviyoClient({ baseUrl: destinations.klaviyo?.baseUrl ?? KLAVIYO_PRODUCTION, apiKey, ...settings });
    default:
      throw new DestinationError("permanent", `unknown destination provider ${provider}`);
  }
}
