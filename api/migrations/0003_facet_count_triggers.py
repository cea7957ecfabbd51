"""Whole-corpus facet counts kept by PostgreSQL triggers (``api.facet_counts``).

Every statement that writes papers, assignments or authorships appends, in its own
transaction, one ``api_facetcountdelta`` row per facet group it changed (statement-level
triggers over the transition tables: a bulk ``COPY`` or ``INSERT … SELECT`` of 5,000 papers
adds one aggregate, not 5,000 rows of work). Triggers rather than services, as for
``topics_assignment.submitted`` (topics 0005): every writer keeps the counts, the bulk import,
tagging's SQL, curation, merges, factories and hand-written SQL alike. Appending rather than
updating the counts in place means concurrent writers never wait on one hot row (cs.LG's, a
busy topic's) until the other commits.

The migration creates the triggers first (their ``SHARE ROW EXCLUSIVE`` locks wait for writers
in flight and hold new ones off until it commits), then counts what is already stored. SQLite
(the embedded demo) gets the tables but no triggers: facets there are always counted live.
"""

from django.db import migrations

_INSERTED = "SELECT {columns}, 1 AS sign FROM new_rows{where}"
_DELETED = "SELECT {columns}, -1 AS sign FROM old_rows{where}"

# ``changed``: the rows a statement wrote with sign +1 (new) and -1 (old); an updated row is
# both, so a change that moves nothing sums to 0 and writes no delta.
_PAPER_DELTAS = """
INSERT INTO api_facetcountdelta (facet, key, delta)
SELECT k.facet, k.key, sum(changed.sign) FROM ({changed}) changed
CROSS JOIN LATERAL (VALUES
    ('primary_category', changed.primary_category_id::bigint),
    ('submitted_day', (changed.submitted - DATE '1970-01-01')::bigint),
    ('withdrawn', changed.withdrawn::int::bigint)
) k (facet, key)
GROUP BY k.facet, k.key HAVING sum(changed.sign) <> 0
"""
_PAPER_COLUMNS = "primary_category_id, submitted, withdrawn"

_TOPIC_DELTAS = """
INSERT INTO api_facetcountdelta (facet, key, delta)
SELECT 'topic', changed.topic_id, sum(changed.sign) FROM ({changed}) changed
GROUP BY changed.topic_id HAVING sum(changed.sign) <> 0
"""
_TOPIC_COLUMNS = "topic_id"
_TOPIC_WHERE = " WHERE state = 'accepted'"

# An author counts distinct papers: one paper may name the same author twice (a curator's
# merge of two names on it). For each (paper, author) pair the statement touched, ``present``
# authorships exist after it and ``present - net`` before it; the pair adds 1 when it appears
# and takes 1 when it disappears.
_AUTHOR_DELTAS = """
WITH pairs AS (
    SELECT changed.paper_id, changed.author_id, sum(changed.sign) AS net
    FROM ({changed}) changed
    GROUP BY changed.paper_id, changed.author_id HAVING sum(changed.sign) <> 0
), present AS (
    -- One probe per paper (its few authorships), not one per (paper, author) pair.
    SELECT a.paper_id, a.author_id, count(*) AS n FROM papers_authorship a
    WHERE a.paper_id IN (SELECT DISTINCT paper_id FROM pairs)
    GROUP BY a.paper_id, a.author_id
), moved AS (
    SELECT pairs.author_id,
        (coalesce(present.n, 0) > 0)::int - (coalesce(present.n, 0) - pairs.net > 0)::int AS delta
    FROM pairs LEFT JOIN present USING (paper_id, author_id)
)
INSERT INTO api_facetcountdelta (facet, key, delta)
SELECT 'author', author_id, sum(delta) FROM moved GROUP BY author_id HAVING sum(delta) <> 0
"""
_AUTHOR_COLUMNS = "paper_id, author_id"

