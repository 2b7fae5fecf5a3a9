// Schedules (issue 20, docs/adr/0031): stored schedules, the scheduler's pass and slot admission.
export { runScheduleTick } from "./run-schedules.ts";
export {
  addSchedule,
  listSchedules,
  recordWorkflowSchedules,
  removeSchedule,
  repoByFullName,
  type ScheduleView,
} from "./schedule-store.ts";
