export {
  dueSlot,
  isKnownTimeZone,
  SCHEDULE_LIMITS,
  specProblem,
  upcomingSlots,
  type ScheduleSpec,
  type SpecProblem,
} from "./cron-slots.ts";
export {
  decideTick,
  replaceWorkflowSchedules,
  scheduledActor,
  SCHEDULE_ORIGINS,
  type ScheduleOrigin,
  type ScheduleReplacement,
  type StoredSchedule,
  type TickDecision,
} from "./schedule-rules.ts";
