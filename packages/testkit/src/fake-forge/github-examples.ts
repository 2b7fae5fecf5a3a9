// Response bodies shaped exactly like the examples in GitHub's REST API documentation
// (docs.github.com/rest: "Create a commit status", "Create a check run", "Update a check run",
// "List repository webhooks", "List deliveries for a repository webhook", "Redeliver a delivery
// for a repository webhook", "Create an installation access token for an app", and the
// rate-limit section of "Rate limits for the REST API"). The fake fills in the values a request
// determines (ids, states, shas); every other field is the documented example's.

const OCTOCAT = {
  login: "octocat",
  id: 1,
  node_id: "MDQ6VXNlcjE=",
  avatar_url: "https://github.com/images/error/octocat_happy.gif",
  gravatar_id: "",
  url: "https://api.github.com/users/octocat",
  html_url: "https://github.com/octocat",
  type: "User",
  site_admin: false,
};

export function commitStatusExample(
  api: string,
  repo: string,
  sha: string,
  s: { id: number; state: string; description: string | null; target_url: string | null; context: string; at: string },
) {
  return {
    url: `${api}/repos/${repo}/statuses/${sha}`,
    avatar_url: "https://github.com/images/error/hubot_happy.gif",
    id: s.id,
    node_id: "MDY6U3RhdHVzMQ==",
    state: s.state,
    description: s.description,
    target_url: s.target_url,
    context: s.context,
    created_at: s.at,
    updated_at: s.at,
    creator: OCTOCAT,
  };
}

export function checkRunExample(
  api: string,
  repo: string,
  c: {
    id: number;
    name: string;
    head_sha: string;
    external_id: string | null;
    details_url: string | null;
    status: string;
    conclusion: string | null;
    started_at: string;
    completed_at: string | null;
    output: { title: string | null; summary: string | null; text: string | null };
  },
) {
  return {
    id: c.id,
    head_sha: c.head_sha,
    node_id: "MDg6Q2hlY2tSdW40",
    external_id: c.external_id,
    url: `${api}/repos/${repo}/check-runs/${c.id}`,
    html_url: `https://github.com/${repo}/runs/${c.id}`,
    details_url: c.details_url,
    status: c.status,
    conclusion: c.conclusion,
    started_at: c.started_at,
    completed_at: c.completed_at,
    output: {
      ...c.output,
      annotations_count: 0,
      annotations_url: `${api}/repos/${repo}/check-runs/${c.id}/annotations`,
    },
    name: c.name,
    check_suite: { id: 5 },
    app: { id: 1, slug: "octoapp", name: "Octocat App", owner: OCTOCAT },
    pull_requests: [],
  };
}

export function repoHookExample(api: string, repo: string, h: { id: number; url: string; events: string[] }) {
  return {
    type: "Repository",
    id: h.id,
    name: "web",
    active: true,
    events: h.events,
    config: { content_type: "json", insecure_ssl: "0", url: h.url },
    updated_at: "2019-06-03T00:57:16Z",
    created_at: "2019-06-03T00:57:16Z",
    url: `${api}/repos/${repo}/hooks/${h.id}`,
    test_url: `${api}/repos/${repo}/hooks/${h.id}/test`,
    ping_url: `${api}/repos/${repo}/hooks/${h.id}/pings`,
    deliveries_url: `${api}/repos/${repo}/hooks/${h.id}/deliveries`,
    last_response: { code: null, status: "unused", message: null },
  };
}

/** One item of "List deliveries for a repository webhook" (and of GET /app/hook/deliveries). */
export interface DeliveryItem {
  id: number;
  guid: string;
  delivered_at: string;
  redelivery: boolean;
  duration: number;
  status: string;
  status_code: number;
  event: string;
  action: string | null;
  installation_id: number | null;
  repository_id: number | null;
  throttled_at: string | null;
}

export function installationTokenExample(token: string, expiresAt: string) {
  return {
    token,
    expires_at: expiresAt,
    permissions: { checks: "write", statuses: "write", metadata: "read" },
    repository_selection: "selected",
  };
}

/** The documented primary rate-limit body (403 with x-ratelimit-remaining: 0). */
export const PRIMARY_RATE_LIMIT_BODY = {
  message:
    "API rate limit exceeded for installation ID 1. If you reach out to GitHub Support for help, please include the request ID.",
  documentation_url: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
};

/** The documented secondary rate-limit body (403 or 429 with Retry-After). */
export const SECONDARY_RATE_LIMIT_BODY = {
  message:
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID.",
  documentation_url: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
};

export const BAD_CREDENTIALS_BODY = {
  message: "Bad credentials",
  documentation_url: "https://docs.github.com/rest",
};

export const NOT_FOUND_BODY = { message: "Not Found", documentation_url: "https://docs.github.com/rest" };

/** "Get a repository" (the fields Kiln reads, as the example shows them; `permissions` only for an authenticated caller). */
export function repositoryExample(
  api: string,
  fullName: string,
  id: number,
  permissions: { admin: boolean; push: boolean; pull: boolean } | null,
) {
  const [owner = "", name = ""] = fullName.split("/");
  return {
    id,
    node_id: "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
    name,
    full_name: fullName,
    owner: { ...OCTOCAT, login: owner },
    private: false,
    html_url: `https://github.com/${fullName}`,
    description: "This your first repo!",
    fork: false,
    url: `${api}/repos/${fullName}`,
    clone_url: `https://github.com/${fullName}.git`,
    default_branch: "master",
    visibility: "public",
    ...(permissions ? { permissions: { ...permissions, maintain: permissions.admin, triage: permissions.push } } : {}),
    created_at: "2011-01-26T19:01:12Z",
    updated_at: "2011-01-26T19:14:43Z",
    pushed_at: "2011-01-26T19:06:43Z",
  };
}

/** "Get a repository installation for the authenticated app". */
export function installationExample(api: string, id: number, account: string) {
  return {
    id,
    account: { ...OCTOCAT, login: account },
    access_tokens_url: `${api}/app/installations/${id}/access_tokens`,
    repositories_url: `${api}/installation/repositories`,
    html_url: `https://github.com/organizations/github/settings/installations/${id}`,
    app_id: 1,
    target_id: 1,
    target_type: "Organization",
    permissions: { checks: "write", metadata: "read", contents: "read", statuses: "write" },
    events: ["push", "pull_request"],
    single_file_name: "config.yaml",
    has_multiple_single_files: true,
    single_file_paths: ["config.yml", ".github/issue_TEMPLATE.md"],
    repository_selection: "selected",
    created_at: "2017-07-08T16:18:44-04:00",
    updated_at: "2017-07-08T16:18:44-04:00",
    app_slug: "github-actions",
    suspended_at: null,
    suspended_by: null,
  };
}
