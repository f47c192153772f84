"""Results stored per data version (``logs.derived``): computed once, read back, invalidated by
new data, harmless on a read-only database, registered for the ingest."""

from __future__ import annotations

import pandas as pd

from ragaudit_core.logs import derived, store


def _counting():
    calls = []

    @derived.memoized("test.sum/1", derived.JSON)
    def total(con, xs: list[int], scale: int = 1) -> dict:
        calls.append(list(xs))
        return {"sum": sum(xs) * scale, "n": len(xs)}

    return total, calls


def test_computed_once_then_read_back_per_parameters(con):
    total, calls = _counting()
    assert total(con, [1, 2, 3]) == {"sum": 6, "n": 3}
    assert total(con, (1, 2, 3)) == {"sum": 6, "n": 3}  # a tuple is the same parameter as a list
    assert calls == [[1, 2, 3]]
    assert total(con, [1, 2, 3], scale=2) == {"sum": 12, "n": 3}  # other parameters: another entry
    assert len(calls) == 2
    rows = con.execute("SELECT kind, data_version FROM derived_results WHERE kind = 'test.sum/1'").fetchall()
    assert rows == [("test.sum/1", store.data_version(con))] * 2


def test_a_new_data_version_recomputes_and_drops_the_old_entries(con):
    total, calls = _counting()
    total(con, [4])
    store.bump_data_version(con)
    total(con, [4])
    assert calls == [[4], [4]]
    versions = {v for (v,) in con.execute("SELECT data_version FROM derived_results").fetchall()}
    assert versions == {store.data_version(con)}


def test_a_read_only_database_computes_without_storing(tmp_path):
    path = tmp_path / "ro.duckdb"
    store.connect(path).close()
    total, calls = _counting()
    ro = store.connect(path, read_only=True)
    try:
        assert total(ro, [5, 5]) == {"sum": 10, "n": 2}
        assert total(ro, [5, 5]) == {"sum": 10, "n": 2}
        assert len(calls) == 2  # nothing could be kept: computed each time, never an error
        assert ro.execute("SELECT count(*) FROM derived_results").fetchall() == [(0,)]
    finally:
        ro.close()


def test_frames_keep_their_dtypes():
    df = pd.DataFrame(
        {
            "run": pd.Series(["a", "b"], dtype="string"),
            "n": pd.Series([1, None], dtype="Int64"),
            "j": [0.25, float("nan")],
        }
    )
    back = derived.FRAME.decode(derived.FRAME.encode(df))
    pd.testing.assert_frame_equal(back, df)


def test_precompute_runs_what_was_registered(con):
    seen = []
    derived.at_ingest("test.a")(lambda c: seen.append("a"))
    derived.at_ingest("test.b")(lambda c: seen.append("b"))
    try:
        done = derived.precompute(con, only=lambda name: name.startswith("test."))
        assert done == ["test.a", "test.b"] and seen == ["a", "b"]
    finally:
        del derived._AT_INGEST["test.a"], derived._AT_INGEST["test.b"]


def test_a_damaged_stored_payload_is_computed_again_and_replaced(con):
    total, calls = _counting()
    total(con, [7])
    con.execute("UPDATE derived_results SET payload = '\\x00not json'::BLOB WHERE kind = 'test.sum/1'")
    assert total(con, [7]) == {"sum": 7, "n": 1}  # no traceback from a foreign or damaged database
    assert total(con, [7]) == {"sum": 7, "n": 1}
    assert calls == [[7], [7]]  # recomputed once, then the replaced payload is read back


def test_inside_a_transaction_results_are_computed_and_neither_read_nor_stored(con):
    """A load's last steps run in its transaction: the stored rows and the version a second cursor
    sees are the committed data's, so a result read there would be stale, and one stored there
    (under the old version) would outlive a rollback."""
    total, calls = _counting()
    total(con, [1])  # stored for the committed data
    con.execute("BEGIN TRANSACTION")
    assert total(con, [1]) == {"sum": 1, "n": 1}
    assert calls == [[1], [1]]  # computed on the transaction's data, not read back
    total(con, [7])
    con.execute("ROLLBACK")
    kept = con.execute("SELECT count(*) FROM derived_results WHERE kind = 'test.sum/1'").fetchall()
    assert kept == [(1,)]  # the result of [7] was never stored
    total(con, [1])
    assert calls == [[1], [1], [7]]  # outside a transaction: read back again
