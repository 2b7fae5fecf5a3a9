// @kiln/ui: presentational components shared by the dashboard's pages. No data fetching here; the
// log viewer is the exception, because its data source is a browser stream (SSE), not tRPC.
export { cn } from "./cn.ts";
export { Button, buttonClasses, type ButtonVariant } from "./button.tsx";
export { StatusBadge, outcomeLabel, type OutcomeClassName } from "./badge.tsx";
export { Card, Stat } from "./card.tsx";
export { EmptyState, ErrorState, Skeleton, LoadingBlock, StatusGate } from "./states.tsx";
export { Notice, Notices } from "./notice.tsx";
export { Form, SelectField } from "./form.tsx";
export { ConfirmDialog, ConfirmButton } from "./confirm-dialog.tsx";
export { DataTable, type Column } from "./data-table.tsx";
export { Field, inputClasses } from "./field.tsx";
export { JobGraph, type JobGraphNode, type LinkLike } from "./job-graph.tsx";
export { layoutJobGraph, type GraphJob, type GraphLayout } from "./job-graph-layout.ts";
export { AttemptTimeline, type TimelineAttempt } from "./attempt-timeline.tsx";
export { PhaseBreakdown, PHASES, type Phases } from "./phases.tsx";
export * from "./format.ts";
export { LogViewer, type LogViewerProps } from "./logs/log-viewer.tsx";
export { parseAnsi, stripAnsi, type AnsiStyle, type AnsiSpan } from "./logs/ansi.ts";
export { LogLines } from "./logs/log-lines.ts";
export { LogExcerpt, type LogExcerptProps } from "./logs/log-excerpt.tsx";
export { firstErrorRegion, isErrorLine, type ErrorRegion } from "./logs/first-error.ts";
export { SseParser } from "./logs/sse-parser.ts";
