"""The chart-export child process of :mod:`.export`: ``python -m
ragaudit_core.review.report.export_worker FOLDER``.

Reads ``FOLDER/figures.json`` (width, scale, figures with their heights), starts one Kaleido
(headless Chromium) and writes ``FOLDER/<i>.png`` per figure, or ``FOLDER/<i>.err`` with the
reason when that figure alone fails. When Chromium cannot start it prints one line,
``Type: message``, on stderr and exits 3.
"""

from __future__ import annotations

import asyncio
import json
import sys
import warnings
from pathlib import Path

__all__ = ["main"]


def _one_line(e: BaseException) -> str:
    msg = e.args[0] if len(e.args) > 1 and isinstance(e.args[0], str) else str(e)
    return " ".join(f"{type(e).__name__}: {msg}".split())[:300]


async def _render(folder: Path) -> None:
    import kaleido

    spec = json.loads((folder / "figures.json").read_text())
    async with kaleido.Kaleido(n=1, timeout=60) as k:
        for i, f in enumerate(spec["figures"]):
            opts = {"format": "png", "width": spec["width"], "height": f["height"], "scale": spec["scale"]}
            try:
                png = await k.calc_fig(f["fig"], opts=opts)
            except Exception as e:  # noqa: BLE001 - one figure failing leaves the others
                (folder / f"{i}.err").write_text(_one_line(e))
            else:
                (folder / f"{i}.png").write_bytes(png)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    warnings.simplefilter("ignore")
    try:
        asyncio.run(_render(Path(args[0])))
    except Exception as e:  # noqa: BLE001 - Chromium did not start: say why on one line
        print(_one_line(e), file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
