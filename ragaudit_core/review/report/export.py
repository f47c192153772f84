"""The dashboard's Plotly figures as PNG for the PDF (Kaleido driving headless Chromium)."""

from __future__ import annotations

import threading

import plotly.graph_objects as go

__all__ = ["export_figures"]


def export_figures(
    figs: dict[str, go.Figure], *, width: int = 780, scale: float = 2.0
) -> tuple[dict[str, bytes], str | None]:
    """PNG bytes of each figure (Kaleido, one headless Chromium for all), and an error
    message when export is impossible (no Chromium): the report then says so in place
    of each chart."""
    if not figs:
        return {}, None
    with _EXPORT_LOCK:  # one Kaleido server per process: concurrent reports take turns
        return _export(figs, width, scale)


_EXPORT_LOCK = threading.Lock()


def _export(figs: dict[str, go.Figure], width: int, scale: float) -> tuple[dict[str, bytes], str | None]:
    import kaleido
    import plotly.io as pio

    out: dict[str, bytes] = {}
    try:
        kaleido.start_sync_server(headless=True, silence_warnings=True)
    except Exception as e:  # noqa: BLE001 - any failure to start Chromium is reported, not raised
        return {}, f"charts could not be exported ({type(e).__name__}: {e}); install Chromium for Kaleido"
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name, fig in figs.items():
                height = int(fig.layout.height or 450)
                out[name] = pio.to_image(fig, format="png", width=width, height=height, scale=scale)
    except Exception as e:  # noqa: BLE001
        return out, f"charts could not be exported ({type(e).__name__}: {e}); install Chromium for Kaleido"
    finally:
        try:
            kaleido.stop_sync_server(silence_warnings=True)
        except Exception:  # noqa: BLE001
            pass
    return out, None
