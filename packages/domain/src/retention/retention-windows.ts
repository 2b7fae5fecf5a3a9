// Retention windows: platform configuration, shortened (never lengthened) per org. Pure: the
// instant data was produced is passed in; the apps parse the platform windows from their env.
import { z } from "zod";
import { DomainError } from "../shared/errors.ts";
import { RETENTION_CLASSES, type RetentionClass } from "./retention-classes.ts";

/**
 * What the retention worker evicts. `log` is a log's retrievable life (its archived segments and
 * journal); `log_searchable` is the shorter searchable tier the seed names (Kiln has no log search
 * index yet, so nothing is evicted on it; it is configuration so the tier exists when search does).
 */
export const RETENTION_KINDS = ["artifact", "log", "log_searchable", "run_metadata"] as const;
export type RetentionKind = (typeof RETENTION_KINDS)[number];

/** Kept seven years and immutable: no window, no override, never in an eviction plan. */
export const IMMUTABLE_RETENTION_KINDS = ["attestation", "tlog", "audit"] as const;
export const IMMUTABLE_RETENTION_DAYS = 7 * 365 + 2;

export type ClassWindows = Record<RetentionClass, number>;
export type RetentionWindows = Record<RetentionKind, ClassWindows>;

/** Seed 002: artifacts 400/90/14; logs retrievable 90, archived 400 for release; run metadata 400. */
export const DEFAULT_RETENTION_WINDOWS: RetentionWindows = {
  artifact: { release: 400, default_branch: 90, other: 14 },
  log: { release: 400, default_branch: 90, other: 90 },
  log_searchable: { release: 14, default_branch: 14, other: 14 },
  run_metadata: { release: 400, default_branch: 400, other: 400 },
};

const days = z.number().int().min(1).max(IMMUTABLE_RETENTION_DAYS);
const classWindowsSchema = z.object({ release: days, default_branch: days, other: days }).strict();
export const retentionWindowsSchema = z
  .object({
    artifact: classWindowsSchema,
    log: classWindowsSchema,
    log_searchable: classWindowsSchema,
    run_metadata: classWindowsSchema,
  })
  .strict();

/** An org's overrides: any subset of kind x class, each in days. */
export const retentionOverridesSchema = z
  .object({
    artifact: classWindowsSchema.partial().optional(),
    log: classWindowsSchema.partial().optional(),
    log_searchable: classWindowsSchema.partial().optional(),
    run_metadata: classWindowsSchema.partial().optional(),
  })
  .strict();
export type RetentionOverrides = z.infer<typeof retentionOverridesSchema>;

/** Refuses an override longer than the platform window: orgs may keep less, never more. */
export function checkOverrides(platform: RetentionWindows, overrides: RetentionOverrides): void {
  for (const kind of Object.keys(overrides) as RetentionKind[]) {
    const perClass = overrides[kind];
    if (!perClass) continue;
    for (const cls of RETENTION_CLASSES) {
      const v = perClass[cls];
      if (v !== undefined && v > platform[kind][cls])
        throw new DomainError(
          "RETENTION.WINDOW_LENGTHENED",
          `${kind}/${cls} may be at most ${platform[kind][cls]} days for an org; ${v} was asked`,
          { kind, class: cls, platform_days: platform[kind][cls], requested_days: v },
        );
    }
  }
}

/**
 * The window that applies. `min` again here, not only at write time: if the platform window is
 * later shortened below a stored override, the override must not become a lengthening.
 */
export function windowDays(
  kind: RetentionKind,
  cls: RetentionClass,
  platform: RetentionWindows,
  overrides?: RetentionOverrides | null,
): number {
  const o = overrides?.[kind]?.[cls];
  return o === undefined ? platform[kind][cls] : Math.min(o, platform[kind][cls]);
}

const DAY_MS = 86_400_000;

/** The UTC day (YYYY-MM-DD) an instant buckets into: the unit of expiry and of data keys. */
export function retentionDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/**
 * Data produced on UTC day D expires at the END of D plus the window, i.e. 00:00 UTC of D+window+1.
 * Everything of one (org, day, class, kind) bucket therefore expires at one instant, the instant its
 * data key is destroyed (seed 003 Q8): kept at least `window` days, never a day early.
 */
export function dayExpiresAt(day: string, windowInDays: number): Date {
  const start = Date.parse(`${day}T00:00:00.000Z`);
  if (Number.isNaN(start)) throw new Error(`not a UTC day: ${day}`);
  return new Date(start + (windowInDays + 1) * DAY_MS);
}

export function expiresAt(
  producedAt: Date,
  cls: RetentionClass,
  kind: RetentionKind,
  platform: RetentionWindows,
  overrides?: RetentionOverrides | null,
): Date {
  return dayExpiresAt(retentionDay(producedAt), windowDays(kind, cls, platform, overrides));
}

/**
 * The platform's windows from configuration: any subset of kind x class over the seed's defaults
 * (the apps read it from one JSON env variable). Unlike an org override this may lengthen.
 */
export function platformRetentionWindows(configured: RetentionOverrides | null | undefined): RetentionWindows {
  const merged = {} as Record<RetentionKind, ClassWindows>;
  for (const kind of RETENTION_KINDS) merged[kind] = { ...DEFAULT_RETENTION_WINDOWS[kind], ...configured?.[kind] };
  return retentionWindowsSchema.parse(merged);
}
