"""The domain tables of gen-search-catalog.py: which servers exist and what their tools are.

Kept apart from the generator's machinery so the data reads as a list of servers.
"""


def build(g):
    Entity, entity_tools, custom, server, add = g["Entity"], g["entity_tools"], g["custom"], g["server"], g["add"]
    CRUD = ("list", "get", "create", "update", "delete", "search")
    READ = ("list", "get", "search")

    def E(*args, **kwargs):
        return Entity(*args, **kwargs)

    # ---------------------------------------------------------------- code hosting
    repo = E("repository", "repositories", "for a user or organization", "name, visibility, default branch and star count",
             "by visibility or language", [("owner", "Owner of the repository (user or organization)"), ("visibility", "public or private")],
             ops=("list", "get", "create", "delete", "search"))
    issue = E("issue", "issues", "in a repository", "title, body, state, labels, assignees and comments count",
              "by state, labels or assignee", [("repo", "Repository in owner/name form"), ("title", "Issue title"), ("body", "Issue body in Markdown"), ("labels", "Comma-separated labels")])
    pull = E("pull request", "pull requests", "in a repository", "title, source and target branches, review state and mergeability",
             "by state, base branch or author", [("repo", "Repository in owner/name form"), ("head", "Branch with the changes"), ("base", "Branch to merge into")],
             ops=("list", "get", "create", "update", "search"))
    branch = E("branch", "branches", "of a repository", "name, latest commit and protection status", "by name prefix",
               [("repo", "Repository in owner/name form"), ("from_ref", "Commit or branch to start from")], ops=("list", "get", "create", "delete"))
    release = E("release", "releases", "of a repository", "tag, name, notes and assets", "by tag", [("repo", "Repository"), ("tag", "Git tag")],
                ops=("list", "get", "create", "delete"))
    for name, desc, style, voice, extra_prefix in [
        ("github", "GitHub: repositories, issues, pull requests, code search and Actions", "snake", "standard", ""),
        ("gitlab", "GitLab projects, merge requests, issues and CI pipelines", "snake", "verbose", ""),
        ("bitbucket", "Bitbucket Cloud repositories and pull requests", "camel", "terse", ""),
    ]:
        srv = server(name, desc, ["code", "git"], style, voice)
        tools = []
        for ent in (repo, issue, pull, branch, release):
            tools += entity_tools(srv, ent)
        tools += custom(srv, [
            ("get", "file contents", "Get the contents of a file or directory from a repository at a given ref.", [("path", "Path in the repository"), ("ref", "Branch, tag or commit SHA")]),
            ("create or update", "file", "Create or update a single file in a repository with a commit.", [("path", "File path"), ("content", "New file content"), ("message", "Commit message")]),
            ("push", "files", "Push several files to a branch in one commit.", [("files", "Files with path and content"), ("branch", "Target branch")]),
            ("list", "commits", "List commits on a branch, newest first.", [("sha", "Branch or SHA to start from"), ("author", "Filter by author")]),
            ("get", "commit", "Get one commit with its diff and stats.", [("sha", "Commit SHA")]),
            ("search", "code", "Search source code across repositories using code search syntax.", [("q", "Code search query")]),
            ("merge", "pull request", "Merge a pull request using merge, squash or rebase.", [("merge_method", "merge, squash or rebase")]),
            ("create", "pull request review", "Submit a review on a pull request: approve, request changes or comment.", [("event", "APPROVE, REQUEST_CHANGES or COMMENT"), ("body", "Review text")]),
            ("add", "issue comment", "Add a comment to an issue or pull request.", [("body", "Comment text")]),
            ("fork", "repository", "Fork a repository into your account or an organization.", [("organization", "Target organization")]),
            ("star", "repository", "Star a repository for the authenticated user.", [("repo", "Repository")]),
            ("list", "workflow runs", "List CI workflow runs for a repository with their status and conclusion.", [("status", "queued, in_progress or completed")]),
            ("rerun", "workflow", "Re-run a failed CI workflow run.", [("run_id", "Workflow run ID")]),
            ("get", "pull request diff", "Get the unified diff of a pull request.", [("pull_number", "Pull request number")]),
            ("list", "pull request files", "List the files changed in a pull request with additions and deletions.", [("pull_number", "Pull request number")]),
            ("request", "reviewers", "Request reviews on a pull request from users or teams.", [("reviewers", "Usernames")]),
            ("list", "notifications", "List unread notifications for the authenticated user.", [("all", "Include read notifications")]),
            ("get", "me", "Get the profile of the authenticated user.", []),
            ("list", "contributors", "List contributors to a repository sorted by number of commits.", [("repo", "Repository")]),
            ("assign", "issue", "Assign users to an issue.", [("assignees", "Usernames to assign")]),
            ("lock", "issue", "Lock the conversation on an issue so only collaborators can comment.", [("reason", "off-topic, too heated, resolved or spam")]),
            ("list", "labels", "List the labels defined in a repository.", [("repo", "Repository")]),
        ])
        add(srv, tools)

    git = server("git", "Local git repository operations", ["code", "git", "local"], "snake", "terse")
    add(git, custom(git, [
        ("git", "status", "Shows the working tree status", [("repo_path", "Path to Git repository")]),
        ("git", "diff unstaged", "Shows changes in the working directory that are not yet staged", [("repo_path", "Path to Git repository")]),
        ("git", "diff staged", "Shows changes that are staged for commit", [("repo_path", "Path to Git repository")]),
        ("git", "diff", "Shows differences between branches or commits", [("target", "Target branch or commit")]),
        ("git", "commit", "Records changes to the repository", [("message", "Commit message")]),
        ("git", "add", "Adds file contents to the staging area", [("files", "Files to stage")]),
        ("git", "reset", "Unstages all staged changes", [("repo_path", "Path to Git repository")]),
        ("git", "log", "Shows the commit logs", [("max_count", "Maximum number of commits")]),
        ("git", "create branch", "Creates a new branch from an optional base branch", [("branch_name", "New branch name"), ("base_branch", "Base branch")]),
        ("git", "checkout", "Switches branches", [("branch_name", "Branch to switch to")]),
        ("git", "show", "Shows the contents of a commit", [("revision", "Commit or ref")]),
        ("git", "init", "Initialize a new Git repository", [("repo_path", "Directory")]),
        ("git", "branch", "List Git branches", [("branch_type", "local, remote or all")]),
        ("git", "blame", "Show what revision and author last modified each line of a file", [("file", "File path")]),
        ("git", "stash", "Stash the changes in a dirty working directory", [("message", "Stash message")]),
        ("git", "tag", "Create, list or delete tags", [("name", "Tag name")]),
        ("git", "pull", "Fetch from and integrate with a remote branch", [("remote", "Remote name")]),
        ("git", "push", "Update remote refs along with associated objects", [("remote", "Remote name"), ("branch", "Branch")]),
        ("git", "clone", "Clone a repository into a new directory", [("url", "Repository URL"), ("directory", "Target directory")]),
        ("git", "cherry pick", "Apply the changes introduced by an existing commit onto the current branch", [("commit", "Commit SHA")]),
    ]))

    # ---------------------------------------------------------------- chat
    channel = E("channel", "channels", "in the workspace", "name, topic, purpose and member count", "by name or membership",
                [("name", "Channel name"), ("is_private", "Create a private channel")], ops=("list", "get", "create", "search"))
    chat_user = E("user", "users", "in the workspace", "display name, real name, email, time zone and status", "by presence",
                  [("cursor", "Pagination cursor")], ops=("list", "get", "search"))
    for name, desc, style, voice, tags in [
        ("slack", "Slack workspace: channels, messages, users and reactions", "snake", "standard", ["chat"]),
        ("teams", "Microsoft Teams chats, teams and channels", "camel", "verbose", ["chat", "microsoft"]),
        ("discord", "Discord bot: guild channels and messages", "snake", "agent", ["chat"]),
    ]:
        srv = server(name, desc, tags, style, voice)
        tools = entity_tools(srv, channel) + entity_tools(srv, chat_user)
        tools += custom(srv, [
            ("send", "message", "Send a message to a channel or a direct conversation.", [("channel", "Channel ID or name"), ("text", "Message text")]),
            ("reply", "to thread", "Reply in a message thread.", [("thread_ts", "Timestamp of the parent message"), ("text", "Reply text")]),
            ("get", "channel history", "Get recent messages from a channel, newest first.", [("channel", "Channel ID"), ("limit", "Number of messages")]),
            ("get", "thread replies", "Get all replies in a message thread.", [("thread_ts", "Parent message timestamp")]),
            ("add", "reaction", "Add an emoji reaction to a message.", [("name", "Emoji name")]),
            ("search", "messages", "Search messages across channels the bot can read.", [("query", "Search text")]),
            ("update", "message", "Edit the text of a message previously sent.", [("ts", "Message timestamp"), ("text", "New text")]),
            ("delete", "message", "Delete a message.", [("ts", "Message timestamp")]),
            ("pin", "message", "Pin a message to the channel.", [("ts", "Message timestamp")]),
            ("invite", "to channel", "Invite users to a channel.", [("users", "User IDs")]),
            ("archive", "channel", "Archive a channel so it becomes read-only.", [("channel", "Channel ID")]),
            ("set", "channel topic", "Set the topic shown at the top of a channel.", [("topic", "New topic")]),
            ("upload", "file", "Upload a file and share it in a channel.", [("filename", "File name"), ("content", "File content")]),
            ("schedule", "message", "Schedule a message to be sent later.", [("post_at", "Unix time to send at"), ("text", "Message text")]),
            ("open", "direct message", "Open a direct message conversation with a user.", [("user", "User ID")]),
            ("set", "status", "Set the user's status text and emoji.", [("status_text", "Status text"), ("status_emoji", "Emoji")]),
        ])
        add(srv, tools)

    tg = server("telegram", "Telegram bot API", ["chat"], "camel", "terse")
    add(tg, custom(tg, [
        ("send", "message", "Send a text message to a chat.", [("chat_id", "Chat ID"), ("text", "Text")]),
        ("send", "photo", "Send a photo to a chat.", [("chat_id", "Chat ID"), ("photo", "Photo URL")]),
        ("send", "document", "Send a file to a chat.", [("chat_id", "Chat ID"), ("document", "File URL")]),
        ("send", "location", "Send a point on the map.", [("latitude", "Latitude"), ("longitude", "Longitude")]),
        ("send", "poll", "Send a native poll.", [("question", "Poll question"), ("options", "Answer options")]),
        ("forward", "message", "Forward a message from one chat to another.", [("from_chat_id", "Source chat")]),
        ("get", "updates", "Receive incoming updates using long polling.", [("offset", "Update offset")]),
        ("get", "chat", "Get up-to-date information about a chat.", [("chat_id", "Chat ID")]),
        ("get", "chat members count", "Get the number of members in a chat.", [("chat_id", "Chat ID")]),
        ("ban", "chat member", "Ban a user from a group.", [("user_id", "User ID")]),
        ("pin", "chat message", "Pin a message in a chat.", [("message_id", "Message ID")]),
        ("delete", "message", "Delete a message.", [("message_id", "Message ID")]),
    ]))

    # ---------------------------------------------------------------- email
    for name, desc, style, voice in [
        ("gmail", "Gmail: read, search, send and organise mail", "snake", "standard"),
        ("outlook-mail", "Outlook / Microsoft 365 mail", "camel", "verbose"),
    ]:
        srv = server(name, desc, ["email"], style, voice)
        draft = E("draft", "drafts", "in the mailbox", "recipients, subject and body", "by subject",
                  [("to", "Recipient addresses"), ("subject", "Subject"), ("body", "Body")], ops=("list", "get", "create", "update", "delete"))
        label = E("label" if name == "gmail" else "folder", "labels" if name == "gmail" else "folders", "in the mailbox",
                  "name and unread count", "by name", [("name", "Name")], ops=("list", "create", "delete"))
        tools = entity_tools(srv, draft) + entity_tools(srv, label)
        tools += custom(srv, [
            ("send", "email", "Send an email to one or more recipients, with optional CC, BCC and attachments.", [("to", "Recipients"), ("subject", "Subject"), ("body", "Plain-text or HTML body"), ("cc", "CC recipients")]),
            ("search", "emails", "Search emails using the mailbox query syntax (from:, subject:, has:attachment, after:).", [("query", "Search query")]),
            ("read", "email", "Read one email: headers, body and attachment list.", [("message_id", "Message ID")]),
            ("list", "emails", "List recent emails in the inbox or a folder.", [("folder", "Folder or label"), ("unread_only", "Only unread")]),
            ("reply", "to email", "Reply to an email, keeping the thread.", [("message_id", "Message to reply to"), ("body", "Reply body")]),
            ("forward", "email", "Forward an email to other recipients.", [("message_id", "Message ID"), ("to", "Recipients")]),
            ("mark", "as read", "Mark emails as read.", [("message_ids", "Message IDs")]),
            ("move", "email", "Move an email to another folder or label.", [("destination", "Target folder")]),
            ("delete", "email", "Move an email to the trash.", [("message_id", "Message ID")]),
            ("get", "attachment", "Download an attachment of an email.", [("attachment_id", "Attachment ID")]),
            ("send", "draft", "Send an existing draft.", [("draft_id", "Draft ID")]),
            ("create", "filter", "Create a rule that labels, archives or forwards matching incoming mail.", [("criteria", "Match criteria"), ("action", "What to do")]),
            ("set", "vacation responder", "Turn the out-of-office auto-reply on or off.", [("enabled", "On or off"), ("message", "Auto-reply text")]),
        ])
        add(srv, tools)
    mailer = server("smtp", "Send mail through an SMTP relay", ["email"], "snake", "terse")
    add(mailer, custom(mailer, [("send", "mail", "Send a plain email via SMTP.", [("to", "Recipient"), ("subject", "Subject"), ("text", "Body")]),
                                ("verify", "address", "Check that an address is deliverable.", [("email", "Address")])]))

    # ---------------------------------------------------------------- calendar
    event = E("event", "events", "on a calendar", "title, start and end time, attendees, location and conferencing link",
              "by time range or attendee", [("calendar_id", "Calendar ID"), ("summary", "Event title"), ("start", "Start time (RFC 3339)"), ("end", "End time"), ("attendees", "Attendee emails")])
    calendar = E("calendar", "calendars", "of the user", "name, time zone and access role", "by access role",
                 [("summary", "Calendar name")], ops=("list", "get", "create", "delete"))
    for name, desc, style, voice in [
        ("google-calendar", "Google Calendar events and calendars", "snake", "standard"),
        ("outlook-calendar", "Outlook calendar and meetings", "camel", "agent"),
    ]:
        srv = server(name, desc, ["calendar"], style, voice)
        add(srv, entity_tools(srv, event) + entity_tools(srv, calendar) + custom(srv, [
            ("find", "free slots", "Find times when all the given people are free, within working hours.", [("attendees", "People"), ("duration", "Meeting length in minutes")]),
            ("get", "free busy", "Get busy intervals for a set of calendars.", [("time_min", "Start"), ("time_max", "End")]),
            ("respond", "to event", "Accept, decline or tentatively accept a meeting invitation.", [("response", "accepted, declined or tentative")]),
            ("quick", "add event", "Create an event from a natural-language sentence like 'Lunch with Ana tomorrow at 1pm'.", [("text", "Sentence")]),
            ("list", "upcoming events", "List the next events on the primary calendar.", [("max_results", "How many")]),
        ]))
    cal = server("calendly", "Calendly scheduling links and bookings", ["calendar", "scheduling"], "kebab", "terse")
    add(cal, custom(cal, [
        ("list", "event types", "List your Calendly event types.", []),
        ("create", "scheduling link", "Create a single-use scheduling link for an event type.", [("event_type", "Event type URI")]),
        ("list", "scheduled events", "List booked meetings.", [("min_start_time", "From")]),
        ("cancel", "event", "Cancel a booked meeting.", [("uuid", "Event UUID"), ("reason", "Reason")]),
        ("get", "invitee", "Get who booked a meeting and their answers.", [("uuid", "Invitee UUID")]),
    ]))

    # ---------------------------------------------------------------- cloud storage
    file_ent = E("file", "files", "in the drive", "name, MIME type, size, owners, modified time and sharing link",
                 "by name, type or folder", [("parent_id", "Folder ID"), ("name", "File name"), ("mime_type", "MIME type")])
    folder = E("folder", "folders", "in the drive", "name, path and item count", "by parent", [("parent_id", "Parent folder")],
               ops=("list", "create", "delete"))
    for name, desc, style, voice in [
        ("google-drive", "Google Drive files and folders", "snake", "verbose"),
        ("dropbox", "Dropbox files, folders and sharing", "camel", "standard"),
        ("box", "Box enterprise content", "prefixed", "terse"),
    ]:
        srv = server(name, desc, ["files", "storage"], style, voice)
        add(srv, entity_tools(srv, file_ent) + entity_tools(srv, folder) + custom(srv, [
            ("download", "file", "Download a file's content.", [("file_id", "File ID"), ("export_format", "Export format for documents")]),
            ("upload", "file", "Upload a local file.", [("path", "Local path"), ("parent_id", "Destination folder")]),
            ("share", "file", "Share a file or folder with people or create a link.", [("email", "Person to share with"), ("role", "reader, commenter or writer")]),
            ("move", "file", "Move a file to another folder.", [("destination", "Folder ID")]),
            ("copy", "file", "Make a copy of a file.", [("name", "Name of the copy")]),
            ("list", "file revisions", "List the previous versions of a file.", [("file_id", "File ID")]),
            ("restore", "file", "Restore a file from the trash.", [("file_id", "File ID")]),
            ("get", "storage quota", "Get used and total storage for the account.", []),
        ]))

    # ---------------------------------------------------------------- databases
    for name, desc, style, voice, dialect in [
        ("postgres", "PostgreSQL database (read-write)", "snake", "standard", "PostgreSQL"),
        ("mysql", "MySQL / MariaDB database", "snake", "terse", "MySQL"),
        ("sqlite", "Local SQLite database file", "snake", "agent", "SQLite"),
        ("bigquery", "Google BigQuery data warehouse", "snake", "verbose", "BigQuery Standard SQL"),
    ]:
        srv = server(name, desc, ["database", "sql"], style, voice)
        add(srv, custom(srv, [
            ("query", "", f"Run a read-only SQL query against the {dialect} database and return the rows.", [("sql", "SELECT statement")]),
            ("execute", "", f"Execute a {dialect} statement that changes data (INSERT, UPDATE, DELETE) or schema.", [("sql", "SQL statement")]),
            ("list", "tables", "List the tables in a schema or dataset.", [("schema", "Schema name")]),
            ("describe", "table", "Describe a table: columns, types, nullability, keys and indexes.", [("table", "Table name")]),
            ("list", "schemas", "List schemas (namespaces) in the database.", []),
            ("explain", "query", "Show the execution plan of a query without running it.", [("sql", "Query")]),
            ("create", "table", "Create a new table from a column definition list.", [("table", "Name"), ("columns", "Column definitions")]),
            ("insert", "rows", "Insert one or more rows into a table.", [("table", "Table"), ("rows", "Rows as objects")]),
            ("export", "table csv", "Export a table or query result to CSV.", [("table", "Table")]),
            ("get", "table stats", "Row count, size on disk and last vacuum/analyze time of a table.", [("table", "Table")]),
        ]))
    mongo = server("mongodb", "MongoDB collections and documents", ["database", "nosql"], "camel", "standard")
    add(mongo, custom(mongo, [
        ("find", "documents", "Find documents in a collection matching a filter.", [("collection", "Collection"), ("filter", "Query filter document")]),
        ("insert", "document", "Insert a document into a collection.", [("document", "Document")]),
        ("update", "documents", "Update documents matching a filter.", [("update", "Update operators")]),
        ("delete", "documents", "Delete documents matching a filter.", [("filter", "Filter")]),
        ("aggregate", "", "Run an aggregation pipeline on a collection.", [("pipeline", "Stages")]),
        ("list", "collections", "List collections in a database.", [("database", "Database")]),
        ("list", "databases", "List databases on the cluster.", []),
        ("count", "documents", "Count documents matching a filter.", [("filter", "Filter")]),
        ("create", "index", "Create an index on a collection.", [("keys", "Index keys")]),
        ("collection", "schema", "Infer the schema of a collection from a sample of documents.", [("collection", "Collection")]),
    ]))
    redis = server("redis", "Redis key-value store", ["database", "cache"], "snake", "terse")
    add(redis, custom(redis, [
        ("get", "", "Get the value of a key.", [("key", "Key")]),
        ("set", "", "Set a key to a value with an optional expiry.", [("key", "Key"), ("value", "Value"), ("ex", "Expiry seconds")]),
        ("delete", "", "Delete one or more keys.", [("keys", "Keys")]),
        ("list", "keys", "List keys matching a pattern.", [("pattern", "Glob pattern")]),
        ("hget", "", "Get a field of a hash.", [("key", "Key"), ("field", "Field")]),
        ("hset", "", "Set fields of a hash.", [("key", "Key")]),
        ("lpush", "", "Prepend values to a list.", [("key", "Key")]),
        ("publish", "", "Publish a message to a pub/sub channel.", [("channel", "Channel"), ("message", "Message")]),
        ("info", "", "Server information and statistics: memory, clients, keyspace.", []),
        ("ttl", "", "Get the remaining time to live of a key.", [("key", "Key")]),
    ]))
    es = server("elasticsearch", "Elasticsearch / OpenSearch cluster", ["database", "search"], "snake", "verbose")
    add(es, custom(es, [
        ("search", "", "Run a Query DSL search against an index and return hits with scores.", [("index", "Index"), ("query", "Query DSL")]),
        ("list", "indices", "List indices with document counts, size and health.", []),
        ("get", "mappings", "Get the field mappings of an index.", [("index", "Index")]),
        ("index", "document", "Add or replace a document in an index.", [("index", "Index"), ("document", "Body")]),
        ("cluster", "health", "Get cluster health: status, nodes, shards.", []),
        ("delete", "by query", "Delete all documents matching a query.", [("query", "Query DSL")]),
    ]))

    # ---------------------------------------------------------------- cloud / infra
    aws = server("aws", "Amazon Web Services: EC2, S3, Lambda, CloudWatch, IAM, cost", ["cloud", "aws"], "snake", "standard")
    add(aws, custom(aws, [
        ("s3", "list buckets", "List S3 buckets in the account.", []),
        ("s3", "list objects", "List objects in an S3 bucket under a prefix.", [("bucket", "Bucket"), ("prefix", "Key prefix")]),
        ("s3", "get object", "Download an object from S3.", [("bucket", "Bucket"), ("key", "Object key")]),
        ("s3", "put object", "Upload an object to S3.", [("bucket", "Bucket"), ("key", "Key"), ("body", "Content")]),
        ("s3", "delete object", "Delete an object from S3.", [("bucket", "Bucket"), ("key", "Key")]),
        ("s3", "presign url", "Create a time-limited presigned URL for an object.", [("expires_in", "Seconds")]),
        ("ec2", "describe instances", "Describe EC2 instances with state, type, IPs and tags.", [("filters", "Filters")]),
        ("ec2", "start instances", "Start stopped EC2 instances.", [("instance_ids", "Instance IDs")]),
        ("ec2", "stop instances", "Stop running EC2 instances.", [("instance_ids", "Instance IDs")]),
        ("ec2", "reboot instances", "Reboot EC2 instances.", [("instance_ids", "Instance IDs")]),
        ("lambda", "invoke", "Invoke a Lambda function synchronously and return its result.", [("function_name", "Function"), ("payload", "JSON payload")]),
        ("lambda", "list functions", "List Lambda functions with runtime and last modified time.", []),
        ("cloudwatch", "get metric data", "Get CloudWatch metric statistics over a time range.", [("namespace", "Namespace"), ("metric_name", "Metric")]),
        ("cloudwatch", "query logs", "Run a CloudWatch Logs Insights query.", [("log_group", "Log group"), ("query", "Insights query")]),
        ("iam", "list users", "List IAM users.", []),
        ("iam", "create access key", "Create an access key for an IAM user.", [("user_name", "User")]),
        ("cost", "get cost and usage", "Get AWS spend grouped by service or tag for a period.", [("start", "Start date"), ("end", "End date"), ("group_by", "SERVICE or TAG")]),
        ("sqs", "send message", "Send a message to an SQS queue.", [("queue_url", "Queue URL"), ("body", "Message body")]),
        ("sns", "publish", "Publish a notification to an SNS topic.", [("topic_arn", "Topic"), ("message", "Message")]),
        ("route53", "list records", "List DNS records of a hosted zone.", [("zone_id", "Hosted zone")]),
        ("dynamodb", "query", "Query a DynamoDB table by partition key.", [("table", "Table"), ("key_condition", "Key condition")]),
        ("secretsmanager", "get secret", "Read a secret value from Secrets Manager.", [("secret_id", "Secret")]),
    ]))
    gcp = server("gcp", "Google Cloud: Compute Engine, Cloud Storage, Cloud Run, logging, billing", ["cloud", "gcp"], "snake", "terse")
    add(gcp, custom(gcp, [
        ("list", "compute instances", "List Compute Engine VMs.", [("zone", "Zone")]),
        ("start", "compute instance", "Start a VM.", [("instance", "Name")]),
        ("stop", "compute instance", "Stop a VM.", [("instance", "Name")]),
        ("list", "storage buckets", "List Cloud Storage buckets.", []),
        ("upload", "storage object", "Upload an object to a bucket.", [("bucket", "Bucket"), ("name", "Object name")]),
        ("deploy", "cloud run service", "Deploy a container image to Cloud Run.", [("image", "Image"), ("service", "Service")]),
        ("list", "cloud run services", "List Cloud Run services and their URLs.", []),
        ("query", "logs", "Read log entries with a Logging filter.", [("filter", "Filter")]),
        ("get", "billing summary", "Current month spend per project.", []),
        ("list", "projects", "List projects you can access.", []),
    ]))
    azure = server("azure", "Microsoft Azure resources", ["cloud", "azure", "microsoft"], "camel", "verbose")
    add(azure, custom(azure, [
        ("list", "resource groups", "Lists all resource groups in the subscription with their location and provisioning state.", []),
        ("list", "virtual machines", "Lists virtual machines in a resource group, including power state and size.", [("resourceGroup", "Resource group")]),
        ("start", "virtual machine", "Starts a deallocated or stopped virtual machine.", [("name", "VM name")]),
        ("list", "storage accounts", "Lists storage accounts in the subscription.", []),
        ("list", "blobs", "Lists blobs in a storage container.", [("container", "Container")]),
        ("deploy", "template", "Deploys an ARM or Bicep template to a resource group.", [("template", "Template")]),
        ("get", "cost analysis", "Returns accumulated cost for the subscription, grouped by resource type.", [("timeframe", "MonthToDate or custom")]),
        ("query", "log analytics", "Runs a KQL query against a Log Analytics workspace.", [("query", "KQL")]),
    ]))
    k8s = server("kubernetes", "Kubernetes cluster via kubectl", ["cloud", "k8s", "containers"], "snake", "standard")
    add(k8s, custom(k8s, [
        ("list", "pods", "List pods in a namespace with status, restarts and age.", [("namespace", "Namespace"), ("label_selector", "Label selector")]),
        ("get", "pod logs", "Get the logs of a pod's container.", [("pod", "Pod"), ("container", "Container"), ("tail_lines", "Lines")]),
        ("describe", "pod", "Describe a pod: events, conditions, containers.", [("pod", "Pod")]),
        ("delete", "pod", "Delete a pod (its controller recreates it).", [("pod", "Pod")]),
        ("list", "deployments", "List deployments with ready replicas.", [("namespace", "Namespace")]),
        ("scale", "deployment", "Change the number of replicas of a deployment.", [("replicas", "Replica count")]),
        ("rollout", "restart", "Restart a deployment's pods with a rolling update.", [("deployment", "Deployment")]),
        ("rollout", "undo", "Roll a deployment back to its previous revision.", [("deployment", "Deployment")]),
        ("apply", "manifest", "Apply a YAML manifest to the cluster.", [("manifest", "YAML")]),
        ("list", "services", "List services with their cluster IPs and ports.", [("namespace", "Namespace")]),
        ("list", "namespaces", "List namespaces.", []),
        ("get", "events", "Get recent cluster events, warnings first.", [("namespace", "Namespace")]),
        ("exec", "in pod", "Run a command inside a pod's container.", [("command", "Command")]),
        ("port", "forward", "Forward a local port to a pod.", [("local_port", "Local port"), ("pod_port", "Pod port")]),
        ("get", "node metrics", "CPU and memory usage of nodes.", []),
        ("helm", "install", "Install a Helm chart as a release.", [("chart", "Chart"), ("release", "Release name")]),
        ("helm", "list", "List Helm releases.", []),
        ("create", "secret", "Create a Kubernetes secret from literal values.", [("name", "Secret name"), ("data", "Key/value pairs")]),
    ]))
    docker = server("docker", "Local Docker engine", ["containers"], "snake", "terse")
    add(docker, custom(docker, [
        ("list", "containers", "List containers.", [("all", "Include stopped")]),
        ("run", "container", "Run a new container from an image.", [("image", "Image"), ("ports", "Port mappings")]),
        ("stop", "container", "Stop a running container.", [("container", "ID or name")]),
        ("remove", "container", "Remove a container.", [("container", "ID or name")]),
        ("container", "logs", "Fetch the logs of a container.", [("container", "ID or name"), ("tail", "Lines")]),
        ("list", "images", "List local images.", []),
        ("pull", "image", "Pull an image from a registry.", [("image", "Image")]),
        ("build", "image", "Build an image from a Dockerfile.", [("path", "Build context"), ("tag", "Tag")]),
        ("remove", "image", "Remove a local image.", [("image", "Image")]),
        ("list", "volumes", "List volumes.", []),
        ("container", "stats", "Live CPU, memory and network usage of containers.", []),
        ("compose", "up", "Start the services of a compose file.", [("file", "Compose file")]),
    ]))
    tf = server("terraform", "Terraform workspaces and registry", ["cloud", "iac"], "snake", "verbose")
    add(tf, custom(tf, [
        ("plan", "", "Runs terraform plan in a working directory and returns the proposed changes.", [("dir", "Directory")]),
        ("apply", "", "Applies the planned changes to real infrastructure. Requires confirmation.", [("dir", "Directory")]),
        ("list", "workspaces", "Lists Terraform Cloud workspaces in an organization.", [("organization", "Organization")]),
        ("search", "modules", "Searches the public Terraform registry for modules.", [("query", "Keywords")]),
        ("get", "provider docs", "Returns documentation for a provider resource.", [("provider", "Provider"), ("resource", "Resource type")]),
        ("show", "state", "Shows the resources recorded in the state file.", [("dir", "Directory")]),
    ]))
    cf = server("cloudflare", "Cloudflare DNS, Workers and cache", ["cloud", "dns", "cdn"], "snake", "standard")
    add(cf, custom(cf, [
        ("list", "zones", "List the zones (domains) in the account.", []),
        ("list", "dns records", "List DNS records for a zone.", [("zone_id", "Zone")]),
        ("create", "dns record", "Create a DNS record (A, CNAME, TXT, MX...).", [("type", "Record type"), ("name", "Name"), ("content", "Value")]),
        ("delete", "dns record", "Delete a DNS record.", [("record_id", "Record")]),
        ("purge", "cache", "Purge cached files for a zone, all or by URL.", [("files", "URLs")]),
        ("deploy", "worker", "Deploy a Worker script.", [("script", "JavaScript")]),
        ("get", "zone analytics", "Requests, bandwidth and threats for a zone.", [("since", "From")]),
    ]))
    vercel = server("vercel", "Vercel deployments and projects", ["cloud", "hosting"], "kebab", "terse")
    add(vercel, custom(vercel, [
        ("list", "deployments", "List deployments.", [("project", "Project")]),
        ("get", "deployment", "Get a deployment's status and URL.", [("id", "Deployment ID")]),
        ("create", "deployment", "Deploy a project.", [("project", "Project"), ("target", "production or preview")]),
        ("get", "build logs", "Get build logs of a deployment.", [("id", "Deployment ID")]),
        ("list", "projects", "List projects.", []),
        ("add", "domain", "Attach a domain to a project.", [("domain", "Domain")]),
        ("set", "env var", "Set an environment variable on a project.", [("key", "Name"), ("value", "Value")]),
    ]))

    # ---------------------------------------------------------------- observability and incidents
    sentry = server("sentry", "Sentry error tracking", ["monitoring", "errors"], "snake", "standard")
    add(sentry, custom(sentry, [
        ("list", "issues", "List error issues in a project, most frequent first.", [("project", "Project"), ("query", "Search query")]),
        ("get", "issue details", "Get an error issue with its latest event, stack trace and tags.", [("issue_id", "Issue ID")]),
        ("resolve", "issue", "Mark an error issue as resolved.", [("issue_id", "Issue ID")]),
        ("list", "releases", "List releases and their new error counts.", [("project", "Project")]),
        ("get", "event", "Get one error event with breadcrumbs.", [("event_id", "Event ID")]),
        ("list", "projects", "List Sentry projects.", []),
    ]))
    dd = server("datadog", "Datadog metrics, monitors, logs and dashboards", ["monitoring", "metrics"], "snake", "verbose")
    add(dd, custom(dd, [
        ("query", "metrics", "Queries timeseries metric data for a time range using the Datadog metrics query language.", [("query", "Metrics query"), ("from", "Start"), ("to", "End")]),
        ("list", "monitors", "Lists monitors with their current alert state.", [("group_states", "alert, warn, no data")]),
        ("mute", "monitor", "Mutes a monitor so it stops notifying, optionally until a given time.", [("monitor_id", "Monitor"), ("end", "Unmute at")]),
        ("search", "logs", "Searches logs with the log query syntax and returns matching entries.", [("query", "Log query")]),
        ("list", "dashboards", "Lists dashboards.", []),
        ("create", "monitor", "Creates a monitor that alerts when a metric crosses a threshold.", [("query", "Monitor query"), ("message", "Notification message")]),
        ("list", "hosts", "Lists infrastructure hosts reporting to Datadog.", []),
        ("get", "slo", "Gets a service level objective and its error budget.", [("slo_id", "SLO")]),
    ]))
    grafana = server("grafana", "Grafana dashboards and alerting", ["monitoring", "dashboards"], "snake", "terse")
    add(grafana, custom(grafana, [
        ("search", "dashboards", "Search dashboards by title or tag.", [("query", "Text")]),
        ("get", "dashboard", "Get a dashboard by UID.", [("uid", "UID")]),
        ("query", "prometheus", "Run a PromQL query.", [("expr", "PromQL"), ("range", "Time range")]),
        ("query", "loki", "Run a LogQL query.", [("expr", "LogQL")]),
        ("list", "alert rules", "List alert rules and state.", []),
        ("create", "annotation", "Add an annotation to a dashboard.", [("text", "Text")]),
    ]))
    pd = server("pagerduty", "PagerDuty incidents and on-call", ["incidents", "oncall"], "snake", "standard")
    add(pd, custom(pd, [
        ("list", "incidents", "List open incidents with urgency and assignee.", [("statuses", "triggered, acknowledged, resolved")]),
        ("create", "incident", "Trigger a new incident on a service.", [("service_id", "Service"), ("title", "Title"), ("urgency", "high or low")]),
        ("acknowledge", "incident", "Acknowledge an incident so escalation stops.", [("incident_id", "Incident")]),
        ("resolve", "incident", "Resolve an incident.", [("incident_id", "Incident")]),
        ("list", "oncalls", "List who is on call now for each escalation policy.", [("schedule_ids", "Schedules")]),
        ("get", "schedule", "Get an on-call schedule with its layers and overrides.", [("schedule_id", "Schedule")]),
        ("add", "incident note", "Add a note to an incident timeline.", [("content", "Note")]),
        ("list", "services", "List services.", []),
    ]))

    # ---------------------------------------------------------------- payments
    customer = E("customer", "customers", "in the account", "name, email, default payment method and balance", "by email",
                 [("email", "Email"), ("name", "Name")])
    for name, desc, style, voice in [
        ("stripe", "Stripe payments, customers, invoices and subscriptions", "snake", "standard"),
        ("paypal", "PayPal payments and invoicing", "camel", "verbose"),
        ("square", "Square point-of-sale payments", "snake", "terse"),
    ]:
        srv = server(name, desc, ["payments", "finance"], style, voice)
        invoice = E("invoice", "invoices", "for a customer", "line items, amount due, status and due date", "by status or customer",
                    [("customer", "Customer ID"), ("due_date", "Due date")], ops=("list", "get", "create", "update", "delete"))
        add(srv, entity_tools(srv, customer) + entity_tools(srv, invoice) + custom(srv, [
            ("create", "payment intent", "Create a payment for an amount in a currency.", [("amount", "Amount in the smallest unit"), ("currency", "ISO currency")]),
            ("create", "refund", "Refund a charge fully or partially.", [("charge", "Charge or payment ID"), ("amount", "Amount to refund")]),
            ("list", "charges", "List recent charges.", [("customer", "Customer")]),
            ("send", "invoice", "Email an invoice to the customer.", [("invoice_id", "Invoice")]),
            ("create", "subscription", "Subscribe a customer to a recurring price.", [("customer", "Customer"), ("price", "Price ID")]),
            ("cancel", "subscription", "Cancel a subscription now or at period end.", [("subscription", "Subscription")]),
            ("list", "subscriptions", "List subscriptions and their status.", [("status", "Status")]),
            ("get", "balance", "Get the account's available and pending balance.", []),
            ("create", "payment link", "Create a shareable checkout link for a product.", [("price", "Price")]),
            ("list", "disputes", "List payment disputes (chargebacks).", []),
            ("create", "product", "Create a product in the catalog.", [("name", "Name")]),
            ("create", "coupon", "Create a discount coupon.", [("percent_off", "Percent off")]),
            ("list", "payouts", "List payouts to the bank account.", []),
        ]))

    # ---------------------------------------------------------------- CRM
    contact = E("contact", "contacts", "in the CRM", "name, email, phone, company, owner and lifecycle stage", "by owner or lifecycle stage",
                [("email", "Email"), ("firstname", "First name"), ("lastname", "Last name"), ("phone", "Phone")])
    company = E("company", "companies", "in the CRM", "name, domain, industry, size and owner", "by industry",
                [("domain", "Website domain"), ("industry", "Industry")])
    deal = E("deal", "deals", "in the sales pipeline", "amount, stage, close date and associated contacts", "by stage or owner",
             [("pipeline", "Pipeline"), ("amount", "Amount"), ("dealstage", "Stage")])
    for name, desc, style, voice in [
        ("hubspot", "HubSpot CRM: contacts, companies, deals, notes", "snake", "standard"),
        ("salesforce", "Salesforce CRM objects and SOQL", "pascal", "verbose"),
        ("pipedrive", "Pipedrive sales CRM", "snake", "terse"),
    ]:
        srv = server(name, desc, ["crm", "sales"], style, voice)
        add(srv, entity_tools(srv, contact) + entity_tools(srv, company) + entity_tools(srv, deal) + custom(srv, [
            ("create", "note", "Attach a note to a contact, company or deal.", [("body", "Note text"), ("object_id", "Record")]),
            ("log", "call", "Log a phone call with a contact.", [("duration", "Minutes"), ("outcome", "Outcome")]),
            ("create", "task", "Create a follow-up task for a sales rep.", [("subject", "Subject"), ("due_date", "Due")]),
            ("list", "pipelines", "List sales pipelines and their stages.", []),
            ("associate", "records", "Link two CRM records, e.g. a contact to a company.", [("from_id", "From"), ("to_id", "To")]),
            ("list", "owners", "List CRM users who can own records.", []),
        ]))
    sf = [s for s in g["SERVERS"] if s["name"] == "salesforce"][0]
    sf["tools"].append(g["tool"]("RunSoqlQuery", "Executes a SOQL query and returns matching records. Use for any object, including custom objects.", {"soql": {"type": "string", "description": "SOQL"}}))

    # ---------------------------------------------------------------- support tickets
    ticket = E("ticket", "tickets", "in the help desk", "subject, requester, status, priority, assignee and conversation", "by status, priority or requester",
               [("subject", "Subject"), ("priority", "low, normal, high, urgent"), ("requester_email", "Requester")])
    for name, desc, style, voice in [
        ("zendesk", "Zendesk customer support", "snake", "standard"),
        ("freshdesk", "Freshdesk help desk", "camel", "terse"),
        ("intercom", "Intercom conversations and contacts", "snake", "agent"),
    ]:
        srv = server(name, desc, ["support", "tickets"], style, voice)
        add(srv, entity_tools(srv, ticket) + custom(srv, [
            ("reply", "to ticket", "Send a public reply to the customer on a ticket.", [("body", "Reply")]),
            ("add", "internal note", "Add a private note to a ticket, visible to agents only.", [("body", "Note")]),
            ("assign", "ticket", "Assign a ticket to an agent or group.", [("assignee", "Agent")]),
            ("merge", "tickets", "Merge duplicate tickets into one.", [("source_ids", "Tickets to merge"), ("target_id", "Ticket to keep")]),
            ("get", "satisfaction ratings", "List CSAT ratings customers left.", []),
            ("search", "help center articles", "Search knowledge-base articles for an answer.", [("query", "Question")]),
            ("list", "macros", "List canned responses (macros).", []),
        ]))

    # ---------------------------------------------------------------- project and task tracking
    for name, desc, style, voice, work, container in [
        ("jira", "Jira Software issues, sprints and projects", "snake", "verbose", ("issue", "issues"), "project"),
        ("linear", "Linear issues, cycles and projects", "camel", "standard", ("issue", "issues"), "team"),
        ("asana", "Asana tasks and projects", "snake", "terse", ("task", "tasks"), "project"),
        ("trello", "Trello boards, lists and cards", "camel", "standard", ("card", "cards"), "board"),
        ("clickup", "ClickUp tasks, lists and spaces", "snake", "agent", ("task", "tasks"), "list"),
        ("todoist", "Todoist personal to-do lists", "snake", "terse", ("task", "tasks"), "project"),
    ]:
        srv = server(name, desc, ["projects", "tasks"], style, voice)
        work_ent = E(work[0], work[1], f"in a {container}", "title, description, status, assignee, priority and due date",
                     "by status, assignee or label", [(container + "_id", container.capitalize()), ("title", "Title"), ("assignee", "Assignee"), ("due_date", "Due date")])
        cont_ent = E(container, container + "s", "in the workspace", "name, owner and member list", "by name", [("name", "Name")], ops=("list", "get", "create"))
        extras = [
            ("add", "comment", f"Add a comment to a {work[0]}.", [("body", "Comment")]),
            ("assign", work[0], f"Assign a {work[0]} to a person.", [("assignee", "User")]),
            ("transition", work[0], f"Move a {work[0]} to another status or column (e.g. In Progress, Done).", [("status", "Target status")]),
            ("list", "comments", f"List the comments on a {work[0]}.", []),
        ]
        if name in ("jira", "linear"):
            extras += [("list", "sprints" if name == "jira" else "cycles", "List sprints/cycles with start and end dates.", []),
                       ("get", "active sprint" if name == "jira" else "current cycle", "Get the current iteration and its issues.", []),
                       ("log", "work", "Log time spent on an issue.", [("time_spent", "e.g. 2h 30m")]),
                       ("link", "issues", "Link two issues (blocks, relates to, duplicates).", [("type", "Link type")])]
        if name == "todoist":
            extras += [("complete", "task", "Mark a task as done.", [("task_id", "Task")]),
                       ("get", "today", "Tasks due today and overdue.", [])]
        if name == "trello":
            extras += [("move", "card", "Move a card to another list.", [("list_id", "Target list")]),
                       ("add", "checklist", "Add a checklist to a card.", [("items", "Items")]),
                       ("archive", "card", "Archive a card.", [])]
        add(srv, entity_tools(srv, work_ent) + entity_tools(srv, cont_ent) + custom(srv, extras))

    # ---------------------------------------------------------------- docs, wikis, notes
    notion = server("notion", "Notion pages and databases", ["docs", "notes", "wiki"], "snake", "standard")
    add(notion, custom(notion, [
        ("search", "", "Search pages and databases shared with the integration by title.", [("query", "Text")]),
        ("get", "page", "Retrieve a page's properties.", [("page_id", "Page")]),
        ("get", "page content", "Retrieve the blocks (content) of a page.", [("page_id", "Page")]),
        ("create", "page", "Create a page under a parent page or database.", [("parent", "Parent"), ("title", "Title"), ("content", "Markdown content")]),
        ("update", "page", "Update page properties.", [("properties", "Properties")]),
        ("append", "blocks", "Append content blocks to a page.", [("children", "Blocks")]),
        ("query", "database", "Query a database with filters and sorts.", [("database_id", "Database"), ("filter", "Filter")]),
        ("create", "database", "Create a database as a subpage.", [("title", "Title")]),
        ("archive", "page", "Move a page to the trash.", [("page_id", "Page")]),
        ("create", "comment", "Comment on a page.", [("rich_text", "Comment")]),
        ("list", "users", "List workspace members.", []),
    ]))
    conf = server("confluence", "Confluence wiki spaces and pages", ["docs", "wiki"], "snake", "verbose")
    add(conf, custom(conf, [
        ("search", "", "Searches Confluence content using CQL and returns page titles, spaces and excerpts.", [("cql", "CQL query")]),
        ("get", "page", "Returns a page's body in storage format along with its version and ancestors.", [("page_id", "Page")]),
        ("create", "page", "Creates a page in a space, optionally under a parent page.", [("space_key", "Space"), ("title", "Title"), ("body", "Body")]),
        ("update", "page", "Updates the title or body of a page, creating a new version.", [("page_id", "Page"), ("body", "Body")]),
        ("list", "spaces", "Lists spaces the user can see.", []),
        ("get", "page children", "Returns the child pages of a page.", [("page_id", "Page")]),
        ("add", "label", "Adds a label to a page.", [("label", "Label")]),
    ]))
    for name, desc, style in [("obsidian", "Obsidian vault notes (local Markdown)", "snake"), ("evernote", "Evernote notebooks and notes", "camel")]:
        srv = server(name, desc, ["notes"], style, "terse")
        add(srv, custom(srv, [
            ("search", "notes", "Search notes by text.", [("query", "Text")]),
            ("read", "note", "Read a note.", [("path", "Note path or ID")]),
            ("create", "note", "Create a note.", [("title", "Title"), ("content", "Markdown")]),
            ("append", "to note", "Append text to a note.", [("content", "Text")]),
            ("list", "notes", "List notes in a folder or notebook.", [("folder", "Folder")]),
            ("delete", "note", "Delete a note.", [("path", "Note")]),
            ("list", "tags", "List tags used in notes.", []),
        ]))
    gdocs = server("google-docs", "Google Docs documents", ["docs", "office"], "snake", "standard")
    add(gdocs, custom(gdocs, [
        ("create", "document", "Create a new Google Doc with a title and optional initial text.", [("title", "Title"), ("text", "Text")]),
        ("read", "document", "Read the text of a Google Doc.", [("document_id", "Document")]),
        ("append", "text", "Append text at the end of a document.", [("text", "Text")]),
        ("replace", "text", "Find and replace text throughout a document.", [("find", "Text to find"), ("replace_with", "Replacement")]),
        ("insert", "table", "Insert a table into a document.", [("rows", "Rows"), ("columns", "Columns")]),
        ("export", "document pdf", "Export a document as PDF.", [("document_id", "Document")]),
    ]))
    sheets = server("google-sheets", "Google Sheets spreadsheets", ["docs", "office", "spreadsheets"], "snake", "standard")
    add(sheets, custom(sheets, [
        ("create", "spreadsheet", "Create a spreadsheet.", [("title", "Title")]),
        ("read", "range", "Read cell values from a range like Sheet1!A1:D20.", [("range", "A1 range")]),
        ("write", "range", "Write values to a range of cells.", [("range", "A1 range"), ("values", "Rows of values")]),
        ("append", "rows", "Append rows after the last row with data.", [("values", "Rows")]),
        ("list", "sheets", "List the tabs of a spreadsheet.", []),
        ("add", "sheet", "Add a new tab.", [("title", "Tab name")]),
        ("clear", "range", "Clear the values of a range.", [("range", "A1 range")]),
        ("format", "cells", "Apply bold, colours or number formats to cells.", [("format", "Format")]),
        ("create", "chart", "Create a chart from a data range.", [("type", "Chart type")]),
    ]))
    excel = server("excel", "Microsoft Excel workbooks in OneDrive", ["office", "spreadsheets", "microsoft"], "camel", "terse")
    add(excel, custom(excel, [
        ("list", "worksheets", "List worksheets.", []),
        ("get", "range", "Get cell values.", [("address", "Range address")]),
        ("update", "range", "Set cell values.", [("address", "Range"), ("values", "Values")]),
        ("add", "table row", "Add a row to a table.", [("values", "Values")]),
        ("calculate", "", "Recalculate the workbook.", []),
    ]))
    slides = server("google-slides", "Google Slides presentations", ["office"], "snake", "terse")
    add(slides, custom(slides, [
        ("create", "presentation", "Create a presentation.", [("title", "Title")]),
        ("add", "slide", "Add a slide with a layout.", [("layout", "Layout")]),
        ("get", "presentation", "Get slides and their text.", []),
        ("replace", "all text", "Replace text on every slide.", [("find", "Text"), ("replace", "Replacement")]),
        ("insert", "image", "Put an image on a slide.", [("url", "Image URL")]),
    ]))
    docusign = server("docusign", "DocuSign e-signature envelopes", ["documents", "esign"], "snake", "standard")
    add(docusign, custom(docusign, [
        ("create", "envelope", "Create and send an envelope of documents for signature.", [("documents", "Documents"), ("signers", "Signers")]),
        ("get", "envelope status", "Check whether an envelope has been signed.", [("envelope_id", "Envelope")]),
        ("list", "envelopes", "List envelopes sent in a date range.", [("from_date", "From")]),
        ("void", "envelope", "Void an envelope that is in progress.", [("reason", "Reason")]),
        ("download", "signed document", "Download the completed, signed PDF.", [("envelope_id", "Envelope")]),
        ("list", "templates", "List reusable templates.", []),
    ]))

    # ---------------------------------------------------------------- web search, fetch, knowledge
    for name, desc, style, voice, what in [
        ("brave-search", "Brave web and local search", "snake", "verbose", "the web"),
        ("tavily", "Tavily search API for agents", "snake", "agent", "the web"),
        ("exa", "Exa neural web search", "snake", "standard", "the web"),
    ]:
        srv = server(name, desc, ["search", "web"], style, voice)
        specs = [("web", "search", f"Search {what} and return titles, URLs and snippets of the top results.", [("query", "Query"), ("count", "Results")])]
        if name == "brave-search":
            specs += [("local", "search", "Search for local businesses and places (restaurants, shops) with ratings, hours and addresses.", [("query", "Query")]),
                      ("news", "search", "Search recent news articles.", [("query", "Query"), ("freshness", "Time window")]),
                      ("image", "search", "Search for images.", [("query", "Query")])]
        if name == "tavily":
            specs += [("extract", "", "Extract the main content of web pages given their URLs.", [("urls", "URLs")]),
                      ("crawl", "", "Crawl a site from a start URL and return page contents.", [("url", "Start URL"), ("max_depth", "Depth")])]
        if name == "exa":
            specs += [("find", "similar", "Find pages similar to a given URL.", [("url", "URL")]),
                      ("get", "contents", "Get clean text of pages by ID or URL.", [("ids", "IDs")]),
                      ("research", "paper search", "Search academic papers and research.", [("query", "Query")])]
        add(srv, custom(srv, specs))
    fetch = server("fetch", "Fetch URLs and return their content", ["web"], "snake", "standard")
    add(fetch, [g["tool"]("fetch", "Fetches a URL from the internet and optionally extracts its contents as markdown.", {"url": {"type": "string", "description": "URL to fetch"}, "max_length": {"type": "integer", "description": "Maximum number of characters to return"}, "raw": {"type": "boolean", "description": "Get the actual HTML content without simplification"}})])
    fc = server("firecrawl", "Firecrawl scraping and crawling", ["web", "scraping"], "prefixed", "standard")
    add(fc, custom(fc, [
        ("scrape", "", "Scrape a single page and return Markdown, HTML or structured data.", [("url", "URL"), ("formats", "Output formats")]),
        ("crawl", "", "Crawl a website asynchronously and collect every page.", [("url", "Start URL"), ("limit", "Max pages")]),
        ("map", "", "Discover all the URLs of a website quickly.", [("url", "Site")]),
        ("extract", "", "Extract structured data from pages with an LLM and a JSON schema.", [("urls", "URLs"), ("schema", "JSON schema")]),
        ("check", "crawl status", "Check the progress of a crawl job.", [("id", "Job ID")]),
    ]))
    wiki = server("wikipedia", "Wikipedia articles", ["knowledge", "reference"], "snake", "terse")
    add(wiki, custom(wiki, [
        ("search", "", "Search Wikipedia.", [("query", "Query"), ("lang", "Language code")]),
        ("get", "article", "Get the full text of an article.", [("title", "Title")]),
        ("get", "summary", "Get the lead summary of an article.", [("title", "Title")]),
        ("get", "related", "Get related articles.", [("title", "Title")]),
        ("on", "this day", "Historical events that happened on a date.", [("date", "Month and day")]),
    ]))
    arxiv = server("arxiv", "arXiv preprints", ["research", "papers"], "snake", "standard")
    add(arxiv, custom(arxiv, [
        ("search", "papers", "Search arXiv papers by keywords, author or category.", [("query", "Query"), ("category", "e.g. cs.CL")]),
        ("get", "paper", "Get a paper's abstract, authors and PDF link.", [("arxiv_id", "arXiv ID")]),
        ("download", "paper", "Download a paper's PDF and return its text.", [("arxiv_id", "arXiv ID")]),
        ("list", "new submissions", "List today's new submissions in a category.", [("category", "Category")]),
    ]))
    news = server("newsapi", "News headlines and articles from thousands of sources", ["news"], "camel", "standard")
    add(news, custom(news, [
        ("get", "top headlines", "Get breaking top headlines by country or category.", [("country", "Country code"), ("category", "business, sports, technology...")]),
        ("search", "everything", "Search all articles by keyword, source and date range.", [("q", "Keywords"), ("from", "From date")]),
        ("list", "sources", "List news publishers available.", [("language", "Language")]),
    ]))
    hn = server("hackernews", "Hacker News stories and comments", ["news"], "snake", "terse")
    add(hn, custom(hn, [
        ("get", "top stories", "Top stories on the front page.", [("limit", "Count")]),
        ("get", "story", "A story with its comments.", [("id", "Story ID")]),
        ("search", "stories", "Search stories via Algolia.", [("query", "Text")]),
        ("get", "user", "A user's karma and submissions.", [("username", "User")]),
    ]))

    # ---------------------------------------------------------------- browser automation
    browser = server("playwright", "Browser automation with Playwright", ["browser", "web"], "snake", "agent")
    add(browser, custom(browser, [
        ("browser", "navigate", "Navigate the browser to a URL.", [("url", "URL")]),
        ("browser", "click", "Click an element on the page.", [("element", "Human-readable element description"), ("ref", "Element reference")]),
        ("browser", "type", "Type text into an editable element, optionally pressing Enter.", [("text", "Text"), ("submit", "Press Enter")]),
        ("browser", "snapshot", "Capture an accessibility snapshot of the current page; better than a screenshot for acting.", []),
        ("browser", "take screenshot", "Take a screenshot of the current page or an element.", [("full_page", "Whole page")]),
        ("browser", "fill form", "Fill several form fields at once.", [("fields", "Fields")]),
        ("browser", "select option", "Select an option in a dropdown.", [("values", "Values")]),
        ("browser", "hover", "Hover over an element.", [("element", "Element")]),
        ("browser", "press key", "Press a key on the keyboard.", [("key", "Key name")]),
        ("browser", "navigate back", "Go back to the previous page.", []),
        ("browser", "tabs", "List, create, close or select a browser tab.", [("action", "list, new, close, select")]),
        ("browser", "wait for", "Wait for text to appear or disappear, or a time to pass.", [("text", "Text")]),
        ("browser", "evaluate", "Evaluate a JavaScript expression on the page.", [("function", "JavaScript")]),
        ("browser", "pdf save", "Save the page as PDF.", []),
        ("browser", "console messages", "Return all console messages of the page.", []),
        ("browser", "network requests", "List network requests made since the page loaded.", []),
        ("browser", "file upload", "Upload files through a file chooser.", [("paths", "Files")]),
        ("browser", "handle dialog", "Accept or dismiss a dialog (alert, confirm, prompt).", [("accept", "Accept")]),
        ("browser", "close", "Close the page.", []),
        ("browser", "resize", "Resize the browser window.", [("width", "Width"), ("height", "Height")]),
    ]))

    # ---------------------------------------------------------------- weather
    for name, desc, style, voice in [
        ("openweather", "OpenWeatherMap current weather and forecasts", "snake", "standard"),
        ("weatherapi", "WeatherAPI.com weather, astronomy and air quality", "camel", "terse"),
    ]:
        srv = server(name, desc, ["weather"], style, voice)
        add(srv, custom(srv, [
            ("get", "current weather", "Current conditions for a city or coordinates: temperature, humidity, wind, description.", [("location", "City name or lat,lon"), ("units", "metric or imperial")]),
            ("get", "forecast", "Daily and hourly forecast for the next days.", [("location", "City or lat,lon"), ("days", "Number of days")]),
            ("get", "air quality", "Air quality index and pollutant concentrations.", [("location", "City or lat,lon")]),
            ("get", "weather alerts", "Active severe weather warnings for a region.", [("location", "Region")]),
            ("get", "historical weather", "Observed weather on a past date.", [("location", "Place"), ("date", "Date")]),
        ] + ([("get", "astronomy", "Sunrise, sunset, moonrise and moon phase for a date.", [("location", "Place")])] if name == "weatherapi" else [])
            + ([("get", "uv index", "UV index now and forecast.", [("location", "Place")])] if name == "openweather" else [])))
    noaa = server("nws", "US National Weather Service", ["weather"], "kebab", "verbose")
    add(noaa, custom(noaa, [
        ("get", "alerts", "Returns active weather alerts (watches, warnings, advisories) for a US state.", [("state", "Two-letter state code")]),
        ("get", "forecast", "Returns the forecast for a latitude/longitude in the United States, in 12-hour periods.", [("latitude", "Latitude"), ("longitude", "Longitude")]),
    ]))

    # ---------------------------------------------------------------- maps and places
    for name, desc, style, voice in [
        ("google-maps", "Google Maps Platform: geocoding, places, directions", "prefixed", "standard"),
        ("mapbox", "Mapbox geocoding and navigation", "camel", "verbose"),
        ("openstreetmap", "OpenStreetMap Nominatim and routing", "snake", "terse"),
    ]:
        srv = server(name, desc, ["maps", "geo"], style, voice)
        add(srv, custom(srv, [
            ("geocode", "", "Convert an address into latitude and longitude.", [("address", "Address")]),
            ("reverse", "geocode", "Convert coordinates into a street address.", [("latitude", "Latitude"), ("longitude", "Longitude")]),
            ("search", "places", "Search for places (restaurants, shops, landmarks) near a location.", [("query", "What to look for"), ("location", "Near")]),
            ("get", "directions", "Get a route between two places by car, bike, foot or transit with steps and duration.", [("origin", "From"), ("destination", "To"), ("mode", "driving, walking, bicycling, transit")]),
            ("distance", "matrix", "Travel distance and time between many origins and destinations.", [("origins", "Origins"), ("destinations", "Destinations")]),
        ] + ([("get", "place details", "Opening hours, phone, rating and reviews of a place.", [("place_id", "Place")]),
              ("get", "elevation", "Elevation above sea level of a point.", [("locations", "Points")]),
              ("get", "timezone", "Time zone at a location.", [("location", "lat,lng")])] if name == "google-maps" else [])
            + ([("get", "isochrone", "Area reachable from a point within a travel time.", [("minutes", "Minutes")]),
                ("static", "map image", "Render a static map image.", [("center", "Center")])] if name == "mapbox" else [])))

    # ---------------------------------------------------------------- finance and markets
    av = server("alphavantage", "Alpha Vantage stock market data", ["finance", "stocks"], "snake", "standard")
    add(av, custom(av, [
        ("get", "stock quote", "Latest price, change and volume for a ticker.", [("symbol", "Ticker symbol")]),
        ("get", "time series daily", "Daily open, high, low, close and volume history for a ticker.", [("symbol", "Ticker"), ("outputsize", "compact or full")]),
        ("get", "company overview", "Company fundamentals: sector, market cap, P/E ratio, dividend yield.", [("symbol", "Ticker")]),
        ("get", "earnings", "Quarterly and annual earnings per share.", [("symbol", "Ticker")]),
        ("symbol", "search", "Find ticker symbols by company name.", [("keywords", "Company name")]),
        ("get", "technical indicator", "RSI, MACD, SMA and other indicators.", [("function", "Indicator")]),
        ("get", "market news sentiment", "News and sentiment scores for tickers or topics.", [("tickers", "Tickers")]),
    ]))
    yf = server("yahoo-finance", "Yahoo Finance quotes and financials", ["finance", "stocks"], "camel", "terse")
    add(yf, custom(yf, [
        ("get", "quote", "Stock quote.", [("symbol", "Ticker")]),
        ("get", "historical prices", "Price history.", [("symbol", "Ticker"), ("period", "Period")]),
        ("get", "financial statements", "Income statement, balance sheet, cash flow.", [("symbol", "Ticker")]),
        ("get", "options chain", "Options chain for an expiry.", [("symbol", "Ticker")]),
        ("get", "analyst recommendations", "Analyst ratings.", [("symbol", "Ticker")]),
        ("get", "dividends", "Dividend history.", [("symbol", "Ticker")]),
    ]))
    cb = server("coinbase", "Coinbase crypto prices and wallet", ["finance", "crypto"], "snake", "standard")
    add(cb, custom(cb, [
        ("get", "spot price", "Current spot price of a cryptocurrency in a fiat currency.", [("currency_pair", "e.g. BTC-USD")]),
        ("list", "accounts", "List wallets and their balances.", []),
        ("send", "crypto", "Send cryptocurrency to an address or email.", [("to", "Address"), ("amount", "Amount")]),
        ("buy", "crypto", "Buy cryptocurrency with a payment method.", [("amount", "Amount")]),
        ("list", "transactions", "List transactions of a wallet.", [("account_id", "Wallet")]),
        ("get", "exchange rates", "Exchange rates for a base currency.", [("currency", "Base")]),
    ]))
    fx = server("exchange-rates", "Currency exchange rates", ["finance", "currency"], "snake", "terse")
    add(fx, custom(fx, [
        ("convert", "currency", "Convert an amount from one currency to another.", [("from", "From currency"), ("to", "To currency"), ("amount", "Amount")]),
        ("get", "latest rates", "Latest rates for a base currency.", [("base", "Base currency")]),
        ("get", "historical rates", "Rates on a past date.", [("date", "Date")]),
        ("list", "currencies", "Supported currency codes.", []),
    ]))
    for name, desc, style in [("quickbooks", "QuickBooks Online accounting", "snake"), ("xero", "Xero accounting", "camel")]:
        srv = server(name, desc, ["finance", "accounting"], style, "standard")
        add(srv, custom(srv, [
            ("create", "invoice", "Create a sales invoice for a customer.", [("customer", "Customer"), ("lines", "Line items")]),
            ("list", "invoices", "List invoices, optionally only unpaid or overdue.", [("status", "Status")]),
            ("create", "bill", "Record a bill from a vendor.", [("vendor", "Vendor")]),
            ("record", "expense", "Record an expense with category and receipt.", [("amount", "Amount"), ("category", "Account")]),
            ("get", "profit and loss", "Profit and loss report for a period.", [("start_date", "From"), ("end_date", "To")]),
            ("get", "balance sheet", "Balance sheet as of a date.", [("date", "As of")]),
            ("list", "accounts", "Chart of accounts.", []),
            ("reconcile", "transaction", "Match a bank transaction to a ledger entry.", [("transaction_id", "Bank transaction")]),
            ("list", "vendors", "List suppliers.", []),
        ]))
    plaid = server("plaid", "Bank accounts via Plaid", ["finance", "banking"], "snake", "verbose")
    add(plaid, custom(plaid, [
        ("get", "accounts", "Returns the linked bank accounts with their current and available balances.", []),
        ("get", "transactions", "Returns bank transactions in a date range with merchant and category.", [("start_date", "From"), ("end_date", "To")]),
        ("get", "identity", "Returns account holder names, emails and addresses on file at the bank.", []),
        ("get", "investments holdings", "Returns brokerage holdings and their market value.", []),
    ]))

    # ---------------------------------------------------------------- commerce and shipping
    product = E("product", "products", "in the store", "title, price, variants, inventory and images", "by collection or vendor",
                [("title", "Title"), ("price", "Price"), ("vendor", "Vendor")])
    order = E("order", "orders", "in the store", "line items, totals, customer, payment and fulfillment status", "by status or date",
              [("status", "Status"), ("customer_id", "Customer")], ops=("list", "get", "update", "search"))
    for name, desc, style, voice in [
        ("shopify", "Shopify store admin", "snake", "standard"),
        ("woocommerce", "WooCommerce store", "kebab", "terse"),
    ]:
        srv = server(name, desc, ["commerce", "store"], style, voice)
        add(srv, entity_tools(srv, product) + entity_tools(srv, order) + custom(srv, [
            ("cancel", "order", "Cancel an order and optionally refund and restock.", [("order_id", "Order"), ("refund", "Refund")]),
            ("fulfill", "order", "Mark an order as shipped with a tracking number.", [("tracking_number", "Tracking number")]),
            ("update", "inventory", "Set the stock level of a product variant.", [("quantity", "Quantity")]),
            ("create", "discount code", "Create a discount code.", [("code", "Code"), ("value", "Amount or percent")]),
            ("list", "customers", "List store customers.", []),
            ("get", "sales report", "Sales totals by day for a date range.", [("from", "From"), ("to", "To")]),
            ("list", "abandoned checkouts", "List carts that were not completed.", []),
        ]))
    shippo = server("shippo", "Shipping labels and tracking", ["commerce", "shipping"], "snake", "standard")
    add(shippo, custom(shippo, [
        ("get", "shipping rates", "Compare carrier rates for a parcel between two addresses.", [("from_address", "From"), ("to_address", "To"), ("parcel", "Dimensions and weight")]),
        ("create", "label", "Buy a shipping label for a rate.", [("rate_id", "Rate")]),
        ("track", "shipment", "Get the tracking history of a package.", [("carrier", "Carrier"), ("tracking_number", "Tracking number")]),
        ("validate", "address", "Validate and correct a postal address.", [("address", "Address")]),
        ("create", "return label", "Create a return label for an order.", [("order_id", "Order")]),
    ]))
    amazon = server("amazon", "Amazon product search", ["commerce", "shopping"], "snake", "terse")
    add(amazon, custom(amazon, [
        ("search", "products", "Search products.", [("keywords", "Keywords")]),
        ("get", "product", "Product details and price.", [("asin", "ASIN")]),
        ("get", "reviews", "Customer reviews of a product.", [("asin", "ASIN")]),
        ("track", "price", "Watch a product's price and alert on drops.", [("asin", "ASIN"), ("target_price", "Target")]),
    ]))

    # ---------------------------------------------------------------- social
    for name, desc, style, voice, post in [
        ("twitter", "X / Twitter posts and timelines", "snake", "standard", "tweet"),
        ("linkedin", "LinkedIn profile and posts", "camel", "verbose", "post"),
        ("reddit", "Reddit posts and comments", "snake", "terse", "post"),
        ("mastodon", "Mastodon statuses", "snake", "agent", "status"),
        ("bluesky", "Bluesky posts and feeds", "camel", "terse", "post"),
    ]:
        srv = server(name, desc, ["social"], style, voice)
        specs = [
            ("create", post, f"Publish a new {post}.", [("text", "Text"), ("media", "Media")]),
            ("delete", post, f"Delete a {post}.", [("id", "ID")]),
            ("search", post + ("es" if post.endswith("s") else "s"), f"Search recent {post}{'es' if post.endswith('s') else 's'} by keyword or hashtag.", [("query", "Query")]),
            ("get", "user profile", "Get a user's profile and follower counts.", [("username", "Handle")]),
            ("get", "timeline" if name != "reddit" else "subreddit posts", "Get the latest posts from the home feed or a community.", [("subreddit" if name == "reddit" else "limit", "Which")]),
            ("like", post, f"Like a {post}.", [("id", "ID")]),
            ("reply", "to " + post, f"Reply to a {post}.", [("id", "ID"), ("text", "Text")]),
        ]
        if name in ("twitter", "mastodon", "bluesky"):
            specs += [("follow", "user", "Follow an account.", [("username", "Handle")]),
                      ("repost", "", "Share someone else's post to your followers.", [("id", "ID")]),
                      ("get", "trends", "Trending topics and hashtags.", [])]
        if name == "linkedin":
            specs += [("search", "people", "Search members by name, title or company.", [("keywords", "Keywords")]),
                      ("send", "connection request", "Invite someone to connect.", [("profile", "Profile")]),
                      ("search", "jobs", "Search job postings.", [("keywords", "Keywords"), ("location", "Location")])]
        if name == "reddit":
            specs += [("get", "comments", "Get the comment tree of a post.", [("post_id", "Post")]),
                      ("vote", "", "Upvote or downvote.", [("direction", "up or down")])]
        add(srv, custom(srv, specs))

    # ---------------------------------------------------------------- media
    yt = server("youtube", "YouTube videos, channels and transcripts", ["media", "video"], "snake", "standard")
    add(yt, custom(yt, [
        ("search", "videos", "Search YouTube videos by keyword, with duration and upload date filters.", [("query", "Query")]),
        ("get", "video details", "Get a video's title, channel, views, likes and description.", [("video_id", "Video")]),
        ("get", "transcript", "Get the captions of a video as text with timestamps.", [("video_id", "Video"), ("lang", "Language")]),
        ("get", "channel", "Get a channel's statistics and recent uploads.", [("channel_id", "Channel")]),
        ("list", "playlist items", "List the videos of a playlist.", [("playlist_id", "Playlist")]),
        ("list", "comments", "List top comments on a video.", [("video_id", "Video")]),
        ("upload", "video", "Upload a video file with title and privacy.", [("file", "Path"), ("title", "Title")]),
    ]))
    spotify = server("spotify", "Spotify playback and library", ["media", "music"], "snake", "agent")
    add(spotify, custom(spotify, [
        ("search", "", "Search tracks, albums, artists or playlists.", [("query", "Query"), ("type", "track, album, artist, playlist")]),
        ("play", "", "Start or resume playback, optionally of a given track or playlist.", [("uri", "What to play")]),
        ("pause", "", "Pause playback.", []),
        ("next", "track", "Skip to the next track.", []),
        ("get", "now playing", "What is playing right now.", []),
        ("add", "to queue", "Add a track to the play queue.", [("uri", "Track")]),
        ("create", "playlist", "Create a playlist.", [("name", "Name")]),
        ("add", "tracks to playlist", "Add tracks to a playlist.", [("playlist_id", "Playlist"), ("uris", "Tracks")]),
        ("get", "recommendations", "Track recommendations from seed artists, genres or tracks.", [("seed_genres", "Genres")]),
        ("set", "volume", "Set the playback volume.", [("volume_percent", "0-100")]),
        ("get", "top tracks", "Your most played tracks.", [("time_range", "short, medium, long")]),
    ]))
    img = server("image-gen", "Text-to-image generation and editing", ["media", "images", "ai"], "snake", "standard")
    add(img, custom(img, [
        ("generate", "image", "Generate an image from a text prompt.", [("prompt", "Description"), ("size", "Size")]),
        ("edit", "image", "Edit an image with a prompt and a mask (inpainting).", [("image", "Image"), ("prompt", "Change")]),
        ("upscale", "image", "Increase an image's resolution.", [("image", "Image"), ("scale", "Factor")]),
        ("remove", "background", "Remove the background of a photo.", [("image", "Image")]),
        ("describe", "image", "Describe the content of an image in words (captioning).", [("image", "Image")]),
    ]))
    ff = server("ffmpeg", "Audio and video processing with ffmpeg", ["media", "video", "audio"], "snake", "terse")
    add(ff, custom(ff, [
        ("convert", "media", "Convert audio or video to another format or codec.", [("input", "Input file"), ("format", "Target format")]),
        ("trim", "media", "Cut a segment between two timestamps.", [("start", "Start"), ("end", "End")]),
        ("extract", "audio", "Extract the audio track of a video.", [("input", "Video")]),
        ("probe", "media", "Show duration, codecs, bitrate and resolution of a media file.", [("input", "File")]),
        ("make", "gif", "Make an animated GIF from a video clip.", [("input", "Video")]),
        ("concat", "media", "Join several clips into one.", [("inputs", "Files")]),
        ("extract", "frames", "Save frames of a video as images.", [("fps", "Frames per second")]),
        ("compress", "video", "Reduce a video's file size.", [("crf", "Quality")]),
    ]))
    tts = server("elevenlabs", "ElevenLabs voices: text to speech and speech to text", ["media", "audio", "ai"], "snake", "standard")
    add(tts, custom(tts, [
        ("text", "to speech", "Convert text into natural speech audio with a chosen voice.", [("text", "Text"), ("voice_id", "Voice")]),
        ("speech", "to text", "Transcribe an audio file to text.", [("audio", "Audio file")]),
        ("list", "voices", "List available voices.", []),
        ("clone", "voice", "Create a voice from sample recordings.", [("files", "Samples")]),
        ("generate", "sound effect", "Generate a sound effect from a description.", [("text", "Description")]),
    ]))
    whisper = server("whisper", "Local speech recognition", ["audio", "ai"], "snake", "terse")
    add(whisper, custom(whisper, [
        ("transcribe", "audio", "Transcribe audio to text.", [("path", "Audio file"), ("language", "Language")]),
        ("translate", "audio", "Transcribe audio and translate it to English.", [("path", "Audio file")]),
    ]))
    unsplash = server("unsplash", "Free stock photos", ["media", "images"], "snake", "terse")
    add(unsplash, custom(unsplash, [
        ("search", "photos", "Search free photos.", [("query", "Query"), ("orientation", "landscape, portrait")]),
        ("get", "random photo", "A random photo, optionally on a topic.", [("query", "Topic")]),
        ("download", "photo", "Download a photo.", [("id", "Photo")]),
    ]))
    imgtools = server("imagemagick", "Local image manipulation", ["images"], "snake", "terse")
    add(imgtools, custom(imgtools, [
        ("resize", "image", "Resize an image.", [("width", "Width"), ("height", "Height")]),
        ("convert", "image", "Convert between image formats (PNG, JPEG, WebP).", [("format", "Format")]),
        ("crop", "image", "Crop an image to a rectangle.", [("geometry", "WxH+X+Y")]),
        ("rotate", "image", "Rotate an image.", [("degrees", "Degrees")]),
        ("get", "image info", "Dimensions, format and EXIF metadata.", [("path", "Image")]),
        ("ocr", "image", "Extract text from an image with OCR.", [("path", "Image")]),
    ]))

    # ---------------------------------------------------------------- smart home
    ha = server("home-assistant", "Home Assistant smart home", ["iot", "home"], "snake", "standard")
    add(ha, custom(ha, [
        ("turn", "on", "Turn on an entity: light, switch, fan, media player.", [("entity_id", "Entity"), ("brightness", "Brightness 0-255")]),
        ("turn", "off", "Turn off an entity.", [("entity_id", "Entity")]),
        ("get", "state", "Current state and attributes of an entity (sensor reading, on/off).", [("entity_id", "Entity")]),
        ("list", "entities", "List entities by domain or area.", [("domain", "light, sensor, switch...")]),
        ("call", "service", "Call any Home Assistant service with data.", [("service", "domain.service")]),
        ("set", "climate temperature", "Set the target temperature of a thermostat.", [("temperature", "Degrees")]),
        ("lock", "door", "Lock a smart lock.", [("entity_id", "Lock")]),
        ("unlock", "door", "Unlock a smart lock.", [("entity_id", "Lock")]),
        ("run", "automation", "Trigger an automation or script.", [("entity_id", "Automation")]),
        ("get", "history", "State history of an entity over a period.", [("entity_id", "Entity"), ("start", "From")]),
        ("activate", "scene", "Activate a scene.", [("scene", "Scene")]),
    ]))
    hue = server("philips-hue", "Philips Hue lights", ["iot", "lights"], "camel", "terse")
    add(hue, custom(hue, [
        ("list", "lights", "List lights.", []),
        ("set", "light state", "Turn a light on or off, set brightness and colour.", [("on", "On"), ("bri", "Brightness"), ("color", "Colour")]),
        ("list", "rooms", "List rooms and zones.", []),
        ("set", "room scene", "Apply a scene to a room.", [("scene", "Scene")]),
    ]))
    nest = server("nest", "Google Nest thermostat and cameras", ["iot", "climate"], "snake", "terse")
    add(nest, custom(nest, [
        ("get", "thermostat", "Ambient temperature, humidity and mode.", []),
        ("set", "thermostat mode", "Heat, cool, heat-cool or off.", [("mode", "Mode")]),
        ("set", "temperature", "Set the heat or cool setpoint.", [("celsius", "Degrees")]),
        ("get", "camera snapshot", "Image from a camera.", [("device", "Camera")]),
        ("list", "camera events", "Motion and person events from cameras.", []),
    ]))

    # ---------------------------------------------------------------- HR and recruiting
    employee = E("employee", "employees", "in the company directory", "name, job title, department, manager, start date and location",
                 "by department or location", [("department", "Department"), ("job_title", "Job title")], ops=("list", "get", "create", "update", "search"))
    bamboo = server("bamboohr", "BambooHR people data", ["hr"], "snake", "standard")
    add(bamboo, entity_tools(bamboo, employee) + custom(bamboo, [
        ("request", "time off", "Submit a time-off request (vacation, sick).", [("start", "First day"), ("end", "Last day"), ("type", "Vacation, sick...")]),
        ("list", "time off requests", "List pending and approved time-off requests.", [("status", "Status")]),
        ("approve", "time off", "Approve or deny a time-off request.", [("request_id", "Request"), ("status", "approved or denied")]),
        ("get", "time off balance", "Remaining vacation and sick days for an employee.", [("employee_id", "Employee")]),
        ("whos", "out", "Who is out of office in a date range.", [("start", "From"), ("end", "To")]),
        ("get", "org chart", "Reporting lines under a manager.", [("employee_id", "Manager")]),
        ("run", "headcount report", "Headcount by department over time.", []),
    ]))
    gh = server("greenhouse", "Greenhouse recruiting", ["hr", "recruiting"], "snake", "verbose")
    candidate = E("candidate", "candidates", "in the recruiting pipeline", "name, contact details, applications, stage and resume",
                  "by job or stage", [("job_id", "Job"), ("email", "Email")], ops=("list", "get", "create", "search"))
    add(gh, entity_tools(gh, candidate) + custom(gh, [
        ("list", "jobs", "Lists open job requisitions with hiring team and department.", [("status", "open, closed, draft")]),
        ("create", "job", "Creates a job requisition from a template.", [("template_job_id", "Template")]),
        ("schedule", "interview", "Schedules an interview for an application with interviewers and a time.", [("application_id", "Application"), ("interviewers", "Interviewers")]),
        ("submit", "scorecard", "Submits interview feedback (scorecard) with a recommendation.", [("overall_recommendation", "yes, no, strong yes...")]),
        ("advance", "application", "Moves an application to the next interview stage.", [("application_id", "Application")]),
        ("reject", "application", "Rejects an application with a reason and optional email.", [("rejection_reason", "Reason")]),
        ("create", "offer", "Creates an offer with salary and start date.", [("salary", "Salary"), ("start_date", "Start date")]),
    ]))
    gusto = server("gusto", "Gusto payroll and benefits", ["hr", "payroll"], "snake", "terse")
    add(gusto, custom(gusto, [
        ("list", "payrolls", "List payroll runs.", []),
        ("run", "payroll", "Calculate and submit a payroll.", [("pay_period", "Period")]),
        ("get", "pay stub", "An employee's pay stub.", [("employee_id", "Employee")]),
        ("update", "compensation", "Change an employee's pay rate.", [("rate", "Rate")]),
        ("list", "benefits", "Company benefits.", []),
        ("onboard", "employee", "Start onboarding a new hire.", [("email", "Email")]),
    ]))

    # ---------------------------------------------------------------- travel
    flights = server("amadeus", "Flight and hotel search (Amadeus)", ["travel"], "snake", "standard")
    add(flights, custom(flights, [
        ("search", "flights", "Search flight offers between two airports on given dates with prices.", [("origin", "IATA code"), ("destination", "IATA code"), ("departure_date", "Date"), ("adults", "Passengers")]),
        ("get", "flight status", "Real-time status of a flight: delays, gate, terminal.", [("carrier_code", "Airline"), ("flight_number", "Number"), ("date", "Date")]),
        ("search", "hotels", "Search hotel offers in a city for dates.", [("city_code", "City"), ("check_in", "Check-in"), ("check_out", "Check-out")]),
        ("book", "flight", "Book a flight offer for travellers.", [("offer", "Offer"), ("travelers", "Passengers")]),
        ("search", "airports", "Find airports by city or name.", [("keyword", "Text")]),
        ("get", "cheapest dates", "Cheapest travel dates for a route.", [("origin", "From"), ("destination", "To")]),
        ("get", "seat map", "Seat availability on a flight.", [("offer", "Offer")]),
    ]))
    airbnb = server("airbnb", "Airbnb listings", ["travel"], "snake", "terse")
    add(airbnb, custom(airbnb, [
        ("search", "listings", "Search stays by location, dates and guests.", [("location", "Where"), ("checkin", "From"), ("checkout", "To")]),
        ("get", "listing details", "Amenities, rules, price and reviews of a listing.", [("id", "Listing")]),
    ]))
    uber = server("uber", "Ride requests", ["travel", "rides"], "snake", "terse")
    add(uber, custom(uber, [
        ("get", "price estimate", "Estimated fare between two points.", [("start", "From"), ("end", "To")]),
        ("request", "ride", "Request a ride.", [("product_id", "Ride type"), ("start", "Pickup"), ("end", "Drop-off")]),
        ("get", "ride status", "Driver, car and ETA of the current ride.", []),
        ("cancel", "ride", "Cancel the current ride request.", []),
    ]))

    # ---------------------------------------------------------------- messaging and marketing
    twilio = server("twilio", "SMS, voice calls and WhatsApp", ["sms", "phone"], "snake", "standard")
    add(twilio, custom(twilio, [
        ("send", "sms", "Send a text message (SMS) to a phone number.", [("to", "Phone number (E.164)"), ("body", "Message")]),
        ("make", "call", "Place an outbound phone call that reads a message or plays audio.", [("to", "Phone number"), ("twiml", "Call instructions")]),
        ("send", "whatsapp message", "Send a WhatsApp message.", [("to", "Number"), ("body", "Text")]),
        ("list", "messages", "List sent and received SMS.", [("date_sent", "Date")]),
        ("lookup", "phone number", "Validate a phone number and find its carrier and type.", [("phone_number", "Number")]),
        ("buy", "phone number", "Buy a phone number in an area code.", [("area_code", "Area code")]),
    ]))
    mailchimp = server("mailchimp", "Mailchimp audiences and campaigns", ["marketing", "email"], "snake", "verbose")
    add(mailchimp, custom(mailchimp, [
        ("list", "audiences", "Lists audiences (mailing lists) with subscriber counts.", []),
        ("add", "subscriber", "Adds or updates a contact in an audience.", [("email_address", "Email"), ("status", "subscribed, pending")]),
        ("unsubscribe", "member", "Unsubscribes a contact from an audience.", [("email_address", "Email")]),
        ("create", "campaign", "Creates an email campaign for an audience.", [("subject_line", "Subject"), ("list_id", "Audience")]),
        ("send", "campaign", "Sends a campaign immediately.", [("campaign_id", "Campaign")]),
        ("schedule", "campaign", "Schedules a campaign for a later time.", [("schedule_time", "When")]),
        ("get", "campaign report", "Returns opens, clicks, bounces and unsubscribes of a sent campaign.", [("campaign_id", "Campaign")]),
    ]))
    sendgrid = server("sendgrid", "SendGrid transactional email", ["email"], "snake", "terse")
    add(sendgrid, custom(sendgrid, [
        ("send", "email", "Send a transactional email.", [("to", "To"), ("template_id", "Template"), ("dynamic_data", "Data")]),
        ("get", "stats", "Delivery, open and bounce stats.", [("start_date", "From")]),
        ("list", "templates", "Email templates.", []),
        ("list", "bounces", "Addresses that bounced.", []),
    ]))
    ga = server("google-analytics", "Google Analytics 4 reports", ["analytics", "marketing"], "snake", "standard")
    add(ga, custom(ga, [
        ("run", "report", "Run a report with dimensions and metrics (users, sessions, conversions) for a date range.", [("dimensions", "e.g. country, pagePath"), ("metrics", "e.g. activeUsers"), ("date_ranges", "Ranges")]),
        ("run", "realtime report", "Active users right now by page or country.", [("dimensions", "Dimensions")]),
        ("list", "properties", "List GA4 properties.", []),
        ("get", "metadata", "Available dimensions and metrics.", []),
    ]))
    mixpanel = server("mixpanel", "Mixpanel product analytics", ["analytics"], "snake", "terse")
    add(mixpanel, custom(mixpanel, [
        ("query", "funnel", "Conversion through a funnel of events.", [("funnel_id", "Funnel")]),
        ("query", "retention", "Retention cohorts.", [("event", "Event")]),
        ("query", "segmentation", "Event counts segmented by a property.", [("event", "Event"), ("on", "Property")]),
        ("track", "event", "Send an event.", [("event", "Event name"), ("properties", "Properties")]),
    ]))

    # ---------------------------------------------------------------- developer utilities
    npm = server("npm", "npm registry", ["packages", "javascript"], "snake", "terse")
    add(npm, custom(npm, [
        ("search", "packages", "Search npm packages.", [("text", "Query")]),
        ("get", "package info", "Versions, license, maintainers of a package.", [("name", "Package")]),
        ("get", "download counts", "Weekly downloads.", [("name", "Package")]),
        ("check", "vulnerabilities", "Known advisories for a package version.", [("name", "Package"), ("version", "Version")]),
    ]))
    pypi = server("pypi", "Python Package Index", ["packages", "python"], "snake", "terse")
    add(pypi, custom(pypi, [
        ("search", "packages", "Search PyPI projects.", [("query", "Query")]),
        ("get", "package info", "Latest version, summary, requirements.", [("name", "Project")]),
        ("get", "release history", "All released versions with dates.", [("name", "Project")]),
    ]))
    docs = server("context7", "Up-to-date library documentation for coding", ["docs", "code"], "kebab", "agent")
    add(docs, custom(docs, [
        ("resolve", "library id", "Resolves a package name to a library ID. Call this before get-library-docs.", [("libraryName", "Library")]),
        ("get", "library docs", "Fetches up-to-date documentation and code examples for a library, optionally on a topic.", [("libraryID", "Library ID"), ("topic", "Topic")]),
    ]))
    sandbox = server("code-runner", "Sandboxed code execution", ["code", "sandbox"], "snake", "standard")
    add(sandbox, custom(sandbox, [
        ("run", "python", "Run Python code in a sandbox and return stdout, stderr and results.", [("code", "Python source")]),
        ("run", "javascript", "Run JavaScript (Node) code in a sandbox.", [("code", "Source")]),
        ("run", "shell command", "Run a shell command in the sandbox.", [("command", "Command")]),
        ("install", "package", "Install a package into the sandbox.", [("name", "Package")]),
    ]))
    calc = server("calculator", "Math and unit conversion", ["math"], "snake", "terse")
    add(calc, custom(calc, [
        ("evaluate", "expression", "Evaluate a math expression.", [("expression", "Expression")]),
        ("convert", "units", "Convert between units (km to miles, kg to lb, °C to °F).", [("value", "Value"), ("from_unit", "From"), ("to_unit", "To")]),
        ("solve", "equation", "Solve an equation for a variable.", [("equation", "Equation")]),
        ("statistics", "", "Mean, median, standard deviation of numbers.", [("numbers", "Numbers")]),
    ]))
    deepl = server("deepl", "DeepL translation", ["translation", "language"], "snake", "standard")
    add(deepl, custom(deepl, [
        ("translate", "text", "Translate text into a target language, detecting the source language.", [("text", "Text"), ("target_lang", "Target language code")]),
        ("translate", "document", "Translate a whole document (DOCX, PPTX, PDF) keeping its formatting.", [("file", "Document"), ("target_lang", "Target language")]),
        ("list", "languages", "List supported source and target languages.", []),
        ("rephrase", "text", "Improve the style and grammar of a text.", [("text", "Text")]),
    ]))
    dict_srv = server("dictionary", "Word definitions and thesaurus", ["language", "reference"], "snake", "terse")
    add(dict_srv, custom(dict_srv, [
        ("define", "word", "Definitions of a word.", [("word", "Word")]),
        ("get", "synonyms", "Synonyms and antonyms.", [("word", "Word")]),
        ("get", "pronunciation", "Phonetic spelling and audio.", [("word", "Word")]),
    ]))
    thinking = server("sequential-thinking", "Structured step-by-step reasoning", ["reasoning"], "kebab", "verbose")
    add(thinking, [g["tool"]("sequentialthinking", "A detailed tool for dynamic and reflective problem-solving through thoughts. Each thought can build on, question, or revise previous insights as understanding deepens.", {"thought": {"type": "string", "description": "Your current thinking step"}, "nextThoughtNeeded": {"type": "boolean", "description": "Whether another thought step is needed"}})])
    recipes = server("spoonacular", "Recipes and nutrition", ["food"], "camel", "standard")
    add(recipes, custom(recipes, [
        ("search", "recipes", "Search recipes by dish, cuisine or diet.", [("query", "Query"), ("diet", "vegetarian, vegan...")]),
        ("find", "by ingredients", "Find recipes that use the ingredients you have.", [("ingredients", "Ingredients")]),
        ("get", "recipe information", "Ingredients, steps, servings and time of a recipe.", [("id", "Recipe")]),
        ("get", "nutrition", "Calories, protein, fat and carbs for a recipe or food.", [("id", "Recipe")]),
        ("generate", "meal plan", "Plan meals for a day or week within a calorie target.", [("target_calories", "Calories")]),
    ]))
    sports = server("sports", "Sports scores and schedules", ["sports"], "snake", "terse")
    add(sports, custom(sports, [
        ("get", "live scores", "Live scores.", [("league", "League")]),
        ("get", "standings", "League table.", [("league", "League")]),
        ("get", "fixtures", "Upcoming matches.", [("team", "Team")]),
        ("get", "player stats", "Season stats of a player.", [("player", "Player")]),
    ]))
    for name, desc in [("legacy-erp", "Internal ERP (legacy)"), ("misc-utils", "Assorted utilities")]:
        srv = server(name, desc, ["internal"], "snake", "terse")
        # Poorly documented tools exist in real catalogs: no or near-empty descriptions.
        add(srv, [g["tool"](n, d, {}) for n, d in [
            ("uuid", "Generate a UUID."), ("hash_text", None), ("base64_encode", "Base64."), ("random_number", ""),
            ("qr_code", "Make a QR code."), ("shorten_url", None), ("ping_host", "Ping."), ("whois", None),
        ]] if name == "misc-utils" else [g["tool"](n, d, {}) for n, d in [
            ("sync_inventory", None), ("get_po", ""), ("approve_po", "Approve."), ("export_gl", None),
            ("create_vendor", "Vendor."), ("post_journal", None),
        ]])

    more(g, E, entity_tools, custom, server, add)


