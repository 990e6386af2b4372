// Binding guidance: is granted email-marketing consent required by the table's filter document?
import { consentFilterPresent, guidanceFor } from "../../src/delivery/guidance";

const consent = { field: "consent.email_marketing", op: "eq", value: "granted" };
const country = { field: "country_code", op: "eq", value: "GB" };

describe("consentFilterPresent", () => {
  it.each([
    ["a bare leaf", consent],
    ["a leaf under and", { and: [country, consent] }],
    ["a leaf under nested and", { and: [country, { and: [{ field: "vip_code", op: "eq", value: "VIP" }, consent] }] }],
  ])("is true for %s", (_name, doc) => {
    expect(consentFilterPresent(doc)).toBe(true);
  });

  it.each([
    ["no document (curated table)", null],
    ["a filter without consent", { and: [country] }],
    ["consent under or", { or: [country, consent] }],
    ["consent under and under or", { or: [{ and: [consent, country] }, country] }],
    ["consent under not", { not: consent }],
    ["consent under and under not", { not: { and: [consent] } }],
    ["another purpose", { field: "consent.sms_marketing", op: "eq", value: "granted" }],
    ["another status", { field: "consent.email_marketing", op: "eq", value: "withdrawn" }],
    ["another operator", { field: "consent.email_marketing", op: "neq", value: "granted" }],
    ["an in-list", { field: "consent.email_marketing", op: "in", value: ["granted"] }],
    ["garbage", "consent.email_marketing"],
    ["an array", [consent]],
  ])("is false for %s", (_name, doc) => {
    expect(consentFilterPresent(doc)).toBe(false);
  });
});

describe("guidanceFor", () => {
  it("recommends the filter exactly when it is absent", () => {
    expect(guidanceFor(null)).toEqual({
      recommends_consent_filter: true, consent_filter_field: "consent.email_marketing", consent_filter_present: false,
    });
    expect(guidanceFor({ and: [country, consent] })).toEqual({
      recommends_consent_filter: false, consent_filter_field: "consent.email_marketing", consent_filter_present: true,
    });
  });
});
