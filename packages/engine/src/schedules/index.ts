// Schedules (issue 20, docs/adr/0031): stored schedules, the scheduler's pass and slot admission.
export { admitScheduledRun, type SlotAdmission, type SlotAdmissionResult } from "./admit-scheduled.ts";
export { resolveBranchHead } from "./branch-head.ts";
export { runScheduleTick, type ScheduleTickReport } from "./run-schedules.ts";
export {
  addSchedule,
  listSchedules,
  recordWorkflowSchedules,
  removeSchedule,
  repoByFullName,
  type ScheduleCaller,
  type ScheduleView,
} from "./schedule-store.ts";