def more(g, E, entity_tools, custom, server, add):
    """Servers made mostly of resources: the CRUD-heavy shape of many SaaS MCP servers."""

    def crud_server(name, description, tags, style, voice, entities, specs=()):
        srv = server(name, description, tags, style, voice)
        tools = []
        for entity in entities:
            tools += entity_tools(srv, entity)
        add(srv, tools + custom(srv, list(specs)))

    def ent(singular, plural, ctx, detail, params, ops=("list", "get", "create", "update", "delete", "search"), filters="by name or status"):
        return E(singular, plural, ctx, detail, filters, params, ops=ops)

    crud_server("zoom", "Zoom meetings, webinars and recordings", ["video", "meetings"], "snake", "standard", [
        ent("meeting", "meetings", "for a user", "topic, start time, duration, join URL and passcode", [("topic", "Topic"), ("start_time", "Start"), ("duration", "Minutes")]),
        ent("webinar", "webinars", "for a user", "topic, schedule, panelists and registration link", [("topic", "Topic")], ops=("list", "get", "create", "delete")),
        ent("recording", "recordings", "in cloud storage", "files, duration, size and share link", [("from", "From date")], ops=("list", "get", "delete")),
    ], [("get", "meeting participants", "List who attended a past meeting and for how long.", [("meeting_id", "Meeting")]),
        ("get", "recording transcript", "Get the transcript of a cloud recording.", [("meeting_id", "Meeting")])])
    crud_server("okta", "Okta identity: users, groups, applications", ["identity", "security"], "snake", "verbose", [
        ent("user", "users", "in the organization", "profile, status, last login and factors", [("login", "Login"), ("email", "Email")]),
        ent("group", "groups", "in the organization", "name, description and members", [("name", "Name")], ops=("list", "get", "create", "delete")),
        ent("application", "applications", "in the organization", "label, sign-on mode and assignments", [("label", "Label")], ops=("list", "get")),
    ], [("add", "user to group", "Adds a user to a group.", [("group_id", "Group"), ("user_id", "User")]),
        ("reset", "password", "Sends a password-reset email or returns a one-time reset link.", [("user_id", "User")]),
        ("suspend", "user", "Suspends a user so they can no longer sign in.", [("user_id", "User")]),
        ("list", "system logs", "Lists audit events such as sign-ins and admin changes.", [("since", "From")])])
    crud_server("auth0", "Auth0 tenant management", ["identity"], "camel", "terse", [
        ent("user", "users", "in the tenant", "email, identities, roles and last login", [("email", "Email")]),
        ent("role", "roles", "in the tenant", "name, description and permissions", [("name", "Name")], ops=("list", "create", "delete")),
    ], [("assign", "roles to user", "Give a user roles.", [("roles", "Roles")]), ("block", "user", "Block a user.", [("id", "User")])])
    crud_server("1password", "1Password vault items", ["security", "secrets"], "snake", "agent", [
        ent("item", "items", "in a vault", "title, username, URLs and fields (passwords redacted unless requested)", [("vault", "Vault"), ("title", "Title")]),
    ], [("list", "vaults", "List vaults you can access.", []), ("generate", "password", "Generate a strong random password.", [("length", "Length")]),
        ("get", "otp", "Get the current one-time code of an item.", [("item", "Item")])])
    crud_server("vault", "HashiCorp Vault secrets", ["security", "secrets"], "kebab", "terse", [], [
        ("read", "secret", "Read a secret at a path.", [("path", "Path")]), ("write", "secret", "Write a secret.", [("path", "Path"), ("data", "Data")]),
        ("list", "secrets", "List secrets under a path.", [("path", "Path")]), ("delete", "secret", "Delete a secret.", [("path", "Path")]),
        ("renew", "lease", "Renew a lease.", [("lease_id", "Lease")])])
    crud_server("virustotal", "VirusTotal threat intelligence", ["security"], "snake", "standard", [], [
        ("scan", "url", "Submit a URL for scanning by antivirus engines.", [("url", "URL")]),
        ("get", "file report", "Get the analysis of a file by its hash: detections and reputation.", [("hash", "SHA-256")]),
        ("get", "domain report", "Reputation, categories and DNS of a domain.", [("domain", "Domain")]),
        ("get", "ip report", "Reputation and geolocation of an IP address.", [("ip", "IP")])])
    crud_server("shodan", "Shodan internet device search", ["security"], "snake", "terse", [], [
        ("host", "info", "Open ports and services of an IP.", [("ip", "IP")]), ("search", "", "Search exposed devices.", [("query", "Query")]),
        ("dns", "resolve", "Resolve hostnames to IPs.", [("hostnames", "Hostnames")])])
    crud_server("circleci", "CircleCI pipelines", ["ci"], "snake", "standard", [
        ent("pipeline", "pipelines", "for a project", "number, branch, trigger and workflows", [("branch", "Branch")], ops=("list", "get")),
    ], [("trigger", "pipeline", "Trigger a new pipeline on a branch.", [("branch", "Branch")]),
        ("get", "job logs", "Get the output of a failed job step.", [("job_number", "Job")]),
        ("rerun", "workflow", "Rerun a workflow from failed.", [("workflow_id", "Workflow")]),
        ("get", "flaky tests", "Tests that flip between pass and fail.", [("project_slug", "Project")])])
    crud_server("jenkins", "Jenkins jobs and builds", ["ci"], "camel", "terse", [], [
        ("list", "jobs", "List jobs.", []), ("build", "job", "Start a build with parameters.", [("job", "Job"), ("parameters", "Parameters")]),
        ("get", "build status", "Result of a build.", [("job", "Job"), ("number", "Build")]), ("get", "console output", "Console log of a build.", [("number", "Build")]),
        ("abort", "build", "Stop a running build.", [("number", "Build")])])
    crud_server("launchdarkly", "Feature flags", ["feature-flags"], "snake", "standard", [
        ent("feature flag", "feature flags", "in a project", "key, variations, targeting rules and status per environment", [("key", "Flag key")]),
    ], [("toggle", "feature flag", "Turn a flag on or off in an environment.", [("environment", "Environment"), ("on", "On")]),
        ("add", "flag target", "Serve a variation to specific users.", [("users", "Users")])])
    crud_server("snowflake", "Snowflake warehouse", ["database", "sql", "warehouse"], "snake", "verbose", [], [
        ("run", "query", "Runs a SQL query in a warehouse and returns the result set.", [("sql", "SQL"), ("warehouse", "Warehouse")]),
        ("list", "databases", "Lists databases.", []), ("list", "tables", "Lists tables in a schema.", [("schema", "Schema")]),
        ("describe", "table", "Returns column names and types of a table.", [("table", "Table")]),
        ("get", "query history", "Returns recent queries with duration and credits used.", [])])
    crud_server("supabase", "Supabase projects: Postgres, auth, storage, edge functions", ["database", "backend"], "snake", "agent", [
        ent("project", "projects", "in the organization", "name, region, status and API URL", [("name", "Name"), ("region", "Region")], ops=("list", "get", "create")),
    ], [("execute", "sql", "Run SQL on the project's Postgres database.", [("query", "SQL")]),
        ("apply", "migration", "Apply a schema migration.", [("name", "Migration name"), ("query", "DDL")]),
        ("list", "tables", "List tables of the database.", []), ("deploy", "edge function", "Deploy an edge function.", [("name", "Function")]),
        ("get", "logs", "Get service logs (api, postgres, auth).", [("service", "Service")]),
        ("generate", "typescript types", "Generate TypeScript types from the database schema.", [])])
    crud_server("neo4j", "Neo4j graph database", ["database", "graph"], "kebab", "terse", [], [
        ("read", "cypher", "Run a read-only Cypher query.", [("query", "Cypher")]), ("write", "cypher", "Run a Cypher write query.", [("query", "Cypher")]),
        ("get", "schema", "Node labels, relationship types and properties.", [])])
    crud_server("huggingface", "Hugging Face Hub models, datasets and Spaces", ["ml", "ai"], "snake", "standard", [
        ent("model", "models", "on the Hub", "author, task, downloads, likes and license", [("task", "Task")], ops=("list", "get", "search")),
        ent("dataset", "datasets", "on the Hub", "size, splits, features and license", [("task", "Task")], ops=("get", "search")),
    ], [("search", "spaces", "Search demo apps (Spaces).", [("query", "Query")]), ("run", "inference", "Run a hosted model on an input.", [("model", "Model"), ("inputs", "Input")])])
    crud_server("openai", "OpenAI models: chat, embeddings, images", ["ai", "llm"], "snake", "terse", [], [
        ("chat", "completion", "Ask a model a question and get its answer.", [("model", "Model"), ("messages", "Messages")]),
        ("create", "embedding", "Vector embedding of a text.", [("input", "Text")]),
        ("moderate", "text", "Check text for harmful content.", [("input", "Text")]),
        ("list", "models", "Models available.", [])])
    crud_server("wordpress", "WordPress site content", ["cms", "blog"], "snake", "standard", [
        ent("post", "posts", "on the site", "title, content, status, author, categories and tags", [("title", "Title"), ("content", "HTML content"), ("status", "draft, publish")]),
        ent("page", "pages", "on the site", "title, content, parent and template", [("title", "Title")], ops=("list", "get", "create", "update", "delete")),
        ent("comment", "comments", "on the site", "author, content and approval status", [("post", "Post ID")], ops=("list", "update", "delete")),
        ent("media item", "media items", "in the media library", "URL, MIME type, dimensions and alt text", [("file", "File")], ops=("list", "create", "delete")),
    ], [("list", "categories", "List post categories.", [])])
    crud_server("contentful", "Contentful headless CMS", ["cms"], "camel", "verbose", [
        ent("entry", "entries", "in a space", "content type, fields, locale and publish state", [("content_type", "Content type")]),
        ent("asset", "assets", "in a space", "title, file URL and dimensions", [("title", "Title")], ops=("list", "get", "create", "delete")),
    ], [("publish", "entry", "Publishes an entry so it appears on the delivery API.", [("entry_id", "Entry")]),
        ("list", "content types", "Lists the content models of a space.", [])])
    crud_server("webflow", "Webflow sites and CMS collections", ["cms", "website"], "snake", "terse", [
        ent("collection item", "collection items", "in a CMS collection", "fields and publish state", [("collection_id", "Collection")]),
    ], [("list", "sites", "List sites.", []), ("publish", "site", "Publish a site to its domains.", [("site_id", "Site")])])
    crud_server("figma", "Figma design files", ["design"], "snake", "standard", [], [
        ("get", "file", "Get a design file's pages, frames and components.", [("file_key", "File")]),
        ("get", "comments", "Get comments left on a file.", [("file_key", "File")]), ("post", "comment", "Comment on a file.", [("message", "Comment")]),
        ("export", "images", "Render frames or nodes as PNG, SVG or PDF.", [("ids", "Node IDs"), ("format", "png, svg, pdf")]),
        ("get", "components", "List published components of a team library.", [("team_id", "Team")]),
        ("get", "styles", "Colour and text styles of a library.", [])])
    crud_server("canva", "Canva designs", ["design"], "camel", "agent", [
        ent("design", "designs", "in the account", "title, type, thumbnail and edit URL", [("title", "Title"), ("design_type", "Presentation, poster...")], ops=("list", "get", "create", "search")),
    ], [("export", "design", "Export a design as PDF, PNG or MP4.", [("format", "Format")]),
        ("autofill", "template", "Fill a brand template with data.", [("data", "Values")])])
    crud_server("typeform", "Typeform forms and responses", ["forms", "surveys"], "snake", "standard", [
        ent("form", "forms", "in the workspace", "title, fields, logic and share link", [("title", "Title")], ops=("list", "get", "create", "update", "delete")),
    ], [("get", "responses", "Get submissions to a form, newest first.", [("form_id", "Form"), ("since", "From")]),
        ("get", "form insights", "Completion rate and drop-off per question.", [("form_id", "Form")])])
    crud_server("google-forms", "Google Forms", ["forms", "surveys"], "snake", "terse", [], [
        ("create", "form", "Create a form.", [("title", "Title")]), ("add", "question", "Add a question.", [("type", "Type"), ("title", "Question")]),
        ("list", "responses", "Form responses.", [("form_id", "Form")])])
    crud_server("canvas-lms", "Canvas LMS courses, assignments and grades", ["education"], "snake", "standard", [
        ent("course", "courses", "for the user", "name, term, enrollment count and teachers", [("term", "Term")], ops=("list", "get")),
        ent("assignment", "assignments", "in a course", "title, due date, points and submission types", [("course_id", "Course"), ("due_at", "Due")]),
        ent("announcement", "announcements", "in a course", "title, message and post date", [("course_id", "Course")], ops=("list", "create")),
    ], [("list", "submissions", "List student submissions for an assignment.", [("assignment_id", "Assignment")]),
        ("grade", "submission", "Enter a grade and comment for a submission.", [("grade", "Grade"), ("comment", "Feedback")]),
        ("get", "gradebook", "Grades of every student in a course.", [("course_id", "Course")])])
    crud_server("fhir", "FHIR electronic health records", ["health"], "pascal", "verbose", [
        ent("patient", "patients", "in the record system", "name, birth date, identifiers, contacts and general practitioner", [("family", "Family name"), ("birthdate", "Birth date")], ops=("get", "create", "update", "search")),
        ent("appointment", "appointments", "in the schedule", "patient, practitioner, start, end and status", [("patient", "Patient")], ops=("get", "create", "update", "search")),
        ent("observation", "observations", "for a patient", "code, value, unit and effective time (vital signs, lab results)", [("patient", "Patient"), ("code", "LOINC code")], ops=("get", "create", "search")),
        ent("medication request", "medication requests", "for a patient", "medication, dosage instructions and prescriber", [("patient", "Patient")], ops=("get", "create", "search")),
    ], [("get", "patient everything", "Returns the whole record of a patient: conditions, encounters, medications, observations.", [("patient_id", "Patient")])])
    crud_server("zillow", "Real-estate listings and estimates", ["real-estate"], "snake", "terse", [], [
        ("search", "homes", "Homes for sale or rent in an area.", [("location", "Area"), ("max_price", "Budget"), ("beds", "Bedrooms")]),
        ("get", "home value estimate", "Estimated market value of a property.", [("address", "Address")]),
        ("get", "property details", "Beds, baths, area, year built and tax history.", [("zpid", "Property")]),
        ("get", "rent estimate", "Estimated monthly rent.", [("address", "Address")])])
    crud_server("sec-edgar", "SEC EDGAR company filings", ["finance", "government"], "snake", "standard", [], [
        ("search", "filings", "Search 10-K, 10-Q, 8-K and other filings by company and form type.", [("company", "Company or CIK"), ("form_type", "Form")]),
        ("get", "filing", "Get the text of a filing.", [("accession_number", "Accession number")]),
        ("get", "insider transactions", "Form 4 insider buys and sells.", [("ticker", "Ticker")]),
        ("get", "company facts", "XBRL financial facts reported by a company.", [("cik", "CIK")])])
    crud_server("census", "US Census data", ["government", "data"], "snake", "terse", [], [
        ("get", "population", "Population of a place.", [("geography", "Place")]), ("get", "median income", "Median household income.", [("geography", "Place")]),
        ("list", "datasets", "Available datasets.", [])])
    crud_server("opentable", "Restaurant reservations", ["food", "booking"], "snake", "agent", [
        ent("reservation", "reservations", "for the diner", "restaurant, party size, time and confirmation number", [("restaurant_id", "Restaurant"), ("party_size", "People"), ("time", "Time")], ops=("list", "create", "update", "delete")),
    ], [("search", "restaurants", "Find restaurants with open tables by cuisine, area and time.", [("cuisine", "Cuisine"), ("location", "Area"), ("time", "Time")]),
        ("get", "availability", "Open time slots at a restaurant.", [("restaurant_id", "Restaurant"), ("date", "Date")])])
    crud_server("doordash", "Food delivery", ["food", "delivery"], "snake", "terse", [], [
        ("search", "stores", "Restaurants that deliver to you.", [("query", "Food")]), ("get", "menu", "Menu of a store.", [("store_id", "Store")]),
        ("place", "order", "Order food for delivery.", [("items", "Items"), ("address", "Address")]), ("track", "order", "Delivery status and ETA.", [("order_id", "Order")])])
    crud_server("netsuite", "NetSuite ERP records", ["erp", "finance"], "camel", "verbose", [
        ent("purchase order", "purchase orders", "in the ERP", "vendor, items, amounts, approval status and expected receipt date", [("vendor", "Vendor")]),
        ent("sales order", "sales orders", "in the ERP", "customer, items, totals and fulfillment status", [("customer", "Customer")]),
        ent("item", "items", "in the ERP", "SKU, description, cost, price and quantity on hand", [("sku", "SKU")], ops=("list", "get", "update", "search")),
    ], [("run", "saved search", "Runs a saved search and returns its rows.", [("search_id", "Saved search")])])
    crud_server("sap", "SAP S/4HANA business objects", ["erp"], "pascal", "terse", [
        ent("business partner", "business partners", "in SAP", "name, roles, addresses and bank details", [("name", "Name")], ops=("list", "get", "create", "update")),
        ent("material", "materials", "in SAP", "description, type, unit and plant data", [("plant", "Plant")], ops=("get", "search")),
    ])
    crud_server("gitbook", "GitBook documentation spaces", ["docs"], "kebab", "terse", [], [
        ("search", "content", "Search a documentation space.", [("query", "Query")]), ("get", "page", "Page content as Markdown.", [("path", "Path")]),
        ("list", "spaces", "List spaces.", [])])
    crud_server("airtable", "Airtable bases and records", ["database", "no-code"], "snake", "standard", [
        ent("record", "records", "in a table", "field values and creation time", [("base_id", "Base"), ("table", "Table"), ("fields", "Field values")]),
    ], [("list", "bases", "List bases you can access.", []), ("get", "base schema", "Tables and fields of a base.", [("base_id", "Base")])])
    crud_server("zapier", "Zapier actions across thousands of apps", ["automation"], "snake", "agent", [], [
        ("list", "enabled actions", "List the app actions exposed to you.", []),
        ("run", "action", "Run a configured action with natural-language instructions.", [("action_id", "Action"), ("instructions", "What to do")])])
    crud_server("ifttt", "IFTTT applets", ["automation", "iot"], "snake", "terse", [], [
        ("trigger", "webhook", "Fire a Maker webhook event.", [("event", "Event"), ("value1", "Value")]), ("list", "applets", "Your applets.", [])])
    crud_server("loom", "Loom video messages", ["video"], "snake", "terse", [], [
        ("list", "videos", "Your recorded videos.", []), ("get", "video transcript", "Transcript of a video.", [("id", "Video")])])
    crud_server("calendar-holidays", "Public holidays by country", ["calendar", "reference"], "snake", "terse", [], [
        ("list", "holidays", "Public holidays of a country in a year.", [("country", "Country code"), ("year", "Year")]),
        ("is", "holiday", "Whether a date is a public holiday.", [("date", "Date"), ("country", "Country")]),
        ("next", "holiday", "The next upcoming holiday.", [("country", "Country")])])
    crud_server("ip-geo", "IP address geolocation", ["network", "geo"], "snake", "terse", [], [
        ("lookup", "ip", "Country, city, ISP and coordinates of an IP address.", [("ip", "IP")]), ("my", "ip", "The public IP of this machine.", [])])
    crud_server("dns-tools", "DNS and network diagnostics", ["network"], "snake", "terse", [], [
        ("dns", "lookup", "Resolve DNS records (A, AAAA, MX, TXT, CNAME) of a domain.", [("domain", "Domain"), ("type", "Record type")]),
        ("check", "ssl certificate", "Expiry date, issuer and chain of a site's TLS certificate.", [("host", "Host")]),
        ("http", "status", "Check whether a URL is up and how fast it answers.", [("url", "URL")]),
        ("traceroute", "", "Network path to a host.", [("host", "Host")]),
        ("whois", "domain", "Registrar, owner and expiry of a domain.", [("domain", "Domain")])])
    crud_server("pdf-tools", "PDF utilities", ["documents", "pdf"], "snake", "standard", [], [
        ("extract", "text", "Extract the text of a PDF, page by page.", [("path", "PDF file")]),
        ("merge", "pdfs", "Combine several PDFs into one.", [("paths", "Files")]),
        ("split", "pdf", "Split a PDF into single pages or ranges.", [("ranges", "Page ranges")]),
        ("fill", "form", "Fill the fields of a PDF form.", [("fields", "Values")]),
        ("html", "to pdf", "Render an HTML page or Markdown to PDF.", [("html", "HTML")]),
        ("compress", "pdf", "Make a PDF smaller.", [("path", "File")])])
    crud_server("archive-tools", "Archives and compression", ["files"], "snake", "terse", [], [
        ("zip", "files", "Create a zip archive.", [("paths", "Files"), ("output", "Archive")]),
        ("unzip", "archive", "Extract a zip or tar archive.", [("archive", "Archive"), ("destination", "Folder")]),
        ("list", "archive contents", "List files in an archive.", [("archive", "Archive")])])
    crud_server("bamboo-time", "Time tracking (Harvest)", ["time-tracking"], "snake", "standard", [
        ent("time entry", "time entries", "for the user", "project, task, hours, notes and billable flag", [("project_id", "Project"), ("hours", "Hours"), ("notes", "Notes")]),
    ], [("start", "timer", "Start a running timer on a task.", [("task_id", "Task")]), ("stop", "timer", "Stop the running timer.", []),
        ("get", "timesheet report", "Hours per project and person for a period.", [("from", "From"), ("to", "To")])])
    crud_server("expensify", "Expense reports", ["finance", "expenses"], "camel", "terse", [
        ent("expense", "expenses", "for the user", "merchant, amount, category, date and receipt", [("merchant", "Merchant"), ("amount", "Amount")], ops=("list", "create", "update", "delete")),
        ent("report", "reports", "for the user", "expenses, total and approval state", [("title", "Title")], ops=("list", "get", "create")),
    ], [("submit", "report", "Submit an expense report for approval.", [("report_id", "Report")]),
        ("scan", "receipt", "Create an expense from a receipt photo.", [("image", "Receipt")])])
    # Bigger code-hosting and CRM surfaces, as the real servers have.
    for srv in [s for s in g["SERVERS"] if s["name"] in ("github", "gitlab", "bitbucket")]:
        extra = []
        for entity in [
            ent("milestone", "milestones", "in a repository", "title, due date and open/closed issue counts", [("title", "Title"), ("due_on", "Due")], ops=("list", "create", "update", "delete")),
            ent("webhook", "webhooks", "of a repository", "URL, events and last delivery status", [("url", "Payload URL"), ("events", "Events")], ops=("list", "create", "delete")),
            ent("collaborator", "collaborators", "of a repository", "username and permission level", [("permission", "pull, push, admin")], ops=("list", "create", "delete")),
            ent("secret", "secrets", "for CI in a repository", "name and last update (values are write-only)", [("name", "Name"), ("value", "Value")], ops=("list", "create", "delete")),
            ent("gist" if srv["name"] == "github" else "snippet", "gists" if srv["name"] == "github" else "snippets", "of the user", "files, description and visibility", [("files", "Files"), ("public", "Public")], ops=("list", "get", "create", "delete")),
        ]:
            extra += entity_tools(srv, entity)
        names = {t["name"] for t in srv["tools"]}
        srv["tools"] += [t for t in extra if t["name"] not in names]
    for srv in [s for s in g["SERVERS"] if s["name"] in ("hubspot", "salesforce", "pipedrive")]:
        extra = []
        for entity in [
            ent("lead", "leads", "in the CRM", "name, source, status and score", [("source", "Lead source"), ("status", "Status")]),
            ent("meeting", "meetings", "logged in the CRM", "title, time, attendees and outcome", [("start_time", "Start")], ops=("list", "create")),
            ent("quote", "quotes", "for a deal", "line items, total, expiry and status", [("deal_id", "Deal")], ops=("list", "get", "create")),
            ent("product", "products", "in the CRM product library", "name, SKU, price and description", [("price", "Price")], ops=("list", "create", "update")),
        ]:
            extra += entity_tools(srv, entity)
        names = {t["name"] for t in srv["tools"]}
        srv["tools"] += [t for t in extra if t["name"] not in names]
    for srv in [s for s in g["SERVERS"] if s["name"] in ("jira", "linear", "asana", "clickup")]:
        extra = []
        for entity in [
            ent("label", "labels", "in the workspace", "name and colour", [("color", "Colour")], ops=("list", "create", "delete")),
            ent("attachment", "attachments", "on a work item", "file name, size and uploader", [("file", "File")], ops=("list", "create", "delete")),
            ent("user", "users", "in the workspace", "name, email and role", [("query", "Name")], ops=("list", "get")),
        ]:
            extra += entity_tools(srv, entity)
        names = {t["name"] for t in srv["tools"]}
        srv["tools"] += [t for t in extra if t["name"] not in names]
    for srv in [s for s in g["SERVERS"] if s["name"] in ("zendesk", "freshdesk", "intercom")]:
        extra = []
        for entity in [
            ent("organization", "organizations", "in the help desk", "name, domains, tags and ticket count", [("name", "Name"), ("domain_names", "Domains")]),
            ent("agent", "agents", "in the help desk", "name, email, role and groups", [("role", "Role")], ops=("list", "get", "update")),
        ]:
            extra += entity_tools(srv, entity)
        names = {t["name"] for t in srv["tools"]}
        srv["tools"] += [t for t in extra if t["name"] not in names]
    for srv in [s for s in g["SERVERS"] if s["name"] in ("shopify", "woocommerce")]:
        extra = []
        for entity in [
            ent("collection", "collections", "in the store", "title, rules and product count", [("title", "Title")], ops=("list", "get", "create", "update", "delete")),
            ent("webhook", "webhooks", "of the store", "topic, address and format", [("topic", "Event topic"), ("address", "URL")], ops=("list", "create", "delete")),
        ]:
            extra += entity_tools(srv, entity)
        names = {t["name"] for t in srv["tools"]}
        srv["tools"] += [t for t in extra if t["name"] not in names]
    crud_server("servicenow", "ServiceNow IT service management", ["itsm", "tickets"], "snake", "verbose", [
        ent("incident", "incidents", "in ServiceNow", "number, short description, priority, state, assignment group and caller", [("short_description", "Summary"), ("urgency", "1-3")]),
        ent("change request", "change requests", "in ServiceNow", "risk, schedule, approval state and affected CIs", [("type", "normal, standard, emergency")], ops=("list", "get", "create", "update")),
        ent("knowledge article", "knowledge articles", "in the knowledge base", "title, text, category and views", [("kb", "Knowledge base")], ops=("get", "search")),
    ], [("approve", "change request", "Approves or rejects a change request.", [("state", "approved or rejected")])])
    crud_server("workday", "Workday HCM", ["hr"], "pascal", "verbose", [
        ent("worker", "workers", "in Workday", "name, position, supervisory organization, hire date and status", [("organization", "Organization")], ops=("list", "get", "search")),
        ent("absence request", "absence requests", "for a worker", "type, dates, hours and approval status", [("absence_type", "Type"), ("start_date", "From")], ops=("list", "create", "delete")),
    ], [("get", "pay slips", "Returns a worker's pay slips for a period.", [("worker_id", "Worker")])])
    crud_server("digitalocean", "DigitalOcean droplets, apps and databases", ["cloud"], "snake", "standard", [
        ent("droplet", "droplets", "in the account", "name, size, region, IP addresses and status", [("size", "Size slug"), ("region", "Region"), ("image", "Image")]),
        ent("volume", "volumes", "in the account", "size, region and attached droplet", [("size_gigabytes", "Size")], ops=("list", "create", "delete")),
        ent("domain record", "domain records", "for a domain", "type, name, data and TTL", [("domain", "Domain")], ops=("list", "create", "update", "delete")),
    ], [("reboot", "droplet", "Reboot a droplet.", [("droplet_id", "Droplet")]), ("create", "snapshot", "Snapshot a droplet's disk.", [("name", "Snapshot name")])])
    crud_server("heroku", "Heroku apps", ["cloud", "hosting"], "kebab", "terse", [
        ent("app", "apps", "in the account", "name, stack, region and web URL", [("name", "Name")], ops=("list", "get", "create", "delete")),
    ], [("restart", "dynos", "Restart all dynos of an app.", [("app", "App")]), ("scale", "dynos", "Change dyno count or size.", [("quantity", "Count")]),
        ("get", "logs", "Recent app logs.", [("app", "App"), ("lines", "Lines")]), ("set", "config vars", "Set environment config vars.", [("vars", "Vars")]),
        ("list", "releases", "Release history.", [("app", "App")]), ("rollback", "release", "Roll back to a previous release.", [("version", "Version")])])
    crud_server("clickhouse", "ClickHouse analytics database", ["database", "sql", "analytics"], "snake", "terse", [], [
        ("run", "select query", "Run a SELECT query.", [("query", "SQL")]), ("list", "databases", "List databases.", []),
        ("list", "tables", "List tables.", [("database", "Database")])])
    crud_server("prometheus", "Prometheus metrics", ["monitoring", "metrics"], "snake", "standard", [], [
        ("instant", "query", "Evaluate a PromQL expression at one instant.", [("query", "PromQL")]),
        ("range", "query", "Evaluate a PromQL expression over a time range with a step.", [("query", "PromQL"), ("start", "Start"), ("end", "End"), ("step", "Step")]),
        ("list", "targets", "Scrape targets and their health.", []), ("list", "alerts", "Firing alerts.", []),
        ("list", "metric names", "All metric names.", [])])
    crud_server("newrelic", "New Relic observability", ["monitoring"], "camel", "verbose", [], [
        ("run", "nrql query", "Runs an NRQL query against your telemetry data (transactions, logs, metrics).", [("nrql", "NRQL")]),
        ("list", "applications", "Lists APM applications with response time, throughput and error rate.", []),
        ("list", "alert violations", "Lists open alert violations.", []),
        ("get", "deployments", "Lists deployment markers for an application.", [("appId", "Application")])])
    crud_server("google-chat", "Google Chat spaces and messages", ["chat", "google"], "snake", "terse", [
        ent("space", "spaces", "the bot belongs to", "name, type and member count", [("display_name", "Name")], ops=("list", "get", "create")),
    ], [("create", "message", "Post a message in a space.", [("space", "Space"), ("text", "Text")]), ("list", "messages", "Messages of a space.", [("space", "Space")]),
        ("list", "members", "Members of a space.", [("space", "Space")])])
    crud_server("whatsapp-business", "WhatsApp Business messaging", ["chat", "sms"], "snake", "standard", [
        ent("message template", "message templates", "of the business account", "name, language, category and approval status", [("name", "Name"), ("category", "Category")], ops=("list", "create", "delete")),
    ], [("send", "template message", "Send an approved template message to a customer's number.", [("to", "Phone number"), ("template", "Template")]),
        ("send", "text message", "Send a free-form text within the 24-hour service window.", [("to", "Phone number"), ("body", "Text")]),
        ("mark", "message read", "Mark an incoming message as read.", [("message_id", "Message")])])
    crud_server("onedrive", "Microsoft OneDrive and SharePoint files", ["files", "storage", "microsoft"], "camel", "standard", [
        ent("drive item", "drive items", "in OneDrive", "name, size, path, last modified by and web URL", [("parentPath", "Folder path"), ("name", "Name")]),
    ], [("create", "sharing link", "Create a view or edit link for an item.", [("type", "view or edit")]), ("download", "item content", "Download a file's content.", [("itemId", "Item")]),
        ("list", "recent items", "Files you opened recently.", []), ("list", "shared with me", "Files others shared with you.", [])])
    crud_server("instagram", "Instagram business account", ["social"], "snake", "standard", [
        ent("media post", "media posts", "on the account", "caption, media URL, likes and comments count", [("caption", "Caption"), ("image_url", "Image")], ops=("list", "get", "create")),
    ], [("get", "account insights", "Reach, impressions and follower growth.", [("period", "day, week, month")]),
        ("reply", "to comment", "Reply to a comment on a post.", [("comment_id", "Comment"), ("message", "Reply")]),
        ("get", "hashtag top media", "Top posts for a hashtag.", [("hashtag", "Hashtag")])])
    crud_server("tiktok", "TikTok creator tools", ["social", "video"], "snake", "terse", [], [
        ("upload", "video", "Post a video.", [("file", "Video"), ("caption", "Caption")]), ("get", "video stats", "Views, likes, shares.", [("video_id", "Video")]),
        ("search", "trending sounds", "Trending sounds.", [])])
    crud_server("vimeo", "Vimeo videos", ["video"], "snake", "terse", [
        ent("video", "videos", "in the account", "title, duration, privacy, plays and embed code", [("name", "Title"), ("privacy", "Privacy")], ops=("list", "get", "update", "delete", "search")),
    ])
    crud_server("podcast-index", "Podcast directory", ["media", "podcasts"], "snake", "terse", [], [
        ("search", "podcasts", "Find podcasts by title or topic.", [("q", "Query")]), ("get", "episodes", "Latest episodes of a podcast.", [("feed_id", "Podcast")]),
        ("get", "trending", "Trending podcasts.", [])])
    crud_server("goodreads", "Books and reading lists", ["books"], "snake", "standard", [], [
        ("search", "books", "Search books by title, author or ISBN.", [("query", "Query")]), ("get", "book", "Book details: author, pages, rating, description.", [("id", "Book")]),
        ("add", "to shelf", "Put a book on a shelf (want to read, reading, read).", [("shelf", "Shelf")]), ("list", "shelf", "Books on a shelf.", [("shelf", "Shelf")]),
        ("get", "author", "Author biography and works.", [("id", "Author")])])
    crud_server("genius", "Song lyrics and annotations", ["music"], "snake", "terse", [], [
        ("search", "songs", "Search songs.", [("q", "Query")]), ("get", "lyrics", "Lyrics of a song.", [("song_id", "Song")]), ("get", "artist", "Artist and top songs.", [("artist_id", "Artist")])])
    crud_server("tesla", "Tesla vehicle control", ["iot", "car"], "snake", "agent", [], [
        ("get", "vehicle data", "Battery level, range, location, climate and lock state of the car.", []),
        ("wake", "up", "Wake the car so it accepts commands.", []), ("start", "climate", "Pre-condition the cabin.", [("temperature", "Degrees")]),
        ("lock", "doors", "Lock the car.", []), ("unlock", "doors", "Unlock the car.", []),
        ("set", "charge limit", "Set the maximum charge percentage.", [("percent", "Percent")]), ("honk", "horn", "Honk the horn.", []),
        ("start", "charging", "Start charging.", []), ("stop", "charging", "Stop charging.", [])])
    crud_server("smartthings", "Samsung SmartThings devices", ["iot", "home"], "camel", "terse", [
        ent("device", "devices", "in the location", "label, capabilities, room and health", [("room", "Room")], ops=("list", "get", "delete")),
        ent("rule", "rules", "in the location", "name, triggers and actions", [("name", "Name")], ops=("list", "create", "delete")),
    ], [("execute", "device command", "Send a command to a device (switch on, set level).", [("capability", "Capability"), ("command", "Command")]),
        ("get", "device status", "Current attribute values of a device.", [("deviceId", "Device")])])
    crud_server("booking", "Booking.com hotel search", ["travel", "hotels"], "snake", "verbose", [], [
        ("search", "properties", "Searches hotels and apartments available in a destination for the given dates and guests, with price and review score.", [("destination", "City"), ("checkin", "Check-in"), ("checkout", "Check-out"), ("guests", "Guests")]),
        ("get", "property", "Returns the facilities, photos, policies and room types of a property.", [("hotel_id", "Property")]),
        ("get", "reviews", "Returns guest reviews of a property.", [("hotel_id", "Property")])])
    crud_server("skyscanner", "Flight price comparison", ["travel", "flights"], "camel", "terse", [], [
        ("search", "cheapest flights", "Cheapest flights to anywhere or a destination in a month.", [("origin", "From"), ("month", "Month")]),
        ("get", "price history", "How a route's price moved.", [("route", "Route")]), ("create", "price alert", "Alert me when a route gets cheaper.", [("route", "Route")])])
    crud_server("transit", "Public transport journeys and departures", ["travel", "transit"], "snake", "standard", [], [
        ("plan", "journey", "Plan a trip by bus, train and metro between two places with transfers.", [("from", "From"), ("to", "To"), ("departure_time", "Leave at")]),
        ("get", "departures", "Next departures from a stop or station.", [("stop_id", "Stop")]),
        ("find", "stops", "Stops and stations near a place.", [("location", "Place")]),
        ("get", "service alerts", "Disruptions and delays on lines.", [("line", "Line")])])
    crud_server("translate-google", "Google Cloud Translation", ["translation", "language"], "camel", "terse", [], [
        ("translate", "", "Translate text.", [("q", "Text"), ("target", "Language")]), ("detect", "language", "Detect the language of text.", [("q", "Text")])])
    crud_server("postman", "Postman collections and API testing", ["api", "testing"], "snake", "standard", [
        ent("collection", "collections", "in the workspace", "requests, folders and variables", [("name", "Name")], ops=("list", "get", "create", "update", "delete")),
        ent("environment", "environments", "in the workspace", "variables and their values", [("name", "Name")], ops=("list", "get", "create", "update")),
    ], [("run", "collection", "Run a collection's requests and tests and report results.", [("collection_id", "Collection")]),
        ("send", "request", "Send an HTTP request and return status, headers and body.", [("method", "GET, POST..."), ("url", "URL"), ("body", "Body")])])

    def extend(names, entities):
        for srv in [s for s in g["SERVERS"] if s["name"] in names]:
            extra = []
            for entity in entities:
                extra += entity_tools(srv, entity)
            existing = {t["name"] for t in srv["tools"]}
            srv["tools"] += [t for t in extra if t["name"] not in existing]

    extend(("slack", "teams", "discord"), [
        ent("reminder", "reminders", "for the user", "text, time and recurrence", [("text", "Reminder text"), ("time", "When")], ops=("list", "create", "delete")),
        ent("user group", "user groups", "in the workspace", "handle, name and members", [("handle", "Handle")], ops=("list", "create", "update")),
        ent("bookmark", "bookmarks", "in a channel", "title, link and emoji", [("link", "URL")], ops=("list", "create", "delete")),
    ])
    extend(("stripe", "paypal", "square"), [
        ent("price", "prices", "for a product", "amount, currency, interval and product", [("unit_amount", "Amount"), ("recurring", "Interval")], ops=("list", "create", "update")),
        ent("payment method", "payment methods", "of a customer", "type, brand, last four digits and expiry", [("customer", "Customer")], ops=("list", "create", "delete")),
    ])
    extend(("github", "gitlab"), [
        ent("discussion", "discussions", "in a repository", "title, category, answer and comments", [("category", "Category")], ops=("list", "get", "create")),
        ent("project board", "project boards", "of an organization", "columns, items and status fields", [("name", "Name")], ops=("list", "get", "create")),
    ])
    extend(("gmail", "outlook-mail"), [
        ent("contact", "contacts", "in the address book", "name, email addresses, phone numbers and company", [("email", "Email"), ("name", "Name")], ops=("list", "create", "update", "delete", "search")),
    ])
    aws = [s for s in g["SERVERS"] if s["name"] == "aws"][0]
    aws["tools"] += custom(aws, [
        ("rds", "describe db instances", "Describe RDS database instances: engine, class, status and endpoint.", []),
        ("rds", "create db snapshot", "Take a manual snapshot of an RDS instance.", [("db_instance", "Instance")]),
        ("ecs", "list services", "List ECS services in a cluster with running and desired task counts.", [("cluster", "Cluster")]),
        ("ecs", "update service", "Change the desired count or task definition of an ECS service.", [("desired_count", "Tasks")]),
        ("cloudformation", "describe stacks", "Status and outputs of CloudFormation stacks.", []),
        ("cloudformation", "deploy stack", "Create or update a stack from a template.", [("template", "Template")]),
        ("iam", "list roles", "List IAM roles.", []),
        ("iam", "simulate policy", "Test whether a principal is allowed an action on a resource.", [("action", "Action"), ("resource", "ARN")]),
        ("kms", "encrypt", "Encrypt data with a KMS key.", [("key_id", "Key"), ("plaintext", "Data")]),
        ("kms", "decrypt", "Decrypt KMS ciphertext.", [("ciphertext", "Data")]),
        ("ecr", "list images", "List container images in an ECR repository.", [("repository", "Repository")]),
        ("cloudtrail", "lookup events", "Who did what in the account: API activity history.", [("username", "User")]),
        ("budgets", "describe budgets", "Budgets and how much of each is spent.", []),
        ("ses", "send email", "Send an email through Amazon SES.", [("to", "To"), ("subject", "Subject"), ("body", "Body")]),
        ("bedrock", "invoke model", "Invoke a foundation model on Bedrock.", [("model_id", "Model"), ("prompt", "Prompt")]),
        ("athena", "start query", "Run SQL over data in S3 with Athena.", [("query", "SQL")]),
        ("glue", "start job run", "Start an ETL job.", [("job_name", "Job")]),
        ("stepfunctions", "start execution", "Start a state machine execution.", [("state_machine_arn", "State machine")]),
    ])
    crud_server("strava", "Strava workouts", ["fitness", "sports"], "snake", "standard", [
        ent("activity", "activities", "of the athlete", "type, distance, moving time, elevation gain, pace and heart rate", [("sport_type", "Run, Ride, Swim..."), ("start_date", "Start")], ops=("list", "get", "create", "update")),
    ], [("get", "athlete stats", "Totals of distance and time for recent, year-to-date and all-time activities.", []),
        ("list", "segments starred", "Segments the athlete starred.", []), ("get", "route", "A planned route with its GPX.", [("route_id", "Route")])])
    crud_server("fitbit", "Fitbit health data", ["fitness", "health"], "camel", "terse", [], [
        ("get", "sleep log", "Sleep stages and duration for a date.", [("date", "Date")]), ("get", "heart rate", "Resting and intraday heart rate.", [("date", "Date")]),
        ("get", "daily activity summary", "Steps, calories, active minutes.", [("date", "Date")]), ("log", "weight", "Record body weight.", [("weight", "kg")]),
        ("log", "food", "Record a food eaten.", [("food", "Food"), ("amount", "Amount")])])
