// Public API of the metering capability (issue 33, docs/adr/0045).
export { recordUsage } from "./record-usage.ts";
export {
  QUOTA_WAIT_REASON,
  withinMinuteQuotaSql,
  notWaitingForMinutesSql,
  jobsWaitingForMinutes,
  minuteQuotaStatus,
  quotaStatusText,
  settleQuotaNotices,
  setMinuteQuota,
  type MinuteQuotaStatus,
} from "./minute-quota.ts";
export {
  usageReport,
  usageCsv,
  usagePeriod,
  type UsageReport,
} from "./usage-report.ts";
