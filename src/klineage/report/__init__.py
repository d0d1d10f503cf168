"""``klineage report RUN``: a static HTML page and its Markdown twin, with matplotlib plots.

A mine run shows its lineage as a chain naive → … → expert (each step with its diff, gate
numbers and the card it produced) and its skill cards; an optimize run its candidates and
best-so-far curve; a bench run its efficiency curves and summary; a demo run each child run as
a section of one page. See docs/report.md.
"""

from klineage.report._write import ReportPaths, write_report

__all__ = ["ReportPaths", "write_report"]
