"""A qrels file's bad lines lose only themselves: grades past the table's integers, bytes that
are not UTF-8, a first line of another column count, grades that are not ASCII integers."""

from __future__ import annotations

import gzip

from ragaudit_core.logs.qrels import load_qrels, parse_qrels


def _good(n: int, start: int = 0) -> str:
    return "".join(f"q{i}\t0\td{i}\t1\n" for i in range(start, start + n))


def test_a_grade_past_the_tables_integers_rejects_its_line_alone(con, tmp_path):
    f = tmp_path / "big.qrels"
    f.write_text(_good(2) + "q9\t0\td2\t3000000000\nq8\t0\td3\t1e20\nq7\t0\td4\t-2147483648\n" + _good(2, 10))
    rep = load_qrels(con, [f])
    assert rep.n_labels == 5  # the two good lines either side, and the smallest 32-bit grade
    assert [r.split(": ", 1)[0] for r in rep.rejected] == ["big.qrels line 3", "big.qrels line 4"]
    assert "outside the integers a label holds" in rep.rejected[0]
    assert con.execute("SELECT min(relevance) FROM qrels").fetchall() == [(-2147483648,)]


def test_a_byte_that_is_not_utf8_loses_only_its_line_and_names_it(con, tmp_path):
    f = tmp_path / "latin.qrels"
    f.write_bytes(b"\xef\xbb\xbf" + _good(3).encode() + b"q\xe9\t0\td9\t1\r\n" + _good(3, 5).encode())
    rep = load_qrels(con, [f])
    assert rep.n_labels == 6
    assert rep.rejected == ["latin.qrels line 4: not UTF-8 text (byte 2 of the line); save the file as UTF-8"]
    assert con.execute("SELECT min(query_id) FROM qrels").fetchall() == [("q0",)]  # the BOM is not in the id


def test_a_gzipped_file_reads_line_by_line_too(tmp_path):
    f = tmp_path / "labels.qrels.gz"
    f.write_bytes(gzip.compress(_good(2).encode() + b"\xff\t0\td\t1\n"))
    labels, rejected = parse_qrels(f)
    assert len(labels) == 2 and rejected[0].startswith("labels.qrels.gz line 3: not UTF-8 text (byte 1")


def test_the_layout_is_the_one_most_lines_have_not_the_first_lines(tmp_path):
    f = tmp_path / "cut.qrels"
    f.write_text("q1 d1 1\n" + _good(20))  # a first line cut short (or a 3-column stray) over 20 TREC lines
    labels, rejected = parse_qrels(f)
    assert len(labels) == 20
    assert rejected == ["cut.qrels line 1: 3 columns; a qrels line has 4 (query-id, iteration, doc-id, relevance)"]
    bare = tmp_path / "bare.tsv"
    bare.write_text("q1\td1\t1\nq2\t0\td2\t1\nq3\td3\t2\n")  # 3 columns twice, 4 once
    labels, rejected = parse_qrels(bare)
    assert [(x.query_id, x.doc_id_raw, x.relevance) for x in labels] == [("q1", "d1", 1), ("q3", "d3", 2)]
    assert rejected == ["bare.tsv line 2: 4 columns; a qrels line has 3 (query-id, doc-id, relevance)"]


def test_a_grade_is_written_in_ascii_digits(tmp_path):
    f = tmp_path / "grades.tsv"
    f.write_text("q1\td1\t1_0\nq1\td2\t\u0661\nq1\td3\t2.0\nq1\td4\t1e0\nq1\td5\t+3\nq1\td6\t1.5\n")
    labels, rejected = parse_qrels(f)
    assert [(x.doc_id_raw, x.relevance) for x in labels] == [("d3", 2), ("d4", 1), ("d5", 3)]
    assert [r.split(": ", 1)[1] for r in rejected] == [
        "relevance '1_0' is not an integer",
        "relevance '\u0661' is not an integer",
        "relevance '1.5' is not an integer",
    ]


def test_lines_ended_by_a_carriage_return_alone_are_lines(tmp_path):
    f = tmp_path / "mac.tsv"
    f.write_bytes(b"q1\td1\t1\rq2\td2\t1\rq3\td3\t2\r")
    labels, rejected = parse_qrels(f)
    assert [(x.query_id, x.line_no) for x in labels] == [("q1", 1), ("q2", 2), ("q3", 3)] and rejected == []


def test_a_repeated_judgement_keeps_the_first_across_batches(con, tmp_path, monkeypatch):
    """The labels travel in batches (3 here); the first judgement of a (query, document) wins
    whichever batch repeats it, each later one named by its line, in file order; the counts are
    of the labels stored."""
    from ragaudit_core.logs import qrels

    monkeypatch.setattr(qrels, "_BATCH", 3)
    f = tmp_path / "dup.qrels"
    f.write_text("q1\t0\tD1\t2\nq1\t0\td2\t0\nq2\t0\td1\t1\nq1\t0\td1\t0\nq2\t0\td3\t1\nq2\t0\tD1\t3\nq3\t0\td4\t1\n")
    rep = load_qrels(con, [f])
    assert rep.warnings[:2] == [
        "dup.qrels line 4: query 'q1' judges document 'd1' again; the first judgement is kept",
        "dup.qrels line 6: query 'q2' judges document 'd1' again; the first judgement is kept",
    ]
    assert (rep.n_labels, rep.n_queries, rep.n_relevant) == (5, 3, 4)  # d2 of q1 judged 0
    stored = con.execute("SELECT query_id, doc_id, doc_id_raw, relevance FROM qrels ORDER BY ALL").fetchall()
    assert stored == [
        ("q1", "d1", "D1", 2),  # ids canonicalised as evidence ids are (lower-case by default)
        ("q1", "d2", "d2", 0),
        ("q2", "d1", "d1", 1),
        ("q2", "d3", "d3", 1),
        ("q3", "d4", "d4", 1),
    ]
    assert [x.line_no for x in qrels.parse_qrels(f)[0]] == [1, 2, 3, 4, 5, 6, 7]
