// A result's `data` already written as JSON text (graphql/json-plan.ts): Apollo hands it to
// `stringifyResult` untouched, which writes it into the response as it is instead of serialising an
// object tree that would only be built to be serialised.
import type { FormattedExecutionResult } from "graphql";

export class RawJson {
  constructor(readonly text: string) {}
  /** Any other serialiser still gets the value (parsed: slow, but right). */
  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

/** Apollo's `stringifyResult`: its default (JSON and a newline), with `data` written as it is when it is RawJson. */
export function stringifyResult(result: FormattedExecutionResult): string {
  if (result.data instanceof RawJson && result.errors === undefined && result.extensions === undefined) {
    return `{"data":${result.data.text}}\n`;
  }
  return JSON.stringify(result) + "\n";
}
