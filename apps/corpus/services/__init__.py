"""Corpus workflows: write imported records into a study, render their bodies, run import jobs.

- :mod:`.upsert`: the idempotent upsert every importer ends in (:func:`upsert_records`);
- :mod:`.render`: the render pass from untrusted text to sanitized HTML (:func:`render_pending`);
- :mod:`.imports`: import jobs, from the browser (Celery) or a command (foreground);
- :mod:`.trackers`: the GitLab and Jira imports, and what every API import shares (screening, counts);
- :mod:`.links`: fix evidence (linked pull requests, commits, merge requests, accepted answers).
"""

from .imports import (
    IMPORT_JOB_FIELDS,
    UPLOAD_EXTENSIONS,
    create_import_job,
    import_in_foreground,
    job_params,
    resend_import,
    restart_import,
    run_import,
    save_upload,
    start_import,
    submit_import,
    summarize,
)
from .render import ensure_rendered, render_body, render_pending
from .render_ahead import is_bare
from .trackers import read_url_list, screening_rules
from .upsert import (
    BATCH_SIZE,
    ImportCounts,
    UnstorableRecord,
    add_error,
    content_hash,
    unstorable,
    upsert_records,
)

__all__ = [
    "BATCH_SIZE",
    "IMPORT_JOB_FIELDS",
    "UPLOAD_EXTENSIONS",
    "ImportCounts",
    "UnstorableRecord",
    "add_error",
    "content_hash",
    "create_import_job",
    "ensure_rendered",
    "import_in_foreground",
    "is_bare",
    "job_params",
    "read_url_list",
    "render_body",
    "render_pending",
    "resend_import",
    "restart_import",
    "run_import",
    "save_upload",
    "screening_rules",
    "start_import",
    "submit_import",
    "summarize",
    "unstorable",
    "upsert_records",
]
