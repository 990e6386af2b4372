// Table delivery to email-marketing destinations: membership writes, binding state, the engine.
export { addTableMembers, removeTableMembers, MembershipError, type MembershipInput, type MembershipResult } from "../data/stores/table-membership";
export { pauseBinding, resumeBinding, bindingView, type BindingRef, type BindingView } from "./bindings";
export { consentFilterPresent, guidanceFor, CONSENT_FILTER_FIELD, type BindingGuidance } from "./guidance";
export { flushDue, startDeliveryWorker, backoffMs, type FlushOptions, type FlushReport, type FlushOutcome, type DeliveryWorker, type DeliveryWorkerOptions } from "./engine";
export { seal, open, loadKeyring, SecretBoxError, type Keyring } from "./secret-box";
export { startStandIn, type StandIn, type ReceivedOperation } from "./standin";
export { type DestinationsConfig, type DestinationClient, DestinationError } from "./providers";
export { type FlushCounts } from "./plan";
