"""The framework runtime (pkg/scheduler/framework/runtime): a profile's plugins run by
extension point (framework.py), over a node table with remembered outcomes
(filter.py), groups of nodes the plugins cannot tell apart (grouping.py), score
classes (score.py) and interned verdict rows (verdicts.py)."""
