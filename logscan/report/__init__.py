"""`logscan report`: one self-contained HTML page of a scan (inline SVG and CSS, no network).

``render(data)`` takes the plain dicts ``logscan.report.data.load`` reads from the Delta
tables (in this process, no Spark) and returns the page: the hanging transactions and their abort plans first (what the
operator came for), then LSO lag per partition, per-partition timelines of transaction spans
with the open ones highlighted, and the corruptions found.
"""

from .html import render

__all__ = ["render"]
