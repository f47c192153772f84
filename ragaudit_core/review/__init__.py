"""The decision: the deploy gate's rules and verdict (:mod:`.gate`), the figures shared by
the dashboard and the PDF (:mod:`.charts`), and the PDF audit report (:mod:`.report`).
"""

from ragaudit_core.review.gate import DEFAULT_RULES, PRESETS, Rule, RuleResult, Verdict, collect, evaluate, review

__all__ = ["DEFAULT_RULES", "PRESETS", "Rule", "RuleResult", "Verdict", "collect", "evaluate", "review"]
