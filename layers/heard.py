"""Warnings heard while a layer is read, kept per thread so each is reported with the layer that caused it.

GDAL's warnings reach Python as ``RuntimeWarning``s raised in the thread that called GDAL. ``warnings.catch_warnings``
cannot keep them apart: it swaps the process-wide filters and ``showwarning`` for the length of a block, so two
threads inside such blocks at once (two web runs reading layers) record each other's warnings, and the first to
leave restores the filters under the other.
Here one process-wide handler is installed while any thread listens, and files each warning under the thread that
raised it; a warning from a thread that is not listening goes where it would have gone.

GDAL keeps its error handlers per thread, and pyogrio installs the one that turns GDAL's warnings into Python
warnings only in the thread that imports it: on any other thread (a web request's, a batch worker's) GDAL printed
its warnings to the server's console and the user never saw them. ``quiet`` installs it on each thread that listens.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

_lock = threading.Lock()
_listening: dict[int, list[str]] = {}  # thread ident -> what that thread heard, once each
_installed: warnings.catch_warnings | None = None
_gdal_handler = threading.local()
_shown: set[tuple] = set()  # other threads' warnings passed on while anyone listened
_passed_on = warnings.showwarning


def _file(message, category, filename, lineno, file=None, line=None) -> None:
    heard = _listening.get(threading.get_ident())
    if heard is None:
        # Another thread's warning, shown once per place as Python's default filter would (the filter that
        # lets every warning through is only for the listeners, who keep each text once themselves).
        place = (str(message), category, filename, lineno)
        if place not in _shown:
            _shown.add(place)
            _passed_on(message, category, filename, lineno, file, line)
        return
    text = " ".join(str(message).split())
    if text not in heard:
        heard.append(text)


@contextmanager
def quiet() -> Iterator[list[str]]:
    """Collect the warnings this thread raises inside the block (once each) instead of printing them.

    numpy's floating-point warnings are silenced in the block (``np.errstate`` holds for this thread only).
    Blocks may nest in one thread: the inner block hears what is raised inside it, the outer the rest.
    """
    global _installed, _passed_on
    heard: list[str] = []
    me = threading.get_ident()
    _hear_gdal()
    with _lock:
        if _installed is None:
            _installed = warnings.catch_warnings()
            _installed.__enter__()
            _passed_on = warnings.showwarning
            warnings.simplefilter("always")
            warnings.showwarning = _file
        outer = _listening.get(me)
        _listening[me] = heard
    try:
        with np.errstate(all="ignore"):
            yield heard
    finally:
        with _lock:
            if outer is None:
                del _listening[me]
            else:
                _listening[me] = outer
            if not _listening:
                _installed.__exit__(None, None, None)
                _installed = None


def _hear_gdal() -> None:
    """Install pyogrio's GDAL error handler on this thread (once), so GDAL's warnings here become warnings."""
    if getattr(_gdal_handler, "installed", False):
        return
    from pyogrio._err import _register_error_handler  # pyogrio's own, as it calls it at import

    _register_error_handler()
    _gdal_handler.installed = True
