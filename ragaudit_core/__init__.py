"""RagAudit core: log contracts, the DuckDB store, and every metric.

The core never imports Streamlit; the dashboard (``app.py``, ``pages/``) only loads,
asks the core, and draws.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
