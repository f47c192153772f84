"""Which files an ingest reads, and what happens to a path or file that cannot be read: each is
refused in one sentence and the others of the call load (exit 2, as for any refused file); folders
are searched without their hidden files and folders; a subfolder that cannot be read is named in a
warning. Trees are built here; permissions are simulated in-process and, where they can be made to
apply (tests.helpers.unprivileged), checked for real through the command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragaudit_core.cli import app
from ragaudit_core.logs import ingest as ing
from ragaudit_core.logs.ingest import IngestError, ingest_paths
from ragaudit_core.logs.listing import list_paths
from ragaudit_core.logs.qrels import qrels_files
from tests.helpers import unprivileged, write_jsonl


def _rec(run: str, q: str = "q1") -> dict:
    return {"run_id": run, "query_id": q, "evidence": ["d1"]}


def _runs(con) -> list[str]:
    return [r for (r,) in con.execute("SELECT DISTINCT run_id FROM records ORDER BY 1").fetchall()]


def _tree(root: Path) -> Path:
    """Logs at several depths, beside a .git folder, an editor's hidden file and a checkpoint folder
    holding JSON that is not a log."""
    write_jsonl(root / "a" / "b" / "deep.jsonl", [_rec("deep")])
    write_jsonl(root / "top.json", [_rec("top")])
    write_jsonl(root / ".git" / "packed.json", [{"x": 1}])
    write_jsonl(root / "a" / ".ipynb_checkpoints" / "top-checkpoint.jsonl", [_rec("stale")])
    write_jsonl(root / "a" / ".top.jsonl.swp.json", [{"swap": True}])
    (root / "a" / "b" / "loop").symlink_to("..")  # a link back up the tree is not followed
    return root


def test_folders_are_searched_without_hidden_files_and_folders(con, tmp_path):
    root = _tree(tmp_path / "logs")
    assert list_paths([root]).files == [root / "a" / "b" / "deep.jsonl", root / "top.json"]
    rep = ingest_paths(con, [root])
    assert _runs(con) == ["deep", "top"] and rep.rejected == [] and rep.failed_files == []


def test_a_hidden_file_named_on_its_own_is_read(con, tmp_path):
    hidden = write_jsonl(tmp_path / ".logs" / ".run.jsonl", [_rec("hidden")])
    assert list_paths([hidden]).files == [hidden]
    with pytest.raises(IngestError) as e:  # a hidden folder named on its own is searched, not its hidden files
        ingest_paths(con, [tmp_path / ".logs"])
    assert str(e.value) == (
        f"{tmp_path / '.logs'}: folder holds no .jsonl, .jsonl.gz, .ndjson or .json files (hidden files and "
        "folders, named with a leading '.', are not searched)"
    )
    ingest_paths(con, [hidden])
    assert _runs(con) == ["hidden"]


def test_a_subfolder_that_cannot_be_read_is_skipped_with_a_warning(con, tmp_path, monkeypatch):
    root = tmp_path / "logs"
    write_jsonl(root / "ok.jsonl", [_rec("ok")])
    write_jsonl(root / "locked" / "hidden_from_us.jsonl", [_rec("locked")])
    real = os.scandir

    def scandir(path="."):
        if Path(path) == root / "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    rep = ingest_paths(con, [root])
    assert _runs(con) == ["ok"] and rep.failed_files == []
    assert [str(w) for w in rep.warnings if w.code == "unreadable-folder"] == [
        f"{root / 'locked'}: this folder cannot be read (permission denied) and was skipped: nothing in it was loaded"
    ]


def test_a_path_that_cannot_be_used_is_refused_and_the_others_load(con, tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", [_rec("good")])
    empty = tmp_path / "empty"
    empty.mkdir()
    rep = ingest_paths(con, [tmp_path / "nope.jsonl", good, empty])
    assert _runs(con) == ["good"] and rep.n_records == 1
    assert [(f.path, f.status) for f in rep.failed_files] == [
        (str(tmp_path / "nope.jsonl"), "unreadable"),
        (str(empty), "unreadable"),
    ]
    assert [str(i) for i in rep.rejected] == [
        f"{tmp_path / 'nope.jsonl'}: no such file or folder",
        f"{empty}: folder holds no .jsonl, .jsonl.gz, .ndjson or .json files",
    ]
    assert rep.summary() == (
        "loaded 1 record (1 evidence entry) from 1 file into 1 run; rejected 0 lines; refused 2 files as a whole"
    )
    with pytest.raises(IngestError, match=r"^.*nope.jsonl: no such file or folder; .*empty: folder holds no"):
        ingest_paths(con, [tmp_path / "nope.jsonl", empty])  # nothing left to read: the call fails as a whole


def test_a_file_gone_between_the_listing_and_its_reading_is_refused_alone(con, tmp_path, monkeypatch):
    folder = tmp_path / "logs"
    gone = write_jsonl(folder / "a.jsonl", [_rec("a")])
    write_jsonl(folder / "b.jsonl", [_rec("b")])
    listing = ing.list_paths

    def then_deleted(paths):
        out = listing(paths)
        gone.unlink()  # as another program does while the call starts
        return out

    monkeypatch.setattr(ing, "list_paths", then_deleted)
    rep = ingest_paths(con, [folder])
    assert _runs(con) == ["b"]
    assert [str(i) for i in rep.rejected] == [
        f"{gone}: the file is gone (deleted or moved after the paths were listed); nothing of it was loaded"
    ]
    assert rep.failure(rep.failed_files[0]) == (
        "a.jsonl was not loaded: the file is gone (deleted or moved after the paths were listed); nothing of it "
        "was loaded"
    )
    assert con.execute("SELECT path FROM files").fetchall() == [(str(folder / "b.jsonl"),)]


def test_a_file_that_cannot_be_opened_is_refused_alone(con, tmp_path, monkeypatch):
    locked = write_jsonl(tmp_path / "locked.jsonl", [_rec("locked")])
    good = write_jsonl(tmp_path / "good.jsonl", [_rec("good")])
    sha = ing.file_sha256

    def hashed(path):
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return sha(path)

    monkeypatch.setattr(ing, "file_sha256", hashed)
    rep = ingest_paths(con, [locked, good])
    assert _runs(con) == ["good"]
    assert [str(i) for i in rep.rejected] == [
        f"{locked}: permission denied (this user may not read the file); nothing of it was loaded"
    ]
    assert [(f.path, f.status, f.n_rejected) for f in rep.files] == [
        (str(locked), "unreadable", 1),
        (str(good), "loaded", 0),
    ]


def test_qrels_folders_are_found_without_hidden_folders_and_past_unreadable_ones(tmp_path, monkeypatch):
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    (root / "qrels" / "test.tsv").write_text("q1\td1\t1\n")
    (root / "qrels" / ".test.tsv").write_text("q1\td9\t1\n")
    (root / ".cache" / "qrels").mkdir(parents=True)
    (root / ".cache" / "qrels" / "old.tsv").write_text("q1\td8\t1\n")
    (root / "sub" / "qrels").mkdir(parents=True)
    assert qrels_files(root) == [root / "qrels" / "test.tsv"]
    real = Path.iterdir

    def iterdir(self):
        if self == root / "sub" / "qrels":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    assert qrels_files(root) == [root / "qrels" / "test.tsv"]


def test_the_cli_names_what_was_not_loaded_and_says_the_others_were(tmp_path):
    """A configuration beside the logs (a JSON object and nothing else) was "config.json read as native:
    nothing loaded (every line rejected)", a rejected "line 1" and "its only line was rejected": it is no
    log, and one sentence says what it is and that it was refused."""
    logs = tmp_path / "logs"
    write_jsonl(logs / "a.jsonl", [_rec("a")])
    write_jsonl(logs / "b.jsonl", [_rec("b")])
    (logs / "config.json").write_text('{"model": "x", "top_k": 5}\n', encoding="utf-8")
    db = tmp_path / "audit.duckdb"
    r = CliRunner().invoke(app, ["ingest", str(logs), "--db", str(db)])
    assert r.exit_code == 2
    assert r.stderr.splitlines()[-3:] == [
        f"database: {db}",
        "error: config.json was not loaded: a JSON object with no records in it (keys model, top_k): not a log; "
        "nothing of it was loaded",
        "error: 1 file of 3 not loaded (above); the 2 other files are in the database",
    ]
    assert "config.json read as" not in r.stderr and "rejected:" not in r.stderr  # said once, as what it is


@pytest.mark.parametrize(
    ("content", "what"),
    [
        ('{"k": 1}', "a JSON object with no records in it (key k)"),
        ("{}", "an empty JSON object"),
        ('{"model": "x",\n "top_k": 5}\n', "a JSON object with no records in it (keys model, top_k)"),
    ],
)
def test_a_json_object_holding_no_record_is_refused_as_no_log(con, tmp_path, content, what):
    (tmp_path / "config.json").write_text(content, encoding="utf-8")
    write_jsonl(tmp_path / "a.jsonl", [_rec("a")])
    rep = ingest_paths(con, [tmp_path])
    (f,) = rep.failed_files
    assert f.path.endswith("config.json") and f.status == "unreadable" and not f.formats
    assert rep.failure(f) == f"config.json was not loaded: {what}: not a log; nothing of it was loaded"
    assert rep.runs == ["a"]


@pytest.mark.parametrize(
    ("content", "why"),
    [  # a record with a flaw, or a log line among others: rejected with its reason, as before
        ('{"run_id": "r"}', "missing query id"),
        ('{"id": "x", "cited": []}', "the only id key is 'id'"),
        ('{"k": 1}\n{"k": 2}\n', "not an evidence record"),
    ],
)
def test_a_record_with_a_flaw_is_still_a_rejected_line(con, tmp_path, content, why):
    (tmp_path / "one.json").write_text(content, encoding="utf-8")
    rep = ingest_paths(con, [tmp_path / "one.json", write_jsonl(tmp_path / "a.jsonl", [_rec("a")])])
    assert rep.failed_files[0].status == "rejected"
    assert all(why in i.message for i in rep.rejected)


def test_unreadable_files_and_folders_for_real(tmp_path):
    """Through the command line, with file permissions applying: an unreadable file in a folder, an
    unreadable subfolder, an unreadable file named beside a good one (typer does not stop the call)."""
    prefix = unprivileged()
    if prefix is None:
        pytest.skip("file permissions cannot be made to apply here")
    logs = tmp_path / "logs"
    write_jsonl(logs / "good.jsonl", [_rec("good")])
    locked = write_jsonl(logs / "locked.jsonl", [_rec("locked")])
    write_jsonl(logs / "closed" / "inside.jsonl", [_rec("inside")])
    locked.chmod(0)
    (logs / "closed").chmod(0)
    other = write_jsonl(tmp_path / "other.jsonl", [_rec("other")])
    try:

        def cli(*args: object) -> subprocess.CompletedProcess:
            cmd = [*prefix, sys.executable, "-m", "ragaudit_core.cli", "ingest", *map(str, args)]
            return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

        why = "permission denied (this user may not read the file); nothing of it was loaded"
        r = cli(logs, "--db", tmp_path / "a.duckdb")
        assert r.returncode == 2, r.stderr
        lines = r.stderr.splitlines()
        assert lines[0] == f"ingest: {logs / 'good.jsonl'}: 1 line read"
        assert sum(why in ln for ln in lines) == 1  # said once, in the error that ends the output
        assert (
            f"warning: {logs / 'closed'}: this folder cannot be read (permission denied) and was skipped: nothing "
            "in it was loaded"
        ) in lines
        assert lines[-2:] == [
            f"error: locked.jsonl was not loaded: {why}",
            "error: 1 file of 2 not loaded (above); the 1 other file is in the database",
        ]
        r = cli(locked, other, "--db", tmp_path / "b.duckdb")
        assert r.returncode == 2, r.stderr
        assert r.stderr.splitlines()[-2:] == [
            f"error: locked.jsonl was not loaded: {why}",
            "error: 1 file of 2 not loaded (above); the 1 other file is in the database",
        ]
        assert "loaded 1 record (1 evidence entry) from 1 file into 1 run" in r.stderr
    finally:
        (logs / "closed").chmod(0o755)
        locked.chmod(0o644)


def test_csv_and_parquet_files_a_folder_search_leaves_unread_are_named(con, tmp_path):
    """Folders are searched for JSON and JSON Lines only: a Ragas CSV beside the JSON Lines of a
    folder was left out without a word, and a folder of CSV exports was refused as holding "no
    .jsonl … files". Each now says which were not read and how to read them."""
    mixed = tmp_path / "mixed"
    write_jsonl(mixed / "run.jsonl", [_rec("run")])
    (mixed / "ragas.csv").write_text("user_input,retrieved_contexts,response\nq,\"['a']\",x\n", encoding="utf-8")
    tables = tmp_path / "tables"
    tables.mkdir()
    for name in ("a.csv", "b.parquet.gz", ".c.csv"):
        (tables / name).write_bytes(b"x")
    rep = ingest_paths(con, [mixed, tables])
    assert _runs(con) == ["run"]
    assert [str(w) for w in rep.warnings if w.code == "unsearched-tables"] == [
        f"{mixed}: 1 CSV or Parquet file in it was not read (folders are searched for JSON and JSON Lines only): "
        f"name it on its own, as {mixed / 'ragas.csv'}"
    ]
    assert [str(i) for i in rep.rejected] == [
        f"{tables}: folder holds no .jsonl, .jsonl.gz, .ndjson or .json files (hidden files and folders, named with "
        "a leading '.', are not searched); 2 CSV or Parquet files in it were not read (folders are searched for JSON "
        f"and JSON Lines only): name them on their own, as {tables / 'a.csv'}"
    ]


