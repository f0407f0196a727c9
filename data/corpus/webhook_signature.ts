/**
 * Verification of Northwind Pay webhook signatures.
 *
 * Every webhook request carries a `Northwind-Signature` header of the form
 * `t=<unix seconds>,v1=<hex hmac>`. The signature is an HMAC-SHA256 of
 * `<timestamp>.<raw body>` keyed with the endpoint's signing secret.
 * During secret rotation the header may contain more than one `v1` entry.
 */

import { createHmac, timingSafeEqual } from "node:crypto";

/** Events older or newer than this are rejected to stop replays. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

export const SIGNATURE_HEADER = "northwind-signature";

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

export interface ParsedSignature {
  timestamp: number;
  signatures: string[];
}

/** Split the header into its timestamp and one or more v1 signatures. */
export function parseSignatureHeader(header: string): ParsedSignature {
  let timestamp = NaN;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const [key, value] = part.trim().split("=", 2);
    if (key === "t") {
      timestamp = Number.parseInt(value, 10);
    } else if (key === "v1" && value) {
      signatures.push(value);
    }
  }
  if (Number.isNaN(timestamp) || signatures.length === 0) {
    throw new WebhookVerificationError("malformed Northwind-Signature header");
  }
  return { timestamp, signatures };
}

function computeSignature(secret: string, timestamp: number, rawBody: string): string {
  return createHmac("sha256", secret).update(`${timestamp}.${rawBody}`, "utf8").digest("hex");
}

function safeEqualHex(a: string, b: string): boolean {
  const left = Buffer.from(a, "hex");
  const right = Buffer.from(b, "hex");
  return left.length === right.length && timingSafeEqual(left, right);
}

export class WebhookVerifier {
  private readonly secrets: string[];

  /**
   * @param secrets one or more signing secrets; pass both the old and new
   *   secret while rotating, so events signed with either are accepted.
   * @param toleranceSeconds maximum clock difference allowed.
   */
  constructor(secrets: string | string[], private readonly toleranceSeconds = DEFAULT_TOLERANCE_SECONDS) {
    this.secrets = Array.isArray(secrets) ? secrets : [secrets];
    if (this.secrets.length === 0) {
      throw new Error("at least one signing secret is required");
    }
  }

  /**
   * Verify a webhook and return the parsed event.
   *
   * `rawBody` must be the exact bytes received, decoded as UTF-8, before any
   * JSON parsing; re-serialising the parsed object changes the signature.
   */
  verify<T = unknown>(rawBody: string, header: string | undefined, nowSeconds = Date.now() / 1000): T {
    if (!header) {
      throw new WebhookVerificationError("missing Northwind-Signature header");
    }
    const { timestamp, signatures } = parseSignatureHeader(header);
    if (Math.abs(nowSeconds - timestamp) > this.toleranceSeconds) {
      throw new WebhookVerificationError("timestamp outside the tolerance window");
    }
    const matched = this.secrets.some((secret) => {
      const expected = computeSignature(secret, timestamp, rawBody);
      return signatures.some((candidate) => safeEqualHex(expected, candidate));
    });
    if (!matched) {
      throw new WebhookVerificationError("no matching signature");
    }
    return JSON.parse(rawBody) as T;
  }
}

/** Express-style helper: returns the event or responds 400 and returns null. */
export function verifyRequest<T>(
  verifier: WebhookVerifier,
  req: { headers: Record<string, string | undefined>; rawBody: string },
  res: { status(code: number): { send(body: string): void } },
): T | null {
  try {
    return verifier.verify<T>(req.rawBody, req.headers[SIGNATURE_HEADER]);
  } catch (err) {
    res.status(400).send(err instanceof Error ? err.message : "invalid signature");
    return null;
  }
}