# (table, trigger function, delta SQL, columns, row condition, facets it feeds)
_TABLES = [
    (
        "papers_paper",
        "api_facet_paper_deltas",
        _PAPER_DELTAS,
        _PAPER_COLUMNS,
        "",
        ("primary_category", "submitted_day", "withdrawn"),
    ),
    (
        "topics_assignment",
        "api_facet_topic_deltas",
        _TOPIC_DELTAS,
        _TOPIC_COLUMNS,
        _TOPIC_WHERE,
        ("topic",),
    ),
    (
        "papers_authorship",
        "api_facet_author_deltas",
        _AUTHOR_DELTAS,
        _AUTHOR_COLUMNS,
        "",
        ("author",),
    ),
]

_TRUNCATED = """
CREATE OR REPLACE FUNCTION api_facet_truncated() RETURNS trigger AS $$
BEGIN
    DELETE FROM api_facetcount WHERE facet = ANY (TG_ARGV);
    DELETE FROM api_facetcountdelta WHERE facet = ANY (TG_ARGV);
    RETURN NULL;
END $$ LANGUAGE plpgsql;
"""

BACKFILL = """
DELETE FROM api_facetcountdelta;
DELETE FROM api_facetcount;
INSERT INTO api_facetcount (facet, key, count)
SELECT 'primary_category', primary_category_id, count(*) FROM papers_paper
    GROUP BY primary_category_id
UNION ALL
SELECT 'submitted_day', submitted - DATE '1970-01-01', count(*) FROM papers_paper
    GROUP BY submitted
UNION ALL
SELECT 'withdrawn', withdrawn::int, count(*) FROM papers_paper GROUP BY withdrawn
UNION ALL
SELECT 'topic', topic_id, count(*) FROM topics_assignment WHERE state = 'accepted'
    GROUP BY topic_id
UNION ALL
SELECT 'author', author_id, count(DISTINCT paper_id) FROM papers_authorship GROUP BY author_id;
"""


def _function_sql(function: str, deltas: str, columns: str, where: str) -> str:
    inserted = _INSERTED.format(columns=columns, where=where)
    deleted = _DELETED.format(columns=columns, where=where)
    return f"""
CREATE OR REPLACE FUNCTION {function}() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {deltas.format(changed=inserted)};
    ELSIF TG_OP = 'DELETE' THEN
        {deltas.format(changed=deleted)};
    ELSE
        {deltas.format(changed=f"{inserted} UNION ALL {deleted}")};
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
"""


def _trigger_sql(table: str, function: str, facets: tuple[str, ...]) -> str:
    arguments = ", ".join(f"'{facet}'" for facet in facets)
    return f"""
CREATE TRIGGER {function}_insert AFTER INSERT ON {table}
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {function}();
CREATE TRIGGER {function}_update AFTER UPDATE ON {table}
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {function}();
CREATE TRIGGER {function}_delete AFTER DELETE ON {table}
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {function}();
CREATE TRIGGER {function}_truncate AFTER TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION api_facet_truncated({arguments});
"""


def triggers_create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(_TRUNCATED)
    for table, function, deltas, columns, where, facets in _TABLES:
        schema_editor.execute(_function_sql(function, deltas, columns, where))
        schema_editor.execute(_trigger_sql(table, function, facets))
    schema_editor.execute(BACKFILL)


def triggers_drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, function, *_ in _TABLES:
        for event in ("insert", "update", "delete", "truncate"):
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {function}_{event} ON {table}")
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {function}()")
    schema_editor.execute("DROP FUNCTION IF EXISTS api_facet_truncated()")


class Migration(migrations.Migration):
    # The triggers need the papers and topics tables. The topics side is reached through api
    # 0002, so that a fresh plan walks the papers migrations first: on SQLite, papers 0008
    # rebuilds papers_paper, which fails once topics 0006's triggers name it.
    dependencies = [
        ("api", "0002_facet_counts"),
        ("papers", "0012_paper_dois_lower_index"),
    ]

    operations = [migrations.RunPython(triggers_create, triggers_drop)]