def test_a_qrels_folders_label_files_are_not_named_as_unread_tables(con, tmp_path):
    """BEIR's layout puts the relevance labels in ``qrels/test.tsv`` beside the logs, and a folder's
    ``qrels/`` is read with it (as labels). Opening the bundled sample logs said "1 CSV or Parquet file
    in it was not read … name it on its own, as …/qrels/test.tsv" right under "loaded 339 relevance
    labels … from 1 file": a warning about the very file that was loaded. A ``.tsv`` elsewhere in the
    folder is still named."""
    root = tmp_path / "logs"
    write_jsonl(root / "run.jsonl", [_rec("run")])
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    assert qrels_files(root) == [root / "qrels" / "test.tsv"]
    rep = ingest_paths(con, [root])
    assert [str(w) for w in rep.warnings if w.code == "unsearched-tables"] == []
    (root / "other.tsv").write_text("user_input\tretrieved_contexts\nq\t['a']\n", encoding="utf-8")
    assert list_paths([root]).warnings[0].message.endswith(f"as {root / 'other.tsv'}")


def test_a_link_loop_a_dangling_link_and_a_file_given_twice_are_named_as_such(con, tmp_path):
    """A loop of links was "no such file or folder" (it is there: `ls` shows it), a link to a
    missing file too; a file given twice (``a.jsonl ./a.jsonl``: a mistyped second run?) was read
    once without a word, where the contract skips repeated content "with a warning"."""
    good = write_jsonl(tmp_path / "good.jsonl", [_rec("good")])
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    (tmp_path / "dangling.jsonl").symlink_to(tmp_path / "gone.jsonl")
    again = tmp_path / "." / "good.jsonl"
    rep = ingest_paths(con, [tmp_path / "loop1", tmp_path / "dangling.jsonl", good, again])
    assert _runs(con) == ["good"] and rep.n_records == 1
    assert [str(i) for i in rep.rejected] == [
        f"{tmp_path / 'loop1'}: a loop of symbolic links, which never reaches a file",
        f"{tmp_path / 'dangling.jsonl'}: a symbolic link to {tmp_path / 'gone.jsonl'}, which does not exist",
    ]
    assert f"{again}: given twice (also as {good}); read once" in [str(w) for w in rep.warnings]


