"""RagAudit core: log contracts, the DuckDB store, and every metric.

The core never imports Streamlit; the dashboard (``app.py``, ``pages/``) only loads,
asks the core, and draws.

Importing the core sets ``OMP_WAIT_POLICY=PASSIVE`` unless the environment already names a
policy (it must be set before torch loads its OpenMP runtime): on a shared machine OpenMP threads
that spin at every barrier fight the other processes for the cores. Measured on 2 cores at load
average 7 (issue #24 item 5, docs/benchmarks.md): SmolLM2's forward pass over 300 tokens took
11.9–13.5 s with 2 spinning threads, 1.4–1.5 s with one thread, and 0.7–2.2 s with 2 passive ones.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"

__all__ = ["__version__"]
