"""The benchmark history: one SQLite file that `bench/run --record DB` appends to and
`bench/dashboard DB` reads (bench/README.md "History"). A user's CI keeps the file between runs
(a cache or an artifact); the schema's version is SQLite's `PRAGMA user_version`.

Schema 1:
  runs(id, commit_hash, dirty, date, quick, wall_seconds, fingerprint, cpus, cpu_model, kernel, jdks,
       document)      one row per run of bench/run; jdks is JSON, document the whole JSON document
  figures(run_id, name, median, min, max, runs, vals, unit, better, goal, description)
                      one row per figure of a run; vals is the JSON list of each repetition's value
Runs are only comparable between rows of one fingerprint (a hash of CPUs, CPU model, kernel, JDKs)."""
import json
import sqlite3

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  commit_hash TEXT,
  dirty INTEGER NOT NULL,
  date TEXT NOT NULL,
  quick INTEGER NOT NULL,
  wall_seconds REAL,
  fingerprint TEXT NOT NULL,
  cpus INTEGER,
  cpu_model TEXT,
  kernel TEXT,
  jdks TEXT,
  document TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_fingerprint ON runs (fingerprint, date);
CREATE TABLE IF NOT EXISTS figures (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  median REAL NOT NULL,
  min REAL NOT NULL,
  max REAL NOT NULL,
  runs INTEGER NOT NULL,
  vals TEXT NOT NULL,
  unit TEXT,
  better TEXT NOT NULL CHECK (better IN ('lower', 'higher')),
  goal REAL,
  description TEXT,
  PRIMARY KEY (run_id, name)
);
"""


class HistoryError(Exception):
    pass


def open_history(path, create):
    """The history at path (created with the schema when create and absent); HistoryError when the
    file is not one or is of a newer schema than this code reads."""
    try:
        connection = sqlite3.connect(path) if create else sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as error:
        raise HistoryError(f"{path}: not a benchmark history ({error})") from None
    if version > SCHEMA_VERSION:
        raise HistoryError(f"{path}: schema version {version}, newer than this bench/ reads ({SCHEMA_VERSION})")
    if version == 0:
        if tables - {"sqlite_sequence"}:
            raise HistoryError(f"{path}: an SQLite file but not a benchmark history (tables {sorted(tables)})")
        if not create:
            raise HistoryError(f"{path}: an empty file, no runs recorded")
        with connection:
            connection.executescript(SCHEMA)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    connection.execute("PRAGMA foreign_keys = ON")
    return connection


def check_document(document):
    """Raises HistoryError unless document has what the history keeps."""
    if not isinstance(document, dict) or document.get("schema") != 1:
        raise HistoryError("not a bench/run document of schema 1")
    if not isinstance(document.get("date"), str):
        raise HistoryError("the document has no date")
    machine = document.get("machine") or {}
    if not isinstance(machine.get("fingerprint"), str) or not machine["fingerprint"]:
        raise HistoryError("the document has no machine fingerprint")
    figures = document.get("figures")
    if not isinstance(figures, dict) or not figures:
        raise HistoryError("the document has no figures")
    for name, figure in figures.items():
        for key in ("median", "min", "max"):
            if not isinstance(figure.get(key), (int, float)):
                raise HistoryError(f"figure {name}: no number for {key}")
        if figure.get("better") not in ("lower", "higher"):
            raise HistoryError(f"figure {name}: better must be lower or higher")


def record(connection, document):
    """Appends one document (a run and its figures) in one transaction; returns the run's id."""
    check_document(document)
    machine = document["machine"]
    with connection:
        cursor = connection.execute(
            "INSERT INTO runs (commit_hash, dirty, date, quick, wall_seconds, fingerprint, cpus, cpu_model, kernel,"
            " jdks, document) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (document.get("commit"), int(bool(document.get("dirty"))), document["date"], int(bool(document.get("quick"))),
             document.get("wall_seconds"), machine["fingerprint"], machine.get("cpus"), machine.get("cpu_model"),
             machine.get("kernel"), json.dumps(machine.get("jdks", {}), sort_keys=True), json.dumps(document)))
        run_id = cursor.lastrowid
        for name, figure in sorted(document["figures"].items()):
            connection.execute(
                "INSERT INTO figures (run_id, name, median, min, max, runs, vals, unit, better, goal, description)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, name, figure["median"], figure["min"], figure["max"], figure.get("runs", 1),
                 json.dumps(figure.get("values", [])), figure.get("unit"), figure["better"], figure.get("goal"),
                 figure.get("description")))
    return run_id


def fingerprints(connection):
    """[(fingerprint, runs, latest date, cpu_model, kernel, jdks)], the latest run's first."""
    return connection.execute(
        "SELECT fingerprint, COUNT(*), MAX(date), cpu_model, kernel, jdks FROM runs GROUP BY fingerprint"
        " ORDER BY MAX(date) DESC, MAX(id) DESC").fetchall()


def runs_of(connection, fingerprint):
    """The runs of one machine fingerprint, oldest first: [dict]."""
    rows = connection.execute(
        "SELECT id, commit_hash, dirty, date, quick, wall_seconds FROM runs WHERE fingerprint = ? ORDER BY date, id",
        (fingerprint,)).fetchall()
    return [{"id": r[0], "commit": r[1], "dirty": bool(r[2]), "date": r[3], "quick": bool(r[4]), "wall_seconds": r[5]}
            for r in rows]


def figures_of(connection, fingerprint):
    """{figure name: [dict per run that has it, oldest first]} for the runs of one fingerprint."""
    rows = connection.execute(
        "SELECT f.name, r.id, r.commit_hash, r.dirty, r.date, f.median, f.min, f.max, f.runs, f.vals, f.unit,"
        " f.better, f.goal, f.description FROM figures f JOIN runs r ON r.id = f.run_id WHERE r.fingerprint = ?"
        " ORDER BY f.name, r.date, r.id", (fingerprint,)).fetchall()
    result = {}
    for (name, run_id, commit, dirty, date, median, low, high, runs, vals, unit, better, goal,
         description) in rows:
        result.setdefault(name, []).append({
            "run_id": run_id, "commit": commit, "dirty": bool(dirty), "date": date, "median": median, "min": low,
            "max": high, "runs": runs, "values": json.loads(vals), "unit": unit, "better": better, "goal": goal,
            "description": description})
    return result