def test_archives_a_folder_search_leaves_unread_are_named_once(con, tmp_path):
    """A folder search skipped ``logs.zip``, ``run.jsonl.bz2`` or ``export.tar.gz`` without a word (only
    JSON and JSON Lines are searched for, and RagAudit does not read archives), so a folder of zipped
    exports loaded less than it held, silently. One warning now says how many, names the first three
    and what to do; a folder holding nothing else says it in its refusal."""
    mixed = tmp_path / "mixed"
    write_jsonl(mixed / "run.jsonl", [_rec("run")])
    for name in ("a.zip", "b.jsonl.bz2", "sub/c.tar.gz", "d.7z", "e.JSONL.ZST", ".hidden.zip", "notes.txt"):
        (mixed / name).parent.mkdir(parents=True, exist_ok=True)
        (mixed / name).write_bytes(b"x")
    only = tmp_path / "only"
    only.mkdir()
    (only / "logs.zip").write_bytes(b"PK\x03\x04")
    rep = ingest_paths(con, [mixed, only])
    assert _runs(con) == ["run"]
    assert [str(w) for w in rep.warnings if w.code == "unsearched-archives"] == [
        f"{mixed}: 5 archives or compressed files in it were not read (RagAudit reads logs plain or "
        "gzip-compressed, not archives): a.zip, b.jsonl.bz2, d.7z and 2 more; unpack them and give the "
        "folder again"
    ]
    assert [str(i) for i in rep.rejected] == [
        f"{only}: folder holds no .jsonl, .jsonl.gz, .ndjson or .json files; 1 archive or compressed file in it was "
        "not read (RagAudit reads logs plain or gzip-compressed, not archives): logs.zip; unpack it and give the "
        "folder again"
    ]


def test_archive_warning_reaches_the_ingest_output(tmp_path):
    logs = tmp_path / "logs"
    write_jsonl(logs / "run.jsonl", [_rec("run")])
    (logs / "old.zip").write_bytes(b"PK\x03\x04")
    r = CliRunner().invoke(app, ["ingest", str(logs), "--db", str(tmp_path / "a.duckdb")])
    assert r.exit_code == 0, r.stderr
    assert f"warning: {logs}: 1 archive or compressed file in it was not read" in r.stderr
    assert r.stderr.count("old.zip") == 1
