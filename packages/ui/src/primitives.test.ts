import { createElement as h } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { ConfirmDialog } from "./confirm-dialog.tsx";
import { type Column, DataTable } from "./data-table.tsx";
import { Form, SelectField } from "./form.tsx";
import { Field } from "./field.tsx";
import { dialogKeyAction, nextFocusIndex } from "./focus-trap.ts";
import { Notices } from "./notice.tsx";
import { StatusGate } from "./states.tsx";

// Markup checks of the shared admin primitives (server render: what a screen reader is given).
// The clicks and keys themselves run in real Chromium in e2e/admin-console.test.ts.

interface Row {
  id: string;
  name: string;
}
const columns: Column<Row>[] = [
  { key: "name", header: "Name", cell: (r) => r.name },
  { key: "actions", header: "Actions", hideHeader: true, cell: (r) => h("button", null, `Delete ${r.name}`) },
];

describe("focus trap rules", () => {
  it("wraps Tab and Shift+Tab around the dialog's controls", () => {
    expect(nextFocusIndex(1, 2, false)).toBe(0);
    expect(nextFocusIndex(0, 2, true)).toBe(1);
    expect(nextFocusIndex(-1, 3, false)).toBe(0);
    expect(nextFocusIndex(-1, 3, true)).toBe(2);
    expect(nextFocusIndex(0, 0, false)).toBe(-1);
  });
  it("Esc cancels, Enter confirms except on the Keep button, Tab is trapped", () => {
    expect(dialogKeyAction("Escape", false)).toBe("cancel");
    expect(dialogKeyAction("Enter", false)).toBe("confirm");
    expect(dialogKeyAction("Enter", true)).toBe("none");
    expect(dialogKeyAction("Tab", true)).toBe("trap");
    expect(dialogKeyAction("a", false)).toBe("none");
  });
});

describe("ConfirmDialog", () => {
  const props = { title: "Remove grace?", confirmLabel: "Confirm removal of grace", onConfirm() {}, onCancel() {} };
  it("renders nothing while closed", () => {
    expect(renderToStaticMarkup(h(ConfirmDialog, { ...props, open: false }))).toBe("");
  });
  it("is a labelled modal alertdialog with both choices, and says it is working", () => {
    const html = renderToStaticMarkup(
      h(ConfirmDialog, { ...props, open: true, pending: true, pendingLabel: "Removing…" }, "She loses access."),
    );
    expect(html).toMatch(/role="alertdialog"/);
    expect(html).toMatch(/aria-modal="true"/);
    expect(html).toMatch(/aria-labelledby="([^"]+)-title"/);
    expect(html).toContain("She loses access.");
    expect(html).toContain(">Keep<");
    expect(html).toMatch(/<button[^>]*disabled=""[^>]*>Removing…<\/button>/);
  });
});

describe("DataTable", () => {
  it("shows the empty state instead of a headless table", () => {
    const html = renderToStaticMarkup(
      h(DataTable<Row>, { rows: [], columns, rowKey: (r) => r.id, empty: h("p", null, "No members") }),
    );
    expect(html).toBe("<p>No members</p>");
  });
  it("shows loading rows (announced once) while the rows are not there", () => {
    const html = renderToStaticMarkup(
      h(DataTable<Row>, { rows: undefined, columns, rowKey: (r) => r.id, loadingRows: 2 }),
    );
    expect(html.match(/role="status"/g)).toHaveLength(1);
    expect(html.match(/<tr>/g)).toHaveLength(3);
    expect(html).toContain('aria-busy="true"');
  });
  it("scopes headers, hides an actions header visually, and makes activatable rows focusable", () => {
    const rows = [{ id: "1", name: "ada" }];
    const html = renderToStaticMarkup(
      h(DataTable<Row>, {
        rows,
        columns,
        rowKey: (r) => r.id,
        onActivate() {},
        rowProps: (r) => ({ "data-login": r.name }),
        testId: "t",
      }),
    );
    expect(html).toContain('<th scope="col" class="py-1.5 pr-3 font-medium"><span class="sr-only">Actions</span></th>');
    expect(html).toMatch(/<tr data-login="ada" tabindex="0"/);
    expect(html).toContain("<button>Delete ada</button>");
  });
  it("leaves rows out of the tab order when they do nothing", () => {
    const html = renderToStaticMarkup(
      h(DataTable<Row>, { rows: [{ id: "1", name: "ada" }], columns, rowKey: (r) => r.id }),
    );
    expect(html).not.toContain("tabindex");
  });
});

describe("Form", () => {
  it("labels itself, disables and relabels its submit while pending, and shows the server's refusal", () => {
    const html = renderToStaticMarkup(
      h(
        Form,
        {
          label: "Add a member",
          onSubmit() {},
          pending: true,
          submitLabel: "Add member",
          pendingLabel: "Adding…",
          error: "login taken",
        },
        h(Field, { label: "Login", name: "login", error: "enter the forge login" }),
        h(SelectField, { label: "Role", name: "role" }, h("option", { value: "admin" }, "admin")),
      ),
    );
    expect(html).toContain('aria-label="Add a member"');
    expect(html).toContain("noValidate");
    expect(html).toMatch(/<button type="submit"[^>]*disabled=""[^>]*>Adding…<\/button>/);
    expect(html).toMatch(/role="alert"[^>]*>login taken</);
    expect(html).toMatch(/aria-invalid="true" aria-describedby="[^"]+-error"/);
    expect(html).toMatch(/<label for="([^"]+)"[^>]*>Role<\/label><select id="\1"/);
  });
  it("carries its id and autocomplete policy (pages focus into it by id; secrets forms turn autofill off)", () => {
    const html = renderToStaticMarkup(
      h(Form, {
        label: "x",
        id: "add-schedule",
        autoComplete: "off",
        onSubmit() {},
        pending: false,
        submitLabel: "Save",
        pendingLabel: "Saving…",
      }),
    );
    expect(html).toMatch(/^<form id="add-schedule" noValidate="" autoComplete="off"/);
  });
  it("has no alert when nothing was refused", () => {
    const html = renderToStaticMarkup(
      h(Form, { label: "x", onSubmit() {}, pending: false, submitLabel: "Save", pendingLabel: "Saving…" }, null),
    );
    expect(html).not.toContain('role="alert"');
    expect(html).toMatch(/>Save<\/button>/);
  });
});

describe("Notices and StatusGate", () => {
  it("always renders the polite status region, the alert only with an error", () => {
    expect(renderToStaticMarkup(h(Notices, {}))).toMatch(/^<p role="status"[^>]*><\/p>$/);
    expect(renderToStaticMarkup(h(Notices, { error: "no", note: "yes" }))).toMatch(
      /role="alert".*>no<.*role="status".*>yes</,
    );
  });
  it("shows loading, then the error, then empty, then the content, in that order", () => {
    const child = () => h("p", null, "rows");
    expect(renderToStaticMarkup(h(StatusGate, { pending: true, error: new Error("x"), children: child }))).toContain(
      'role="status"',
    );
    expect(
      renderToStaticMarkup(
        h(StatusGate, { pending: false, error: new Error("db down"), empty: "none", children: child }),
      ),
    ).toContain("db down");
    expect(renderToStaticMarkup(h(StatusGate, { pending: false, error: null, empty: "none", children: child }))).toBe(
      "none",
    );
    expect(renderToStaticMarkup(h(StatusGate, { pending: false, error: null, children: child }))).toBe("<p>rows</p>");
  });
});
