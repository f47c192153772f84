"""*Does jitter cost quality?* Ranking quality from relevance labels (:mod:`.ranking`, trec_eval's
definitions in SQL; :mod:`.reference` the pure-Python oracle), per run and per pair with bootstrap
intervals and paired tests (:mod:`.summary`), and the change in quality set against the change in
evidence (:mod:`.jitter`)."""

from ragaudit_core.quality.ranking import DEFAULT_CUTOFFS, label_coverage, metric_names, per_query_quality

__all__ = ["DEFAULT_CUTOFFS", "label_coverage", "metric_names", "per_query_quality"]
