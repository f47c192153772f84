"""The dashboard's Streamlit settings (.streamlit/config.toml), read by Streamlit's own loader."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_exception_boxes_offer_no_external_help_links(monkeypatch):
    """An offline audit tool: Streamlit's exception box must not offer "Ask Google / Ask ChatGPT"
    (client.showErrorLinks, default "auto" shows them on localhost); the value Streamlit sends the
    browser is SHOW_ERROR_LINKS_FALSE, and the developer toolbar stays off."""
    from streamlit import config
    from streamlit.proto.NewSession_pb2 import Config
    from streamlit.runtime.app_session import _get_show_error_links

    monkeypatch.chdir(ROOT)
    try:
        config.get_config_options(force_reparse=True)
        assert config.get_option("client.showErrorLinks") is False
        assert _get_show_error_links() == Config.ShowErrorLinks.SHOW_ERROR_LINKS_FALSE
        assert config.get_option("client.toolbarMode") == "viewer"
        assert config.get_option("browser.gatherUsageStats") is False
    finally:
        monkeypatch.undo()
        config.get_config_options(force_reparse=True)
