"""A paper's ``submitted`` date copied onto rows that point at the paper, kept by database
triggers, for the migrations that add such a copy (papers 0018: cross-lists, 0019: paper
affiliations; papers 0015 spells the same triggers out for authorships).

Why triggers rather than services, and why this order (triggers before a batched backfill, so
rows written meanwhile are right; each batch its own transaction, the migration non-atomic),
0015's docstring says. The copy is set on insert and when a row moves to another paper, and
rewritten when a paper's date changes. The paper must be written before the rows pointing at
it (foreign keys are deferred): a row inserted first would keep no date.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SubmittedCopy:
    """The triggers and backfill of one table's ``submitted`` column.

    ``table``: the table holding ``paper_id`` and ``submitted`` (``papers_paperaffiliation``);
    ``row``: the prefix of its row trigger and function (``papers_paper_affiliation``, giving
    ``papers_paper_affiliation_submitted`` and ``papers_paper_affiliation_set_submitted``);
    ``rows``: the suffix of the paper's trigger and function (``affiliations``, giving
    ``papers_paper_submitted_affiliations``); ``sqlite``: whether SQLite gets the triggers and
    backfill too (else they do nothing there); ``batch``: ids per backfill statement. The
    methods are ``RunPython`` functions; on a database other than PostgreSQL or SQLite they
    raise ``RuntimeError``."""

    table: str
    row: str
    rows: str
    sqlite: bool = True
    batch: int = 50_000

    def postgres_triggers(self) -> str:
        """The functions and triggers, as one simple-query string (they appear together)."""
        return f"""
CREATE OR REPLACE FUNCTION {self.row}_set_submitted() RETURNS trigger AS $$
BEGIN
    SELECT submitted INTO NEW.submitted FROM papers_paper WHERE id = NEW.paper_id;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS {self.row}_submitted ON {self.table};
CREATE TRIGGER {self.row}_submitted
    BEFORE INSERT OR UPDATE OF paper_id ON {self.table}
    FOR EACH ROW EXECUTE FUNCTION {self.row}_set_submitted();
CREATE OR REPLACE FUNCTION papers_paper_submitted_{self.rows}() RETURNS trigger AS $$
BEGIN
    UPDATE {self.table} SET submitted = NEW.submitted
    WHERE paper_id = NEW.id AND submitted IS DISTINCT FROM NEW.submitted;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS papers_paper_submitted_{self.rows} ON papers_paper;
CREATE TRIGGER papers_paper_submitted_{self.rows}
    AFTER UPDATE OF submitted ON papers_paper
    FOR EACH ROW WHEN (OLD.submitted IS DISTINCT FROM NEW.submitted)
    EXECUTE FUNCTION papers_paper_submitted_{self.rows}();
"""

    def postgres_triggers_drop(self) -> str:
        return f"""
DROP TRIGGER IF EXISTS papers_paper_submitted_{self.rows} ON papers_paper;
DROP FUNCTION IF EXISTS papers_paper_submitted_{self.rows}();
DROP TRIGGER IF EXISTS {self.row}_submitted ON {self.table};
DROP FUNCTION IF EXISTS {self.row}_set_submitted();
"""

    def sqlite_triggers(self) -> list[str]:
        set_submitted = (
            f"UPDATE {self.table} SET submitted ="
            " (SELECT submitted FROM papers_paper WHERE id = NEW.paper_id) WHERE id = NEW.id"
        )
        return [
            f"CREATE TRIGGER IF NOT EXISTS {self.row}_submitted_insert AFTER INSERT ON"
            f" {self.table} BEGIN {set_submitted}; END",
            f"CREATE TRIGGER IF NOT EXISTS {self.row}_submitted_move AFTER UPDATE OF paper_id"
            f" ON {self.table} BEGIN {set_submitted}; END",
            f"CREATE TRIGGER IF NOT EXISTS papers_paper_submitted_{self.rows} AFTER UPDATE OF"
            f" submitted ON papers_paper BEGIN UPDATE {self.table} SET submitted = NEW.submitted"
            " WHERE paper_id = NEW.id; END",
        ]

    def sqlite_triggers_drop(self) -> list[str]:
        return [
            f"DROP TRIGGER IF EXISTS {self.row}_submitted_insert",
            f"DROP TRIGGER IF EXISTS {self.row}_submitted_move",
            f"DROP TRIGGER IF EXISTS papers_paper_submitted_{self.rows}",
        ]

    def _vendor(self, schema_editor) -> str | None:
        """``postgresql``, ``sqlite``, or None where this copy does nothing (SQLite when
        ``sqlite`` is false)."""
        vendor = schema_editor.connection.vendor
        if vendor == "postgresql" or (vendor == "sqlite" and self.sqlite):
            return vendor
        if vendor == "sqlite":
            return None
        raise RuntimeError(f"no submitted triggers for {vendor} ({self.table})")

    def triggers_create(self, apps, schema_editor) -> None:
        vendor = self._vendor(schema_editor)
        if vendor == "postgresql":
            schema_editor.execute(self.postgres_triggers())
        elif vendor == "sqlite":
            for statement in self.sqlite_triggers():
                schema_editor.execute(statement)

    def triggers_drop(self, apps, schema_editor) -> None:
        vendor = self._vendor(schema_editor)
        if vendor == "postgresql":
            schema_editor.execute(self.postgres_triggers_drop())
        elif vendor == "sqlite":
            for statement in self.sqlite_triggers_drop():
                schema_editor.execute(statement)

    def backfill(self, apps, schema_editor) -> None:
        """Every row's ``submitted`` from its paper; on PostgreSQL :attr:`batch` ids per
        statement, each committed on its own (the migration must not be atomic), then
        ``ANALYZE``; on SQLite one statement (a demo's table is small)."""
        vendor = self._vendor(schema_editor)
        if vendor == "sqlite":
            schema_editor.execute(
                f"UPDATE {self.table} SET submitted ="
                f" (SELECT submitted FROM papers_paper WHERE id = {self.table}.paper_id)"
                " WHERE submitted IS NULL"
            )
        if vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(f"SELECT min(id), max(id) FROM {self.table}")
            low, high = cursor.fetchone()
            if low is None:
                return
            for start in range(low, high + 1, self.batch):
                cursor.execute(
                    f"UPDATE {self.table} x SET submitted = p.submitted FROM papers_paper p"
                    " WHERE p.id = x.paper_id AND x.id >= %s AND x.id < %s"
                    " AND x.submitted IS NULL",
                    [start, start + self.batch],
                )
            cursor.execute(f"ANALYZE {self.table}")
